"""A simulated adversarial round, end to end.

A target trained on a few hundred SNLI-style pairs through the real export and training run;
scripted writers who sometimes fool it (they know the target learnt cue words, and use another
label's cue on their second try); verifiers through the validation task; the round closed; the
next target trained on everything so far and the next round opened on its checkpoint. In the
PostgreSQL pass the exports, the advance task and the training run go to the real Celery worker.
"""

import pytest
from django.test import Client
from django.urls import reverse

from adversarial import rounds, selectors
from adversarial.models import AdversarialTask, AdversarialTry, Round, RoundStatus, TaskState, Verification
from base.long_tasks import JobStatus
from corpus.models import Pair, Premise, Split
from corpus.services import create_pairs
from crowd.models import StudySession
from modeling.models import RunStatus
from modeling.snapshots.services import request_snapshot
from modeling.training.services import launch_training_run
from tests import factories
from tests.conftest import wait_for
from tests.modeling.training_fixtures import learnable_rows
from validation.batch_claims import claim_validation_batch
from validation.selectors import batch_claims
from validation.services import submit_validation_batch

from .helpers import adversarial_study, arrive

CUES = {"entailment": "indeed", "neutral": "perhaps", "contradiction": "never"}
TRAINING = {"embedding_dim": 16, "hidden_dim": 16, "epochs": 4, "batch_size": 16, "cpu_threads": 1, "lr": 0.05}


@pytest.fixture
def task_runner(transactional_db, celery_worker_process):
    return celery_worker_process


def base_corpus(n_train=300, n_eval=30):
    """SNLI-style pairs whose label a model learns from a cue word, in their own dataset."""
    dataset = factories.dataset("base", name="Base")
    for split, n, seed in ((Split.TRAIN, n_train, 1), (Split.DEV, n_eval, 2), (Split.TEST, n_eval, 3)):
        for i, row in enumerate(learnable_rows(n, seed)):
            premise = Premise.objects.create(
                dataset=dataset,
                genre=factories.genre("fiction"),
                split=split,
                prompt_id=f"b{split}{i}",
                text=row["sentence1"],
            )
            label = row["gold_label"]
            pair = Pair(
                premise=premise, pair_id=f"b{split}{i}{label[0]}", hypothesis=row["sentence2"], author_label=label
            )
            create_pairs(dataset, split, [pair], [[label] * (1 if split == Split.TRAIN else 3)])
    return dataset


def finished(run):
    return wait_for(
        lambda: run.__class__.objects.filter(pk=run.pk, status__in=[RunStatus.DONE, RunStatus.FAILED]).first(),
        timeout=300,
        message=f"run {run.pk}",
    )


def train_first_target(researcher):
    snapshot = request_snapshot(researcher, datasets=["base"])
    snapshot = wait_for(
        lambda: snapshot.__class__.objects.filter(pk=snapshot.pk, status=JobStatus.DONE).first(), timeout=120
    )
    run = finished(launch_training_run(snapshot, "cbow", config=TRAINING, user=researcher))
    assert run.status == RunStatus.DONE, run.error
    return run


def write_tasks(writer, study, fool_on_second_try):
    """A scripted writer: first try with the target label's cue (the model tends to get it), second
    with another label's cue when they mean to fool it, else the target's cue again."""
    client = Client()
    arrive(client, writer, study)
    while True:
        response = client.get(reverse("adversarial:next"))
        task = AdversarialTask.objects.filter(worker=writer, state=TaskState.WRITING).first()
        if task is None:
            return response
        token = task.writing_claim.token
        target = task.target_label
        other = "contradiction" if target != "contradiction" else "entailment"
        tries = [
            f"{CUES[target]} someone is there",
            f"{CUES[other if fool_on_second_try else target]} someone waits there",
        ]
        for text in tries:
            answer = client.post(
                reverse("adversarial:try", args=[token]), {"hypothesis": text}, HTTP_ACCEPT="application/json"
            )
            assert answer.status_code == 200, answer.content
            if answer.json()["model_fooled"] or answer.json()["task_done"]:
                break
        task.refresh_from_db()
        if task.state == TaskState.REASON:
            done = client.post(reverse("adversarial:reason", args=[token]), {"reason": "The cue word says otherwise."})
            assert done.status_code == 302


def verify_everything(verifiers, dataset, disputed):
    """Verifiers label every queued pair: the writer's label, except on `disputed` pairs where only the
    first verifier agrees (so a third is asked, and the example is discarded)."""
    for verifier in verifiers:
        while True:
            batch = claim_validation_batch(verifier, dataset=dataset)
            if batch is None:
                break
            labels = {}
            for claim in batch_claims(verifier, batch):
                pair = claim.pair
                agrees = pair.pk not in disputed or verifier == verifiers[0]
                labels[pair.pk] = (
                    pair.author_label if agrees else ("neutral" if pair.author_label != "neutral" else "entailment")
                )
            submit_validation_batch(verifier, batch, labels)


