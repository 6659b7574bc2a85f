"""A node sees only its leased run: snapshot files only of a run it holds a live lease on; results it
sends are checked (metric names, ranges, size), and its dev accuracy is a claim until the platform
scores the checkpoint itself on the snapshot's dev split."""

import hashlib
import io
import json
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone
from safetensors.torch import load_file

from audit.models import AuditEntry
from modeling.models import RunStatus, TrainingRun
from modeling.training.remeasure import remeasure_run
from modeling.training.selectors import runs_fit_to_label
from modeling.training.services import cancel_training_run, launch_training_run

from .helpers import SMALL, learnable_splits, run_checkpoint_bytes, served_snapshot, worker_client
from .test_node_api import lease, upload

UNKNOWN_SNAPSHOT = {"detail": "No Snapshot matches the given query."}
NO_SUCH_SNAPSHOT = 987_654


def files_of(client, snapshot_id):
    """The answers to a node's downloads of a snapshot's files: {name: response}."""
    return {
        name: client.get(f"/api/snapshots/{snapshot_id}/files/{name}")
        for name in ("train.jsonl", "dev_matched.jsonl", "test_matched.jsonl", "manifest.json")
    }


def assert_unknown(answers):
    for name, answer in answers.items():
        assert answer.status_code == 404, (name, answer.status_code)
        assert answer.json() == UNKNOWN_SNAPSHOT, name


@pytest.fixture
def other_snapshot(db, researcher):
    return served_snapshot(learnable_splits(7, n_train=30, n_eval=6), researcher)


# --- snapshot files --------------------------------------------------------------------------


def test_a_fresh_node_token_that_never_leased_a_run_gets_404_for_every_snapshot_file(snapshot, other_snapshot):
    fresh = worker_client("fresh-node")

    assert_unknown(files_of(fresh, snapshot.pk))
    assert_unknown(files_of(fresh, other_snapshot.pk))
    assert_unknown(files_of(fresh, NO_SUCH_SNAPSHOT))  # the same answer as a snapshot that does not exist


def test_a_node_with_a_live_lease_reads_its_runs_snapshot_and_no_other(node, queued_run, other_snapshot):
    assert lease(node, queued_run).status_code == 200

    answers = files_of(node, queued_run.snapshot_id)

    assert all(answer.status_code == 200 for answer in answers.values()), answers
    assert json.loads(b"".join(answers["manifest.json"].streaming_content))["files"]
    assert_unknown(files_of(node, other_snapshot.pk))


def test_a_queued_run_the_node_has_not_leased_opens_no_files(node, queued_run):
    assert_unknown(files_of(node, queued_run.snapshot_id))


def test_an_expired_lease_reads_nothing(node, queued_run, settings):
    assert lease(node, queued_run).status_code == 200
    stale = timezone.now() - timedelta(minutes=float(settings.TRAINING_STALE_MINUTES) + 1)
    TrainingRun.objects.filter(pk=queued_run.pk).update(heartbeat_at=stale)

    assert_unknown(files_of(node, queued_run.snapshot_id))


def test_an_ended_lease_reads_nothing(node, queued_run):
    held = lease(node, queued_run).json()
    node.post(
        f"/api/worker/runs/{queued_run.pk}/fail/",
        {"attempt": queued_run.celery_task_id, "claim": held["claim"], "error": "out of memory"},
        format="json",
    )

    assert_unknown(files_of(node, queued_run.snapshot_id))


def test_a_researcher_still_downloads_the_files(researcher_api, snapshot):
    assert researcher_api.get(f"/api/snapshots/{snapshot.pk}/files/train.jsonl").status_code == 200


# --- results -----------------------------------------------------------------------------------


def held_run(node, queued_run, tmp_path, body=None):
    """The run leased by `node` with a checkpoint that passed the check: (run, lease id)."""
    held = lease(node, queued_run).json()
    answer = upload(node, queued_run, held["claim"], body or run_checkpoint_bytes(tmp_path, queued_run))
    assert answer.status_code == 201, answer.content
    return TrainingRun.objects.get(pk=queued_run.pk), held["claim"]


def finish(node, run, lease_id, results, **extra):
    return node.post(
        f"/api/worker/runs/{run.pk}/finish/",
        {"attempt": run.celery_task_id, "claim": lease_id, "results": results},
        format="json",
        **extra,
    )


