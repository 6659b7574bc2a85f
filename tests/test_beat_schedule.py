"""One celery beat schedule (`CELERY_BEAT_SCHEDULE` in the settings) runs the periodic work in production: the
hourly tagging sweep, the monitor refresh, the training-run reaper, the release of expired claims and
the tallies' fold;
compose runs one beat."""

from pathlib import Path

import yaml
from django.conf import settings

from annotation_site.celery import app

REPO = Path(__file__).resolve().parent.parent
PERIODIC = {
    "artifacts.tag_untagged",
    "artifacts.periodic_monitor",
    "modeling.tasks.reap_training_runs",
    "quality.auto_exclude_flagged",
    "quality.aggregate_changed_datasets",
    "adversarial.advance_rounds",
    "validation.release_expired_claims",
    "corpus.fold_tallies",
    "annotation_site.reap_long_tasks",
    "markets.poll_mturk_assignments",
    "markets.approve_checked_sessions",
    "markets.reconcile_bonus_payments",
    "markets.check_pending_arrivals",
    "privacy.apply_retention",
}


def test_the_one_schedule_names_registered_tasks_on_the_default_queue():
    app.loader.import_default_modules()
    schedule = app.conf.beat_schedule
    assert {entry["task"] for entry in schedule.values()} == PERIODIC
    for entry in schedule.values():
        assert entry["task"] in app.tasks, entry
        assert settings.CELERY_TASK_ROUTES.get(entry["task"], {}).get("queue", "default") == "default"
    hourly = {entry["task"]: entry["schedule"] for entry in schedule.values()}
    assert hourly["artifacts.tag_untagged"] == hourly["artifacts.periodic_monitor"] == 3600.0
    assert schedule == settings.CELERY_BEAT_SCHEDULE  # the settings are the one place it is written


def test_compose_runs_exactly_one_beat_and_workers_without_one():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    commands = {name: " ".join(service.get("command") or []) for name, service in compose.items()}
    beats = [name for name, command in commands.items() if " beat" in command or " -B" in command]
    assert beats == ["beat"]
    assert commands["beat"].startswith("celery -A annotation_site beat")
    assert compose["beat"].get("deploy", {}).get("replicas", 1) == 1
    assert "reaper" not in compose  # the shell-loop reaper is now a beat entry
    makefile = (REPO / "Makefile").read_text()
    assert "celery -A annotation_site beat" in makefile and "worker -Q default -B" in makefile


def test_the_scheduled_reaper_fails_a_silent_run(db, tmp_path):
    from datetime import timedelta

    from django.utils import timezone

    from modeling.models import RunStatus, TrainingRun
    from modeling.training.tasks import reap_training_runs
    from tests.modeling.training_fixtures import make_snapshot, multinli_splits

    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(n_train=6, n_eval=3))
    now = timezone.now()
    lost = TrainingRun.objects.create(
        snapshot=snapshot,
        model="cbow",
        status=RunStatus.RUNNING,
        node_hostname="gpu1@node",
        started_at=now - timedelta(hours=1),
        heartbeat_at=now - timedelta(hours=1),
    )
    alive = TrainingRun.objects.create(
        snapshot=snapshot, model="cbow", status=RunStatus.RUNNING, started_at=now - timedelta(hours=1), heartbeat_at=now
    )
    assert reap_training_runs.apply().get() == [lost.pk]
    assert TrainingRun.objects.get(pk=lost.pk).status == RunStatus.FAILED
    assert TrainingRun.objects.get(pk=alive.pk).status == RunStatus.RUNNING
