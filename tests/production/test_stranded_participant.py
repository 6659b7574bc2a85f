"""A participant stranded when the pool runs out mid-visit, in headless Chromium against the site as
it is deployed (gunicorn, DEBUG off, WhiteNoise's collected files, the suite's Celery worker): the
page says how many of the study's tasks they did and gives the partial-completion code, and the
researcher's study page counts them as stranded, not in progress.

The server and the page come from test_production_pass.py, so both passes start gunicorn alike.
"""

import re

import pytest

from collection.models import WritingClaim
from crowd.models import ClaimStatus, StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

# The pass's fixtures, imported so that pytest finds them here: the module's gunicorn, a recorded
# page on it, the production password hashers; log_in is the pass's way through the login form.
from .test_production_pass import (  # noqa: F401
    PROLIFIC,
    _real_password_hashing,
    browser_page,
    log_in,
    production_site,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.celery_worker,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

SENTENCES = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}
FIRST = "6e1b2c3d4e5f6a7b8c9d0e1f"
SECOND = "6f1b2c3d4e5f6a7b8c9d0e1f"


def arrive(page, slug: str, participant: str) -> None:
    page.goto(f"{page.site}/study/{slug}/?" + PROLIFIC.format(pid=participant, session=f"ps-{participant}"))


def write_one(page) -> None:
    """Write the three sentences of the line on the page and send them."""
    page.wait_for_url(re.compile(r"/write/[0-9a-f-]+/$"))
    task = page.url
    for name, text in SENTENCES.items():
        page.fill(f"#id_{name}", text)
    page.click("#submit-hypotheses")
    page.wait_for_url(lambda url: url != task)


def funnel_figure(page, step: str) -> str:
    return page.locator(f'#table-funnel tr[data-step="{step}"] td.num[data-value]').first.get_attribute("data-value")


def test_a_writer_whose_pool_runs_out_mid_visit_is_told_n_of_m_and_given_the_partial_code(
    browser_page,  # noqa: F811
    chromium_browser,
    make_researcher,
):
    # Three lines, written once each, for visits of two tasks: the second participant can do one.
    dataset, genre = writing_setup(slug="production-stranding")
    add_premises(dataset, genre, 3)
    study = make_study(
        dataset,
        slug="production-stranding",
        tasks_per_batch=2,
        partial_completion_code="PARTIAL-7",
        completion_url="https://app.prolific.com/submissions/complete?cc={code}",
    )
    site = browser_page.site

    # The first participant, in a browser of their own, takes two of the three lines and finishes.
    first_context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    first = first_context.new_page()
    first.set_default_timeout(20_000)
    first.site = site
    arrive(first, study.slug, FIRST)
    write_one(first)
    write_one(first)
    first.wait_for_selector("#completion-code")
    first_context.close()

    # The second writes the last line; the pool is then empty with one of their two tasks to go.
    page = browser_page
    arrive(page, study.slug, SECOND)
    write_one(page)
    stranded = page.locator("#stranded")
    stranded.wait_for()
    text = stranded.inner_text()
    assert "You did 1 of the 2 tasks" in text
    assert page.inner_text("#partial-code code") == "PARTIAL-7"
    assert page.get_attribute("#partial-return", "href") == "https://app.prolific.com/submissions/complete?cc=PARTIAL-7"
    assert page.locator("#completion-code").count() == 0
    visit = StudySession.objects.get(study=study, worker__external_id=SECOND)
    assert visit.stranded_at is not None and visit.completed_at is None and not visit.completion_code
    assert visit.tasks_done == 1
    assert not WritingClaim.objects.filter(study_session=visit, status=ClaimStatus.OPEN).exists()
    page.recorder.assert_clean("stranded writer", {"css/site.css", "css/collection.css"})

    # The researcher's study page, in a browser of their own: one stranded, none in progress.
    make_researcher(username="grace", password="research-pass-1")
    researcher_context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    researcher = researcher_context.new_page()
    researcher.set_default_timeout(20_000)
    researcher.site = site
    study_page = f"/dashboard/studies/{study.slug}/"
    log_in(researcher, "grace", "research-pass-1", study_page)
    researcher.wait_for_url(re.compile(re.escape(study_page) + "$"))
    assert funnel_figure(researcher, "stranded") == "1"
    assert funnel_figure(researcher, "in_progress") == "0"
    assert funnel_figure(researcher, "completed") == "1"
    assert "given the partial-completion code PARTIAL-7" in researcher.inner_text(
        '#table-funnel tr[data-step="stranded"]'
    )
    researcher_context.close()