def test_a_round_runs_end_to_end_and_opens_the_next_on_a_new_target(task_runner, researcher, make_worker):
    base_corpus()
    first_target = train_first_target(researcher)

    study, round1 = adversarial_study(
        slug="anli",
        target_run=first_target,
        premises=0,
        max_tries=2,
        tasks_per_batch=4,
        bonus_per_verified_fooled="0.5",
    )
    round1.next_model, round1.next_config = "cbow", TRAINING
    round1.save(update_fields=["next_model", "next_config"])
    for i, row in enumerate(learnable_rows(16, seed=7)):
        Premise.objects.create(
            dataset=round1.dataset,
            genre=factories.genre("fiction"),
            split=Split.TRAIN if i % 2 else Split.TEST,
            prompt_id=f"adv{i}",
            text=row["sentence1"],
        )
    writers = [make_worker() for _ in range(4)]
    for index, writer in enumerate(writers):
        write_tasks(writer, study, fool_on_second_try=index % 2 == 0)

    tries = AdversarialTry.objects.filter(round=round1)
    assert tries.filter(model_fooled=True).exists() and tries.filter(model_fooled=False).exists()
    fooled_pairs = list(tries.filter(model_fooled=True).values_list("pair_id", flat=True))
    assert None not in fooled_pairs
    disputed = {fooled_pairs[0]}
    verify_everything([make_worker() for _ in range(4)], round1.dataset, disputed)

    assert tries.filter(model_fooled=True, verification=Verification.PENDING).count() == 0
    assert tries.get(pair_id=fooled_pairs[0]).verification == Verification.DISCARDED
    verified = tries.filter(verification=Verification.VERIFIED)
    assert verified.count() == len(fooled_pairs) - 1
    figures = selectors.round_figures(round1)
    assert figures["tries"] == tries.count() and figures["fooled"] == len(fooled_pairs)
    assert figures["model_error_rate"] == round(len(fooled_pairs) / tries.count(), 4)
    assert figures["verified_share"] == round(verified.count() / len(fooled_pairs), 4)
    assert sum(figures["label_distribution"].values()) == verified.count()
    # Export: dev/test rows are verified fooled examples only; train rows may be either.
    rows = list(selectors.export_rows(round1))
    assert {row["round"] for _, row in rows} == {1}
    assert all(row["model_fooled"] and row["verification"] == "verified" for split, row in rows if split != Split.TRAIN)
    assert all(set(selectors.EXPORT_FIELDS) <= set(row) for _, row in rows)

    rounds.close_round(round1, user=researcher)

    def next_round():
        rounds.advance_all()
        return Round.objects.filter(study=study, number=2).first()

    round2 = wait_for(next_round, timeout=400, interval=1, message="round 2 to open")
    round1.refresh_from_db()
    assert round1.status == RoundStatus.CLOSED and round1.error == ""
    assert round2.status == RoundStatus.OPEN and round2.target_run_id == round1.next_run_id != first_target.pk
    assert round2.target_run.status == RunStatus.DONE and round2.target_run.checkpoint_sha256
    assert sorted(round1.training_snapshot.datasets) == ["anli-r1", "base"]
    assert round1.round_snapshot.status == JobStatus.DONE and round1.round_snapshot.datasets == ["anli-r1"]
    test_verified = verified.filter(task__writing_claim__premise__split=Split.TEST).count()
    assert round1.next_test_examples == test_verified
    if test_verified:
        assert 0 <= round1.next_test_accuracy <= 1
    # The next round is served by the new checkpoint.
    writer = make_worker()
    client = Client()
    arrive(client, writer, study)
    Premise.objects.create(
        dataset=round2.dataset, genre=factories.genre("fiction"), split=Split.TEST, prompt_id="r2", text="A cat sleeps."
    )
    client.get(reverse("adversarial:next"))
    task = AdversarialTask.objects.get(worker=writer, state=TaskState.WRITING)
    assert task.round == round2
    answer = client.post(
        reverse("adversarial:try", args=[task.writing_claim.token]),
        {"hypothesis": "indeed a cat rests"},
        HTTP_ACCEPT="application/json",
    )
    assert answer.status_code == 200 and AdversarialTry.objects.get(task=task).round == round2
    assert StudySession.objects.filter(study=study, completed_at__isnull=False).exists()
