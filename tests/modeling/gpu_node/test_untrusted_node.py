"""A GPU node is untrusted: it acts only on the run, attempt and lease it holds, and
nothing it uploads is ever unpickled, by any reader of a run's checkpoint."""

import hashlib
import io
import json
from io import StringIO

import pytest
import torch
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from adversarial import targets
from adversarial.models import AdversarialTask, AdversarialTry, Round, RoundStatus, TaskState, Verification
from adversarial.tasks import advance_rounds
from corpus.models import Split
from modeling.models import RunStatus, TrainingRun
from modeling.nets import build_net
from modeling.training.checkpoint import CONVERT_COMMAND, load_checkpoint, write_checkpoint
from modeling.training.storage import checkpoint_storage, local_path
from tests.adversarial.helpers import ContractModel, adversarial_study, arrive, hypothesis_for
from tests.present import present

from .helpers import checkpoint_bytes, run_checkpoint_bytes, worker_client
from .test_node_api import lease, progress, upload

LABELS3 = ["entailment", "neutral", "contradiction"]


class Planted:
    """Unpickled, this creates the marker file: the node's code would have run on the platform."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def planted_pickle(marker):
    """A "checkpoint" in the old format (torch.save) whose weights are the planted object."""
    buffer = io.BytesIO()
    torch.save(
        {"model": "cbow", "config": {}, "epoch": 1, "vocab": ["a"], "labels": LABELS3, "state_dict": Planted(marker)},
        buffer,
    )
    return buffer.getvalue()


def old_checkpoint(vocab_size=12):
    """A genuine checkpoint of the old format: tensors and plain containers only."""
    words = [f"w{i}" for i in range(vocab_size)]
    net = build_net("cbow", vocab_size, num_classes=3, embedding_dim=8, hidden_dim=8)
    buffer = io.BytesIO()
    config = {"embedding_dim": 8, "hidden_dim": 8, "max_len": 20}
    torch.save(
        {
            "model": "cbow",
            "config": config,
            "epoch": 2,
            "vocab": words,
            "labels": LABELS3,
            "state_dict": net.state_dict(),
        },
        buffer,
    )
    return buffer.getvalue()


def safetensors_checkpoint(tmp_path, vocab_size=12):
    net = build_net("cbow", vocab_size, num_classes=3, embedding_dim=8, hidden_dim=8)
    path = write_checkpoint(
        tmp_path / "good.safetensors",
        model="cbow",
        config={"embedding_dim": 8, "hidden_dim": 8},
        epoch=1,
        vocab=[f"w{i}" for i in range(vocab_size)],
        labels=LABELS3,
        state_dict=net.state_dict(),
    )
    return path.read_bytes()


def stored_as_done(run, body, name="planted.pt"):
    """The run finished on a checkpoint file already in the storage (what the old code accepted)."""
    storage = checkpoint_storage()
    stored = storage.save(name, ContentFile(body))
    TrainingRun.objects.filter(pk=run.pk).update(
        status=RunStatus.DONE,
        checkpoint_name=stored,
        checkpoint_path=local_path(storage, stored) or stored,
        checkpoint_bytes=len(body),
        checkpoint_sha256=hashlib.sha256(body).hexdigest(),
    )
    run.refresh_from_db()
    return run


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "the-node-ran-code-here"
    yield path
    assert not path.exists(), "a planted pickle ran"


def finish(client, run, lease_id):
    return client.post(
        f"/api/worker/runs/{run.pk}/finish/",
        {"attempt": run.celery_task_id, "claim": lease_id, "results": {"accuracy": {"dev_matched": 0.9}}},
        format="json",
    )


def test_an_empty_or_made_up_attempt_takes_over_nothing_and_the_leaseholder_goes_on(node, queued_run):
    held = lease(node, queued_run).json()
    attacker = worker_client("node-b")
    for attempt in ("", "made-up-attempt"):
        refused = attacker.post(
            f"/api/worker/runs/{queued_run.pk}/claim/", {"attempt": attempt, "hostname": "x@b"}, format="json"
        )
        # A run another node leased does not exist for this token, whatever attempt it names.
        assert refused.status_code == 404, (attempt, refused.content)
        assert refused.json() == {"detail": f"No training run {queued_run.pk}."}
    run = TrainingRun.objects.get(pk=queued_run.pk)
    assert (
        present(run.node_token).name == "node-a"
        and run.lease_id == held["claim"]
        and run.results.get("restarts", 0) == 0
    )
    assert progress(node, run, held["claim"], step=7).status_code == 200


def test_another_token_or_a_stale_lease_writes_nothing_and_the_leaseholder_goes_on(node, queued_run, tmp_path):
    first = lease(node, queued_run).json()
    # The broker redelivers the message: a second lease (same node token) replaces the first.
    held = lease(node, queued_run).json()
    run = TrainingRun.objects.get(pk=queued_run.pk)
    attacker = worker_client("node-b")
    body = run_checkpoint_bytes(tmp_path, run)
    # Another token hears of no such run (404); the same node's stale lease is told to stop (409).
    calls = {
        "another token": (attacker, held["claim"], 404),
        "a stale lease": (node, first["claim"], 409),
    }
    for why, (client, lease_id, answer) in calls.items():
        assert progress(client, run, lease_id).status_code == answer, why
        assert upload(client, run, lease_id, body).status_code == answer, why
        assert finish(client, run, lease_id).status_code == answer, why
        failed = client.post(
            f"/api/worker/runs/{run.pk}/fail/",
            {"attempt": run.celery_task_id, "claim": lease_id, "error": "x"},
            format="json",
        )
        assert failed.status_code == answer, why
    # A failure without the lease id is refused too (no more "whichever lease this attempt holds").
    no_lease = node.post(
        f"/api/worker/runs/{run.pk}/fail/", {"attempt": run.celery_task_id, "error": "x"}, format="json"
    )
    assert no_lease.status_code == 400 and "claim" in no_lease.json()
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and not run.checkpoint_name
    assert progress(node, run, held["claim"], step=3).status_code == 200
    assert upload(node, run, held["claim"], body).status_code == 201
    assert finish(node, run, held["claim"]).status_code == 200


def test_a_planted_pickle_is_refused_on_upload_and_the_run_cannot_finish_on_it(node, queued_run, marker, settings):
    spec = lease(node, queued_run).json()
    refused = upload(node, queued_run, spec["claim"], planted_pickle(marker))
    assert refused.status_code == 400
    assert "torch.save" in refused.json()["detail"] and CONVERT_COMMAND in refused.json()["detail"]
    assert not settings.CHECKPOINT_DIR.exists() or not list(settings.CHECKPOINT_DIR.iterdir())
    not_done = finish(node, queued_run, spec["claim"])
    assert not_done.status_code == 400 and "no checkpoint that passed the check" in not_done.json()["detail"]
    run = TrainingRun.objects.get(pk=queued_run.pk)
    assert run.status == RunStatus.RUNNING and not run.checkpoint_sha256


@pytest.mark.parametrize(
    "damage, message",
    [
        ("a vocabulary one word short", "needs F32 [11, 8]"),
        ("a model name of its own", "unknown model"),
        ("cut short", "damaged"),
        ("another model than the run's", "the upload is a majority checkpoint; run"),
    ],
)
def test_an_upload_that_would_not_load_into_its_net_is_refused_in_words(node, queued_run, tmp_path, damage, message):
    spec = lease(node, queued_run).json()
    body = safetensors_checkpoint(tmp_path)
    if damage == "a vocabulary one word short":
        net = build_net("cbow", 12, num_classes=3, embedding_dim=8, hidden_dim=8)
        body = write_checkpoint(
            tmp_path / "short.safetensors",
            model="cbow",
            config={"embedding_dim": 8, "hidden_dim": 8},
            epoch=1,
            vocab=[f"w{i}" for i in range(11)],
            labels=LABELS3,
            state_dict=net.state_dict(),
        ).read_bytes()
    elif damage == "a model name of its own":
        body = body.replace(b'"model":"cbow"', b'"model":"evil"')
    elif damage == "cut short":
        body = body[:-16]
    else:
        body = checkpoint_bytes(tmp_path, "majority")
    refused = upload(node, queued_run, spec["claim"], body)
    assert refused.status_code == 400 and message in refused.json()["detail"], refused.content


def crafted(header):
    """A file in safetensors' layout (8-byte length, JSON header) with whatever header is given."""
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text


