"""Cancelling a training run (no page or API could): a queued run never starts, a running
one stops cleanly at its next heartbeat between steps or epochs; the dashboard's button and the
API's action are POST-only and need the launch permission; in embedded mode the training and
snapshot pages say that jobs run one at a time and which one is running."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from modeling.models import RunStatus, TrainingRun
from modeling.training.services import (
    CancelRefused,
    DatabaseReporter,
    cancel_training_run,
    execute_training_run,
    launch_training_run,
)

from .training_fixtures import learnable_rows, make_snapshot

SMALL = {"embedding_dim": 16, "hidden_dim": 16, "batch_size": 32, "lr": 0.01, "cpu_threads": 1}

pytestmark = pytest.mark.django_db


@pytest.fixture
def snapshot(tmp_path, researcher):
    splits = {"train": learnable_rows(600, 1), "dev": learnable_rows(60, 2), "test": learnable_rows(60, 3)}
    return make_snapshot(tmp_path / "snap", splits, researcher)


class CancelAfterFirstEpoch(DatabaseReporter):
    """The database transport, with a researcher cancelling the run (the real service, on the same
    database) right after the worker reported the end of its first epoch."""

    def __init__(self, researcher):
        self.researcher = researcher
        self.reports = []

    def progress(self, spec, fields):
        self.reports.append(dict(fields))
        if fields.get("history") and not is_cancel_sent(spec.run_id):
            cancel_training_run(spec.run_id, user=self.researcher)
        return super().progress(spec, fields)


def is_cancel_sent(run_id):
    return TrainingRun.objects.filter(pk=run_id, status=RunStatus.FAILED).exists()


def test_a_running_run_stops_cleanly_at_its_next_heartbeat(snapshot, researcher):
    run = launch_training_run(
        snapshot, "bilstm", config=dict(SMALL, epochs=6, patience=6), user=researcher, enqueue=False
    )
    reporter = CancelAfterFirstEpoch(researcher)
    outcome = execute_training_run(run.pk, reporter=reporter)
    assert outcome["status"] == "abandoned"
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error == f"Cancelled by {researcher.username} while running."
    assert run.results["cancelled"] == {"by": researcher.username, "while": "running"}
    # Cancelled at the end of the first epoch: that report was the worker's last (the loop stopped
    # there, long before the sixth epoch), nothing of it was written, and no checkpoint was kept.
    ends = [index for index, report in enumerate(reporter.reports) if report["history"]]
    assert ends == [len(reporter.reports) - 1] and reporter.reports[-1]["epoch"] == 1
    assert run.history == [] and run.epoch <= 1
    assert not run.checkpoint_name
    with pytest.raises(CancelRefused, match="finished already"):
        cancel_training_run(run.pk, user=researcher)


def test_a_queued_run_is_cancelled_and_never_starts(snapshot, researcher):
    run = launch_training_run(snapshot, "cbow", config=dict(SMALL, epochs=1), user=researcher, enqueue=False)
    cancel_training_run(run.pk, user=researcher)
    assert execute_training_run(run.pk)["status"] == RunStatus.FAILED
    run.refresh_from_db()
    assert run.error == f"Cancelled by {researcher.username} while queued." and run.started_at is None


def test_the_dashboard_button_and_the_api_action_post_only_with_the_right(snapshot, researcher, client):
    first = launch_training_run(snapshot, "cbow", config=dict(SMALL, epochs=1), user=researcher, enqueue=False)
    second = launch_training_run(snapshot, "cbow", config=dict(SMALL, epochs=1), user=researcher, enqueue=False)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:training_detail", args=[first.pk])).content.decode()
    assert 'id="cancel-run"' in page and 'name="csrfmiddlewaretoken"' in page
    cancel_url = reverse("dashboard:training_cancel", args=[first.pk])
    assert client.get(cancel_url).status_code == 405
    # Someone without the launch right (a logged-in worker) changes nothing.
    worker = get_user_model().objects.create_user(username="w-cancel", password="x")
    other = Client()
    other.force_login(worker)
    assert other.post(cancel_url).status_code == 403
    assert other.post(f"/api/training-runs/{second.pk}/cancel/").status_code in (401, 403)
    assert TrainingRun.objects.filter(status=RunStatus.QUEUED).count() == 2
    # CSRF is checked on the form.
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(researcher)
    assert strict.post(cancel_url).status_code == 403
    response = client.post(cancel_url)
    assert response.status_code == 302
    first.refresh_from_db()
    assert first.status == RunStatus.FAILED and "Cancelled by" in first.error
    assert 'id="cancel-run"' not in client.get(reverse("dashboard:training_detail", args=[first.pk])).content.decode()
    # The API action: GET is not allowed, POST cancels, a second POST is a 409.
    api = f"/api/training-runs/{second.pk}/cancel/"
    assert client.get(api).status_code == 405
    answer = client.post(api, content_type="application/json")
    assert answer.status_code == 200 and answer.json()["status"] == "failed"
    assert client.post(api, content_type="application/json").status_code == 409


def test_embedded_mode_says_jobs_run_one_at_a_time_and_which_runs(snapshot, researcher, client, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    running = launch_training_run(snapshot, "cbow", config=dict(SMALL, epochs=1), user=researcher, enqueue=False)
    TrainingRun.objects.filter(pk=running.pk).update(status=RunStatus.RUNNING)
    launch_training_run(snapshot, "cbow", config=dict(SMALL, epochs=1), user=researcher, enqueue=False)
    client.force_login(researcher)
    for url in (reverse("dashboard:training"), reverse("dashboard:snapshots")):
        page = " ".join(client.get(url).content.decode().split())
        assert "one at a time" in page and "A queued job waits behind the running one" in page
        assert f"Running now: training run {running.pk} (cbow)." in page
        assert "Waiting behind it: 1 training runs." in page or "Waiting behind it: 1 training runs" in page
    settings.CELERY_TASK_ALWAYS_EAGER = False
    assert 'id="embedded-queue"' not in client.get(reverse("dashboard:training")).content.decode()


def test_the_live_part_of_a_run_page_follows_the_run_from_queued_to_running(snapshot, researcher, client):
    run = launch_training_run(snapshot, "cbow", config=dict(SMALL, epochs=1), user=researcher, enqueue=False)
    client.force_login(researcher)
    live = reverse("dashboard:training_progress") + f"?view=detail&ids={run.pk}"
    html = client.get(live).json()["items"][0]["html"]
    assert 'id="cancel-run"' in html and "It is queued and will not start." in html
    TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    html = client.get(live).json()["items"][0]["html"]
    # What the page swaps in once the run starts: no "queued" left behind.
    assert 'id="cancel-run"' in html and "queued" not in html and "It stops at its next progress report" in html