def honest_shape(accuracy):
    return {"accuracy": {"dev_matched": accuracy}, "dev_split": "dev_matched"}


@pytest.mark.parametrize(
    ("results", "said"),
    [
        ({"accuracy": {"dev_matched": 1.5}, "dev_split": "dev_matched"}, "an accuracy lies between 0 and 1"),
        ({**honest_shape(0.9), "splits": {"dev_matched": {"n": 6, "correct": 6, "accuracy": 1.5}}}, "between 0 and 1"),
        ({**honest_shape(0.9), "leaderboard_rank": 1}, "unknown metrics leaderboard_rank"),
        ({**honest_shape(0.9), "accuracy": {"dev_matched": 0.9, "secret_split": 0.99}}, "unknown splits secret_split"),
        ({**honest_shape(0.9), "train_pairs": -3}, "a count is a non-negative integer"),
        ({**honest_shape(0.9), "history": [{"epoch": 1, "loss": -1.0}]}, "it cannot be negative"),
        (
            {**honest_shape(0.9), "predictions": {"dev_matched": {"pair_ids": ["a"], "gold": "e", "predicted": "e"}}},
            "the snapshot's dev_matched file has 6",
        ),
    ],
)
def test_a_finish_with_figures_the_trainer_never_reports_is_refused(node, queued_run, tmp_path, results, said):
    run, lease_id = held_run(node, queued_run, tmp_path)

    answer = finish(node, run, lease_id, results)

    assert answer.status_code == 400, answer.content
    assert said in answer.json()["detail"]
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.dev_accuracy is None


def test_a_finish_with_nan_is_refused(node, queued_run, tmp_path):
    run, lease_id = held_run(node, queued_run, tmp_path)
    body = json.dumps({"attempt": run.celery_task_id, "claim": lease_id, "results": {"accuracy": {}}})
    body = body.replace('"accuracy": {}', '"accuracy": {"dev_matched": NaN}, "dev_split": "dev_matched"')

    answer = node.post(f"/api/worker/runs/{run.pk}/finish/", body, content_type="application/json")

    assert answer.status_code == 400, answer.content
    assert TrainingRun.objects.get(pk=run.pk).status == RunStatus.RUNNING


def test_a_finish_padded_with_a_megabyte_is_refused_unread(node, queued_run, tmp_path):
    run, lease_id = held_run(node, queued_run, tmp_path)

    answer = finish(node, run, lease_id, {**honest_shape(0.9), "stopped_by": "x" * (1 << 20)})

    assert answer.status_code == 413, answer.content
    assert "at most" in answer.json()["detail"]
    assert TrainingRun.objects.get(pk=run.pk).status == RunStatus.RUNNING


def test_padding_inside_the_body_limit_is_still_refused_by_the_metrics_limit(node, snapshot, tmp_path):
    # A snapshot with many evaluation rows allows a large body for its predictions; the metrics
    # themselves stay within 64 KiB.
    from modeling.models import SnapshotFile

    SnapshotFile.objects.filter(snapshot=snapshot, name="dev_matched.jsonl").update(rows=100_000)
    queued = launch_training_run(snapshot, "cbow", config=SMALL, enqueue=False)
    run, lease_id = held_run(node, queued, tmp_path)

    answer = finish(node, run, lease_id, {**honest_shape(0.9), "stopped_by": "x" * (1 << 20)})

    assert answer.status_code == 400, answer.content
    assert "the metrics take" in answer.json()["detail"]


def test_a_made_up_accuracy_is_shown_as_not_remeasured_then_the_platforms_figure(
    node, queued_run, tmp_path, researcher_api, client, researcher
):
    run, lease_id = held_run(node, queued_run, tmp_path)
    assert finish(node, run, lease_id, honest_shape(0.99)).status_code == 200

    api = researcher_api.get(f"/api/training-runs/{run.pk}/").json()
    assert api["dev_accuracy"] == 0.99
    assert api["accuracy_check"]["state"] == "not_remeasured" and api["accuracy_check"]["remeasured"] is None
    client.force_login(researcher)
    page = client.get(f"/dashboard/training/{run.pk}/").content.decode()
    assert "reported by node, not re-measured" in page
    assert not runs_fit_to_label().filter(pk=run.pk).exists()

    measured = remeasure_run(run.pk)

    assert measured is not None and abs(measured - 0.99) > 0.01
    api = researcher_api.get(f"/api/training-runs/{run.pk}/").json()
    assert api["accuracy_check"]["state"] == "mismatch"
    assert api["accuracy_check"]["remeasured"] == measured and api["accuracy_check"]["split"] == "dev_matched"
    page = client.get(f"/dashboard/training/{run.pk}/").content.decode()
    assert "reported by node, not re-measured" not in page
    assert 'data-state="mismatch"' in page and "the platform measured" in page
    assert runs_fit_to_label().filter(pk=run.pk).exists()


