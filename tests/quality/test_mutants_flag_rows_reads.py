"""When the kept worker-flag rows (quality/flag_rows.py) are refreshed: a label write queues the
refresh only once its writer has committed, to start the coalescing window later (thirty seconds
unless the settings name another window), on the broker as in the embedded mode's once-a-window
key; and the approval list computes the rows again as soon as they are as old as the dashboard's
default five-second interval, not a second later."""

from datetime import datetime, timedelta
from typing import Any

import pytest
from celery.signals import before_task_publish
from django.core.cache import cache
from django.utils import timezone

from corpus.scope import EVERYTHING
from quality import flag_rows
from quality.models import WorkerFlagScope
from tests.conftest import needs_broker

from .test_mutants_flag_rows import seconds_left

pytestmark = pytest.mark.django_db


def test_a_label_writes_refresh_window_is_the_one_the_settings_name(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    settings.WORKER_FLAGS_COALESCE_SECONDS = 120.0
    cache.delete(flag_rows.EAGER_REFRESH_KEY)
    with django_capture_on_commit_callbacks(execute=True):
        flag_rows.labels_moved()
    # Longer than the default thirty seconds: the setting's window, not the default's.
    assert 30 < seconds_left(flag_rows.EAGER_REFRESH_KEY) <= 120


@pytest.mark.parametrize("window", [None, 45.0], ids=["default window", "window from the settings"])
def test_a_label_write_queues_the_refresh_a_window_after_its_commit_on_the_broker(
    settings: Any, django_capture_on_commit_callbacks: Any, window: float | None
) -> None:
    needs_broker()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    if window is None:
        if hasattr(settings, "WORKER_FLAGS_COALESCE_SECONDS"):
            del settings.WORKER_FLAGS_COALESCE_SECONDS
    else:
        settings.WORKER_FLAGS_COALESCE_SECONDS = window
    seconds = 30.0 if window is None else window
    published: list[dict[str, Any]] = []

    def note(sender: str | None = None, headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
        published.append({"task": sender, **(headers or {})})

    before_task_publish.connect(note, weak=False, dispatch_uid="tests.flag_rows_publish")
    try:
        before = timezone.now()
        with django_capture_on_commit_callbacks(execute=True):
            flag_rows.labels_moved()
            assert published == []  # nothing goes out before the writer commits
        after = timezone.now()
    finally:
        before_task_publish.disconnect(dispatch_uid="tests.flag_rows_publish")
    (message,) = [each for each in published if each["task"] == flag_rows.REFRESH_TASK]
    # Queued to start a window later (the autouse fixture revokes it when the test ends); the
    # window was counted from the publish, which lies between the two readings of the clock.
    eta = datetime.fromisoformat(message["eta"])
    assert before + timedelta(seconds=seconds) <= eta <= after + timedelta(seconds=seconds)


def test_approval_marks_recompute_rows_as_old_as_the_default_interval(settings: Any) -> None:
    del settings.DASHBOARD_CACHE_SECONDS
    flag_rows.recompute(EVERYTHING)
    # Past the default five seconds and short of six: computed again.
    at = timezone.now() - timedelta(seconds=5.3)
    WorkerFlagScope.objects.filter(key=EVERYTHING.datasets_key).update(computed_at=at)
    assert flag_rows.approval_marks([1]) == {}
    again = flag_rows.computed_at(EVERYTHING)
    assert again is not None and again > at
