"""A study's page keeps the figures that grow with its crowd (where its sessions got to, the times
per task and per session) in the figure cache, per study, and reads its money on every request;
on a large corpus a stale figure is shown at once while the task recomputes it. The bonus page
keeps its workers' catch figures the same way, and reads their money on every request."""

import time
import uuid
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db.models import F
from django.urls import reverse

from base.release import source_digest, source_release
from crowd.models import StudySession
from dashboard.figure_cache import refresh_study_figure_now, study_cache_key
from dashboard.queries import study as queries
from quality.models import BonusCause, BonusEntry, BonusKind, CatchTrialAnswer
from tests.dashboard.test_study_page import build_study, session

from . import cost_factories

pytestmark = pytest.mark.django_db


def age_crowd_figures(study, seconds):
    """Move the cached figures' timestamp back: stale now, whatever the machine's speed."""
    key = study_cache_key("study-crowd", study.pk)
    entry = cache.get(key)
    assert entry is not None, "the study's figures should be cached"
    cache.set(key, dict(entry, at=entry["at"] - seconds), 3600)


def test_the_funnel_is_kept_while_the_money_follows_at_once(settings):
    settings.DASHBOARD_CACHE_SECONDS = 3600
    settings.DASHBOARD_LARGE_PAIRS = 10_000_000  # a small corpus: a stale figure is recomputed in the request
    study = build_study()
    first = queries.overview(study)["funnel"]
    session(study, "late", minutes_ago=1)
    completed = StudySession.objects.filter(study=study, completed_at__isnull=False).earliest("pk")
    StudySession.objects.filter(pk=completed.pk).update(tasks_done=F("tasks_done") + 1)

    kept = queries.overview(study)
    assert kept["funnel"]["arrived"] == first["arrived"]  # within the interval: the kept funnel
    assert kept["funnel"]["tasks"] == first["tasks"] + 1  # the money's figures are read now
    assert kept["costs"].tasks_complete == first["tasks_owed"] + first["tasks_approved"] + first["tasks_paid"] + 1

    age_crowd_figures(study, 3601)
    assert queries.overview(study)["funnel"]["arrived"] == first["arrived"] + 1


def test_a_large_corpus_shows_the_last_funnel_while_the_task_recomputes_it(settings):
    settings.DASHBOARD_CACHE_SECONDS = 60
    settings.DASHBOARD_LARGE_PAIRS = 1  # every corpus counts as large here
    study = build_study()
    arrived = queries.overview(study)["funnel"]["arrived"]
    session(study, "late", minutes_ago=1)
    age_crowd_figures(study, 61)

    assert queries.overview(study)["funnel"]["arrived"] == arrived  # the last figures, a refresh queued
    refresh_study_figure_now("study-crowd", study.pk)  # what dashboard.refresh_study_figure runs
    assert queries.overview(study)["funnel"]["arrived"] == arrived + 1
    assert cache.get(study_cache_key("study-crowd", study.pk) + ":refreshing") is None


def test_the_bonus_page_keeps_the_catch_figures_and_reads_the_money_now(client, researcher, settings):
    settings.DASHBOARD_CACHE_SECONDS = 3600
    settings.DASHBOARD_LARGE_PAIRS = 10_000_000
    client.force_login(researcher)
    cost_factories.build()

    def shown():
        context = client.get(reverse("dashboard:bonuses")).context
        return context["study"], {row["id"]: row for row in context["totals"]}

    study, before = shown()
    entry = BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED).earliest("pk")
    worker = entry.worker_id
    assert entry.pair is not None  # an earned bonus is paid for a pair
    CatchTrialAnswer.objects.create(
        worker_id=worker,
        pair=entry.pair,
        study_session=entry.study_session,
        batch=uuid.uuid4(),
        label=cost_factories.E,
        expected=cost_factories.E,
        matched=True,
    )
    BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker_id=worker,
        study=study,
        study_session=entry.study_session,
        pair=None,  # a discretionary bonus
        amount=Decimal("0.50"),
        currency=entry.currency,
        cause=BonusCause.OTHER,
        reason="Thanks for the careful work.",
    )

    _, after = shown()
    assert after[worker]["earned"] == before[worker]["earned"] + Decimal("0.50")  # the ledger, now
    assert after[worker]["catch_seen"] == before[worker]["catch_seen"]  # the kept catch figures
    cache.clear()
    assert shown()[1][worker]["catch_seen"] == before[worker]["catch_seen"] + 1


def test_a_figure_another_release_kept_in_another_shape_is_not_read(client, researcher, settings):
    # Hosts of two releases share one cache during a deploy: the older release kept this study's
    # crowd figures under its own key, in a shape without the keys the running code reads.
    settings.DASHBOARD_CACHE_SECONDS = 3600
    study = build_study()
    older_shape = {"value": {"funnel": {}}, "at": time.time()}
    cache.set(f"dashboard:study-crowd:study-{study.pk}", older_shape, 3600)  # the key without a release
    cache.set(study_cache_key("study-crowd", study.pk).replace(source_release(), "0" * 12), older_shape, 3600)

    client.force_login(researcher)
    response = client.get(reverse("dashboard:study", args=[study.slug]))
    assert response.status_code == 200
    assert queries.overview(study)["funnel"]["arrived"] > 0  # computed by this release, not read


def test_the_release_digest_follows_every_source_file_and_its_path(tmp_path):
    app = tmp_path / "app"
    (app / "sub").mkdir(parents=True)
    (app / "views.py").write_text("A = 1\n")
    (app / "sub" / "figures.py").write_text("B = 2\n")
    first = source_digest(tmp_path, [app])
    assert source_digest(tmp_path, [app]) == first  # the same code, the same release on every host
    (app / "sub" / "figures.py").write_text("B = 3\n")
    changed = source_digest(tmp_path, [app])
    assert changed != first
    (app / "sub" / "figures.py").rename(app / "sub" / "other.py")
    assert source_digest(tmp_path, [app]) not in {first, changed}