@pytest.mark.parametrize(
    "header",
    [
        {"__metadata__": {"format": "nli-checkpoint/1", "model": ["cbow"]}},
        {"__metadata__": {"format": "nli-checkpoint/1", "model": "cbow", "config": "{}", "vocab": "[]",
                          "labels": '["a", "b"]', "epoch": 3}},
        {"__metadata__": {"format": "nli-checkpoint/1", "model": "cbow", "config": "{}", "vocab": "[]",
                          "labels": '["a", "b"]'}, "x": {"dtype": "F32", "shape": 7, "data_offsets": [0, 0]}},
        {"__metadata__": {"format": "nli-checkpoint/1", "model": "cbow", "config": '{"hidden_dim": 1e9}',
                          "vocab": "[]", "labels": '["a", "b"]'}},
        [1, 2, 3],
    ],
)  # fmt: skip
def test_a_crafted_header_is_refused_in_words_never_a_server_error(node, queued_run, header):
    spec = lease(node, queued_run).json()
    refused = upload(node, queued_run, spec["claim"], crafted(header))
    assert refused.status_code == 400 and "not a checkpoint this platform loads" in refused.json()["detail"]


def test_no_reader_of_a_stored_planted_pickle_runs_it(client, make_worker, node, queued_run, marker, snapshot):
    """The writer's prediction, the beat's round advance and the converter all refuse, in words."""
    run = stored_as_done(queued_run, planted_pickle(marker))

    # A writer's hypothesis on a round whose target is the run: told the model is down, nothing runs.
    study, _ = adversarial_study(slug="planted", target_run=run)
    arrive(client, make_worker(), study)
    client.get(reverse("adversarial:next"))
    task = AdversarialTask.objects.get(round__study=study, state=TaskState.WRITING)
    answer = client.post(reverse("adversarial:try", args=[task.writing_claim.token]), {"hypothesis": "A man sleeps."})
    assert answer.status_code == 503 and "not answering right now" in answer.content.decode()
    with pytest.raises(targets.CheckpointRefused) as refused:
        targets.load_run_model(run)
    assert CONVERT_COMMAND in refused.value.detail

    # The beat's task advances a closing round onto the run: the round waits with the reason.
    round_ = closing_round_with_a_test_example(client, make_worker, snapshot, next_run=run)
    advance_rounds()  # what celery beat runs every 30 s
    round_.refresh_from_db()
    assert round_.status == RoundStatus.CLOSING and CONVERT_COMMAND in round_.error

    # The researcher's converter reads it with weights_only=True: refused, the file left as it was.
    err = StringIO()
    call_command("convert_checkpoints", stdout=StringIO(), stderr=err)
    assert "refused, left as it was" in err.getvalue() and "Unsupported global" in err.getvalue()
    assert TrainingRun.objects.get(pk=run.pk).checkpoint_sha256 == run.checkpoint_sha256
    planted_file = run.checkpoint_path
    with pytest.raises(CommandError, match="weights_only=True"):
        call_command("convert_checkpoints", file=[planted_file], stdout=StringIO())


