"""Defects a second lab hit, in Chromium against the site as it is deployed (gunicorn with gunicorn.conf.py, the
production settings with DEBUG off, static files from `collectstatic`; tests/production/conftest.py),
on the test database:

1. a bulk action on Pairs takes exactly the pairs the page counted, of the dataset it shows, not
   every dataset's; and every bulk action is undone from the history, not only the last;
2. a participant's writing task shows no template comment (`{# ... #}`) as text;
9. "End preview" lands on the dashboard study page the preview was started from, not in the admin.
"""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus.models import Label, Pair, Split
from crowd.models import Study, StudyAccess, TaskKind
from dashboard.models import BulkActionKind, PairBulkAction
from modeling.models import SnapshotExclusion
from tests import factories
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.conftest import subprocess_database_url
from tests.production.conftest import Gunicorn, collected_static, gunicorn_server, production_environment
from validation.models import AdjudicationRequest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

__all__ = ["collected_static"]  # the session's collectstatic, a fixture of tests/production
E = Label.ENTAILMENT.value
PASSWORD = "research-pass-1"
PROLIFIC = "PROLIFIC_PID={pid}&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID={session}"
BANNER = "nothing you do here is saved"


@pytest.fixture(scope="module")
def production_site(collected_static: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gunicorn]:
    """One gunicorn for the module on the test database. No Celery worker: none of these pages
    waits on a task (with no broker configured the server runs its tasks in its own process)."""
    folder = tmp_path_factory.mktemp("issue73-site")
    env = production_environment(
        collected_static,
        DATABASE_URL=subprocess_database_url(),
        DATABASE_CONN_MAX_AGE="0",  # the suite flushes the tables between tests
        GUNICORN_WORKERS="1",
    )
    with gunicorn_server(env, folder / "gunicorn.log") as server:
        yield server


@pytest.fixture(autouse=True)
def _real_password_hashing(settings):
    # The server checks passwords with the production hashers; the suite's fast MD5 is not among them.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]


@pytest.fixture
def site_page(page, production_site):
    page.site = production_site.url
    return page


def log_in(page, username: str, next_path: str) -> None:
    page.goto(f"{page.site}/accounts/login/?next={next_path.replace('?', '%3F').replace('&', '%26')}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit]")


def pairs_of(dataset, count, split=Split.TRAIN):
    made = [factories.pair(dataset, factories.premise(dataset, split=split), [E]) for _ in range(count)]
    Pair.objects.filter(pk__in=[pair.pk for pair in made]).update(needs_validation=False)
    return {pair.pk for pair in made}


def test_bulk_actions_take_the_pairs_the_page_counted_and_any_of_them_is_undone(site_page, make_researcher):
    page = site_page
    shown = pairs_of(factories.dataset("harbour-nli"), 2)
    other = pairs_of(factories.dataset("river-nli"), 11)
    make_researcher(username="ada", password=PASSWORD)
    log_in(page, "ada", "/dashboard/pairs/?dataset=harbour-nli&split=train")
    page.wait_for_url(re.compile(r".*/dashboard/pairs/\?dataset=harbour-nli"))

    assert page.locator("#matched-count").inner_text() == "2"
    assert page.locator("#bulk-exclude").inner_text() == "Keep 2 pairs out of the next snapshots"
    page.fill("#bulk-reason", "held for the next release")
    with page.expect_navigation():
        page.click("#bulk-exclude")
    assert set(SnapshotExclusion.objects.values_list("pair_id", flat=True)) == shown

    assert page.locator("#bulk-adjudicate").inner_text() == "Send 2 pairs to adjudication"
    page.fill("#bulk-reason", "odd hypotheses")
    with page.expect_navigation():
        page.click("#bulk-adjudicate")
    assert set(AdjudicationRequest.objects.values_list("pair_id", flat=True)) == shown
    assert not SnapshotExclusion.objects.filter(pair_id__in=other).exists()

    # The earlier of the two is undone from the history; the later one stands.
    kept_out = PairBulkAction.objects.get(kind=BulkActionKind.EXCLUDE)
    assert page.locator("#bulk-history tr[data-bulk]").count() == 2
    with page.expect_navigation():
        page.click(f'#bulk-history button[data-undo="{kept_out.token}"]')
    assert "Undone: 2 pairs" in page.content()
    assert not SnapshotExclusion.objects.exists()
    assert set(AdjudicationRequest.objects.values_list("pair_id", flat=True)) == shown
    assert "undone" in page.locator(f'#bulk-history tr[data-bulk="{kept_out.token}"]').inner_text()

    sent = PairBulkAction.objects.get(kind=BulkActionKind.ADJUDICATE)
    with page.expect_navigation():
        page.click(f'#bulk-history button[data-undo="{sent.token}"]')
    assert not AdjudicationRequest.objects.exists()


def test_a_writing_task_shows_the_participant_no_template_comment(site_page):
    page = site_page
    dataset, genre = writing_setup(slug="issue73-writing")
    add_premises(dataset, genre, 2)
    study = Study.objects.create(
        slug="issue73-writing", name="Write", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="W-73"
    )
    page.goto(f"{page.site}/study/{study.slug}/?" + PROLIFIC.format(pid="7a1b2c3d4e5f6a7b8c9d0e73", session="w-73"))
    page.wait_for_url(re.compile(r"/write/[0-9a-f-]+/$"))

    text = page.inner_text("body")
    assert "Premise number" in text  # the task itself is on screen
    for comment_mark in ("{#", "#}", "{%", "%}", "issue 54"):
        assert comment_mark not in text, comment_mark


def test_end_preview_lands_on_the_dashboard_study_page(site_page, make_researcher):
    page = site_page
    dataset, genre = writing_setup(slug="issue73-preview")
    add_premises(dataset, genre, 2)
    study = Study.objects.create(
        slug="issue73-preview",
        name="Preview me",
        dataset=dataset,
        task_kind=TaskKind.WRITING,
        completion_code="P-73",
        access=StudyAccess.OPEN,
    )
    make_researcher(username="ada", password=PASSWORD)
    study_page = f"/dashboard/studies/{study.slug}/"
    log_in(page, "ada", study_page)
    page.wait_for_url(f"{page.site}{study_page}")

    with page.expect_navigation():
        page.click("#preview-study")
    with page.expect_navigation():
        page.click("main form button[type=submit]")
    page.wait_for_url(re.compile(r"/write/[0-9a-f-]+/$"))
    assert BANNER in page.inner_text("body")

    with page.expect_navigation():
        page.click(".preview-banner button[type=submit]")
    assert page.url == f"{page.site}{study_page}"
    assert "ended: nothing of it was saved" in page.inner_text("body")
    assert BANNER not in page.inner_text("body")
