"""The embedded mode (no broker) runs the one beat schedule (`CELERY_BEAT_SCHEDULE`) in a thread of the
web process: under `make demo` a closing adversarial round moves on and the tallies' deltas are folded
with no `celery beat` running."""

import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.db.models import Count
from django.test import override_settings

from adversarial.models import RoundStatus
from base.embedded_beat import EmbeddedBeat, interval_seconds
from corpus.models import PairTally
from modeling.models import Snapshot
from tests import factories
from tests.adversarial.helpers import adversarial_study


def wait_until(condition, seconds=60.0):
    """Poll until `condition()` is true (the thread runs on its own clock); the test fails otherwise."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def short(schedule, seconds):
    """The project's schedule with every interval `seconds`: the same entries, the same tasks."""
    return {name: {**entry, "schedule": seconds} for name, entry in schedule.items()}


def test_a_closing_round_advances_and_tallies_fold_without_a_beat(transactional_db):
    _, round1 = adversarial_study(premises=1, target_endpoint="http://127.0.0.1:9/predict")
    round1.round_snapshot = Snapshot.objects.create(status="done", directory="/nowhere", content_hash="h")
    round1.training_snapshot = Snapshot.objects.create(status="failed", error="disk full")
    round1.status = RoundStatus.CLOSING
    round1.save()
    premise = factories.premise(round1.dataset)
    factories.pair(round1.dataset, premise, ["neutral"])
    factories.pair(round1.dataset, premise, ["neutral"])
    assert PairTally.objects.values("author_label").annotate(rows=Count("pk")).get()["rows"] == 2  # two deltas

    only = {"adversarial-advance-rounds", "corpus-fold-tallies"}
    with override_settings(
        CELERY_BEAT_SCHEDULE=short({k: v for k, v in settings.CELERY_BEAT_SCHEDULE.items() if k in only}, 0.2)
    ):
        beat = EmbeddedBeat(settings.CELERY_BEAT_SCHEDULE)
    beat.start()
    try:
        advanced = wait_until(lambda: "disk full" in type(round1).objects.get(pk=round1.pk).error)
        folded = wait_until(lambda: PairTally.objects.count() == 1)
    finally:
        beat.stop(timeout=30)
    assert advanced, "the closing round was never advanced"
    assert folded, "the tallies' deltas were never folded"
    (row,) = PairTally.objects.values("author_label", "n")
    assert row == {"author_label": "neutral", "n": 2}


def test_every_entry_of_the_one_schedule_runs_in_the_embedded_mode(db):
    """No entry of the production schedule is one the embedded beat cannot run, and the thread
    runs each at its own interval, in the schedule's order."""
    assert all(interval_seconds(name, entry) > 0 for name, entry in settings.CELERY_BEAT_SCHEDULE.items())
    now = [0.0]
    ran = []

    def run(name, entry):
        ran.append(name)
        return True

    beat = EmbeddedBeat(
        {"often": {"task": "a", "schedule": 1.0}, "rarely": {"task": "b", "schedule": timedelta(seconds=3)}},
        clock=lambda: now[0],
        run=run,
    )
    assert beat.run_due() == [] and beat.seconds_to_next() == 1.0  # first run one interval after the start
    now[0] = 3.0
    assert beat.run_due() == ["often", "rarely"]
    now[0] = 4.0
    assert beat.run_due() == ["often"]
    with pytest.raises(ValueError, match="'crontab'"):
        EmbeddedBeat({"crontab": {"task": "a", "schedule": object()}})


def test_every_entry_of_the_schedule_runs_in_process_without_an_error(transactional_db, caplog):
    """Under `make demo` each entry runs in the web process: none may fail there (no broker, no market
    connected, an empty corpus), or the log fills with a traceback at every interval."""
    from base.embedded_beat import run_entry

    failed = [name for name, entry in settings.CELERY_BEAT_SCHEDULE.items() if not run_entry(name, entry)]
    assert failed == [], caplog.text