def constant_class_checkpoint(tmp_path, run, label_index):
    """The run's checkpoint with every weight zero and the last bias favouring one class: it always answers that class."""
    from modeling.training.checkpoint import write_checkpoint

    from .helpers import trainers_labels_and_vocabulary

    body = run_checkpoint_bytes(tmp_path, run)
    path = tmp_path / "honest.safetensors"
    path.write_bytes(body)
    state = {name: tensor.zero_() for name, tensor in load_file(str(path)).items()}
    last_bias = [name for name in state if name.endswith("bias")][-1]
    state[last_bias][label_index] = 10.0
    labels, vocab = trainers_labels_and_vocabulary(run)
    return write_checkpoint(
        tmp_path / "constant.safetensors",
        model=run.model,
        config={"embedding_dim": 4, "hidden_dim": 4},
        epoch=1,
        vocab=vocab,
        labels=labels,
        state_dict=state,
    ).read_bytes()


def test_weights_that_always_answer_contradiction_are_remeasured_at_contradictions_share(node, queued_run, tmp_path):
    labels = ["entailment", "neutral", "contradiction"]
    run, lease_id = held_run(node, queued_run, tmp_path, constant_class_checkpoint(tmp_path, queued_run, 2))
    assert finish(node, run, lease_id, honest_shape(0.99)).status_code == 200

    measured = remeasure_run(run.pk)

    dev = [json.loads(line) for line in io.StringIO(dev_file(run).decode())]
    gold = [row["gold_label"] for row in dev if row["gold_label"] in labels]
    assert measured == round(gold.count("contradiction") / len(gold), 6)
    assert TrainingRun.objects.get(pk=run.pk).accuracy_check["state"] == "mismatch"


def dev_file(run):
    from modeling.snapshots.files import open_snapshot_file

    handle = open_snapshot_file(run.snapshot, "dev_matched.jsonl")
    assert handle is not None
    with handle:
        return handle.read()


def test_a_checkpoint_swapped_after_the_check_is_not_remeasured(node, queued_run, tmp_path):
    run, lease_id = held_run(node, queued_run, tmp_path)
    assert finish(node, run, lease_id, honest_shape(0.5)).status_code == 200
    TrainingRun.objects.filter(pk=run.pk).update(checkpoint_sha256=hashlib.sha256(b"other").hexdigest())

    assert remeasure_run(run.pk) is None

    run.refresh_from_db()
    assert run.remeasured_accuracy is None and "SHA-256" in run.remeasure_error
    assert run.accuracy_check["state"] == "failed"


def test_a_model_annotator_takes_only_a_remeasured_run(node, queued_run, tmp_path, researcher):
    from corpus.models import Dataset
    from model_annotators.services import register_run

    run, lease_id = held_run(node, queued_run, tmp_path)
    assert finish(node, run, lease_id, honest_shape(0.99)).status_code == 200
    dataset = Dataset.objects.create(slug="labelled", name="Labelled")

    with pytest.raises(ValidationError, match="re-measured"):
        register_run(dataset, run, user=researcher)
    remeasure_run(run.pk)
    assert register_run(dataset, TrainingRun.objects.get(pk=run.pk), user=researcher).training_run_id == run.pk


# --- the audit log ------------------------------------------------------------------------------


def test_launching_and_cancelling_a_run_are_in_the_audit_log(snapshot, researcher):
    run = launch_training_run(snapshot, "cbow", config=SMALL, user=researcher, enqueue=False)
    cancel_training_run(run.pk, user=researcher)

    entries = AuditEntry.objects.filter(subject_id=str(run.pk), subject_type="modeling.trainingrun")
    assert list(entries.order_by("pk").values_list("action", "actor", "team_id")) == [
        ("training.launched", researcher.username, snapshot.team_id),
        ("training.cancelled", researcher.username, snapshot.team_id),
    ]
