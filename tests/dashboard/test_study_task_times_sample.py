"""The study page's time per task reads the claims of the latest sessions only when a study has
more than `TASK_TIME_SESSIONS` of them (its statement sized by that sample, not by the study), and
says "about" then; below that the figures are every task's."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.models import Premise
from dashboard.queries import study as queries
from tests.dashboard.test_study_page import build_study, claim, session

pytestmark = pytest.mark.django_db


def test_time_per_task_of_the_latest_sessions_when_there_are_more():
    study = build_study()
    latest = session(study, "latest", minutes_ago=2, tasks_done=1)
    claim(latest, Premise.objects.filter(dataset=study.dataset).first(), seconds=60)
    every = queries.task_times(study)
    assert (every.n, every.median, every.sample_sessions) == (3, 300.0, 0)  # 60, 300 and 600 s
    with CaptureQueriesContext(connection) as captured:
        sample = queries.task_times(study, sessions=1)
    assert (sample.n, sample.median, sample.sample_sessions) == (1, 60.0, 1)
    # One statement: the claims of the latest session (LIMIT 1) and whether there are more.
    assert len(captured.captured_queries) == 1, captured.captured_queries
    timed = captured.captured_queries[0]["sql"]
    assert "percentile_cont" in timed and "LIMIT 1" in timed and "OFFSET 1" in timed, timed


def test_the_page_says_about_when_the_times_are_a_sample(client, researcher, settings, monkeypatch):
    study = build_study()
    client.force_login(researcher)
    page = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert "about: median time per task" not in page
    monkeypatch.setattr(queries, "TASK_TIME_SESSIONS", 1)
    monkeypatch.setattr(queries.task_times, "__kwdefaults__", {"sessions": 1})
    cache.clear()  # the times are the figure cache's (`queries.crowd_figures`): read them again
    page = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert "about: median time per task" in page and "of the latest 1 sessions" in page
