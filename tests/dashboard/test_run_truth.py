"""A run's page tells the truth: a failed run shows its error once and never "waiting for a
worker"; a run stopped early reads as what really ran."""

import pytest
from django.urls import reverse

from modeling.models import RunStatus, TrainingRun
from modeling.training.run_writes import finish_run
from tests.modeling.training_fixtures import make_snapshot, multinli_splits

pytestmark = pytest.mark.django_db


@pytest.fixture
def snapshot(tmp_path):
    return make_snapshot(tmp_path / "snap", multinli_splits(n_train=6, n_eval=3))


def run_page(client, run):
    return client.get(reverse("dashboard:training_detail", args=[run.pk])).content.decode()


def test_a_failed_run_shows_its_error_once_and_waits_for_nobody(client, researcher, snapshot):
    run = TrainingRun.objects.create(
        snapshot=snapshot,
        snapshot_hash=snapshot.content_hash,
        model="cbow",
        status=RunStatus.FAILED,
        error="SnapshotError: dev.jsonl is missing",
    )
    client.force_login(researcher)
    page = run_page(client, run)
    assert page.count("SnapshotError: dev.jsonl is missing") == 1
    assert "waiting for a node" not in page and "failed before the first step" in page


def test_a_run_stopped_early_reads_as_what_really_ran(client, researcher, snapshot):
    run = TrainingRun.objects.create(
        snapshot=snapshot,
        snapshot_hash=snapshot.content_hash,
        model="cbow",
        status=RunStatus.RUNNING,
        celery_task_id="attempt-1",
        epoch=4,
        total_epochs=10,
        step=40,
        total_steps=100,
    )
    results = {"accuracy": {"dev": 0.5}, "dev_split": "dev", "epochs_run": 4, "stopped_by": "early stopping"}
    assert finish_run(run.pk, "attempt-1", None, results)
    run.refresh_from_db()
    assert (run.epoch, run.total_epochs, run.step, run.total_steps, run.progress) == (4, 4, 40, 40, 1.0)
    client.force_login(researcher)
    assert "epoch 4/4, step 40/40 (stopped by early stopping)" in run_page(client, run)


def test_a_queued_run_waits_for_a_worker(client, researcher, snapshot):
    run = TrainingRun.objects.create(snapshot=snapshot, snapshot_hash=snapshot.content_hash, model="cbow")
    client.force_login(researcher)
    assert "waiting for a node" in run_page(client, run)