def closing_round_with_a_test_example(client, make_worker, snapshot, next_run):
    """A round with one verified fooled example on a test premise, closing onto `next_run`."""
    model = ContractModel()
    try:
        study, round_ = adversarial_study(slug="closing", target_endpoint=model.url, split=Split.TEST)
        arrive(client, make_worker(), study)
        client.get(reverse("adversarial:next"))
        task = AdversarialTask.objects.get(round__study=study, state=TaskState.WRITING)
        token = task.writing_claim.token
        client.post(reverse("adversarial:try", args=[token]), {"hypothesis": hypothesis_for(task.target_label, True)})
    finally:
        model.close()
    AdversarialTry.objects.filter(round=round_, model_fooled=True).update(verification=Verification.VERIFIED)
    Round.objects.filter(pk=round_.pk).update(
        status=RoundStatus.CLOSING, round_snapshot=snapshot, training_snapshot=snapshot, next_run=next_run
    )
    assert AdversarialTry.objects.filter(round=round_, verification=Verification.VERIFIED).count() == 1
    return Round.objects.get(pk=round_.pk)


def test_an_old_checkpoint_is_refused_until_the_converter_rewrites_it_once(queued_run):
    run = stored_as_done(queued_run, old_checkpoint())
    with pytest.raises(targets.CheckpointRefused) as refused:
        targets.load_run_model(run)
    assert "convert_checkpoints" in refused.value.detail
    out = StringIO()
    call_command("convert_checkpoints", stdout=out, stderr=StringIO())
    assert "1 converted" in out.getvalue()
    converted = TrainingRun.objects.get(pk=run.pk)
    assert converted.checkpoint_name.endswith(".safetensors") and converted.checkpoint_sha256 != run.checkpoint_sha256
    assert not checkpoint_storage().exists(run.checkpoint_name)  # the pickle is gone
    targets.forget_loaded_models()
    model = targets.load_run_model(converted)
    assert model.kind == "cbow" and model.epoch == 2 and model.predict("w1 w2", "w3") in LABELS3
    again = StringIO()
    call_command("convert_checkpoints", stdout=again, stderr=StringIO())
    assert "1 already safetensors" in again.getvalue()


def test_the_converter_turns_a_researchers_old_file_into_one_that_loads(db, tmp_path):
    old = tmp_path / "run-12.pt"
    old.write_bytes(old_checkpoint(vocab_size=5))
    call_command("convert_checkpoints", file=[str(old)], stdout=StringIO())
    assert load_checkpoint(tmp_path / "run-12.safetensors").vocab.itos == [f"w{i}" for i in range(5)]


def test_a_majority_class_run_serves_as_an_adversarial_target(queued_run, tmp_path):
    # A majority checkpoint is a label, not a net: loading it for a round must not call the torch
    # net's eval() it does not have, and it answers every pair with its one label.
    path = write_checkpoint(
        tmp_path / "majority.safetensors",
        model="majority",
        config={},
        epoch=1,
        vocab=[],
        labels=LABELS3,
        state_dict={"label": 2},
    )
    run = stored_as_done(queued_run, path.read_bytes(), name="majority.safetensors")
    TrainingRun.objects.filter(pk=run.pk).update(model="majority")
    targets.forget_loaded_models()
    model = targets.load_run_model(TrainingRun.objects.get(pk=run.pk))
    assert model.kind == "majority"
    answers = targets.model_probabilities(model, [("A man sleeps.", "A person rests."), ("It rains.", "It is dry.")])
    assert answers == [{label: float(index == 2) for index, label in enumerate(LABELS3)}] * 2
