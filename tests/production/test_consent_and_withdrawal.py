"""Consent → task → withdraw in headless Chromium against the site as it is deployed (gunicorn,
DEBUG off, WhiteNoise's collected files, the suite's Celery worker): tests/consent/test_browser_consent.py
drives the same path on the development server, where a middleware or a setting that production
alone has could let a task past the information sheet unseen.

The server and the page come from test_production_pass.py, so both passes start gunicorn alike.
"""

import re

import pytest

from consent import services as consent_services
from consent.models import ConsentAnswer, ConsentDecision, Withdrawal
from corpus.models import ValidationLabel
from crowd.models import ClaimStatus, StudySession
from tests.consent.helpers import SHEET, STATEMENTS, validation_study
from validation.models import ValidationClaim

# The pass's fixtures, imported so that pytest finds them here: the module's gunicorn, a recorded
# page on it, the production password hashers.
from .test_production_pass import (  # noqa: F401
    PROLIFIC,
    _real_password_hashing,
    browser_page,
    production_site,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.celery_worker,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

REVISED_SHEET = SHEET + "\n\nRevised: your answers are kept without your platform id."


def consenting_study(slug: str):
    """A validation study of three batches whose information sheet was revised once: a decision must
    name version 2, the one shown."""
    study = validation_study(slug, pairs=12, no_consent_code="NOCONSENT1")
    consent_services.save_information_sheet(study, REVISED_SHEET, STATEMENTS)
    return study


def test_a_participant_sees_the_sheet_first_agrees_works_withdraws_and_gets_no_more_tasks(browser_page):  # noqa: F811
    page = browser_page
    study = consenting_study("production-consent")
    page.goto(f"{page.site}/study/{study.slug}/?" + PROLIFIC.format(pid="9c1b2c3d4e5f6a7b8c9d0e1f", session="pc-1"))
    # The sheet comes before any task: no claim exists until the participant agrees.
    page.wait_for_url(re.compile(r"/study/production-consent/consent/$"))
    assert "Version 2." in page.inner_text("#information-sheet")
    assert "Revised: your answers are kept" in page.inner_text("#sheet-text")
    assert not ValidationClaim.objects.exists()

    page.click("#consent-agree")
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    session = StudySession.objects.get(study=study)
    decision = ConsentDecision.objects.select_related("sheet").get(study_session=session)
    assert decision.answer == ConsentAnswer.AGREED and decision.sheet.version == 2

    # The first batch, answered by keys and sent; the second batch is then open under a hold.
    fieldsets = page.locator("fieldset.validation-pair")
    fieldsets.first.wait_for()
    first_batch, answered = page.url, fieldsets.count()
    for _ in range(answered):
        page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/validate/batch/" in url and url != first_batch)
    assert ValidationLabel.objects.filter(worker=session.worker).count() == answered
    session.refresh_from_db()
    assert session.tasks_done == 1 and session.completed_at is None
    open_claims = ValidationClaim.objects.filter(study_session=session, status=ClaimStatus.OPEN)
    assert open_claims.exists()

    page.click("#withdraw-link")
    page.wait_for_selector("#withdraw-confirm")
    page.click("#withdraw-confirm")
    page.wait_for_selector("#withdrawn")
    assert "You have withdrawn" in page.inner_text("#withdrawn")
    withdrawal = Withdrawal.objects.get(study_session=session)
    assert withdrawal.claims_released >= 1
    assert not open_claims.exists()
    assert page.locator("#withdraw-link").count() == 0
    page.recorder.assert_clean(
        "consent, a batch, withdrawal", {"css/site.css", "css/validation.css", "js/validation.js"}
    )

    # The next task is refused, whichever door asks: the next-batch page says why and claims nothing.
    claims_before = ValidationClaim.objects.count()
    page.goto(f"{page.site}/validate/next/")
    assert "You have withdrawn" in page.content()
    assert ValidationClaim.objects.count() == claims_before
    assert not ValidationClaim.objects.filter(study_session=session, status=ClaimStatus.OPEN).exists()


def test_a_participant_who_declines_gets_the_no_consent_page_and_never_a_task(browser_page):  # noqa: F811
    page = browser_page
    study = consenting_study("production-decline")
    page.goto(f"{page.site}/study/{study.slug}/?" + PROLIFIC.format(pid="9d1b2c3d4e5f6a7b8c9d0e1f", session="pd-1"))
    page.wait_for_url(re.compile(r"/study/production-decline/consent/$"))

    page.click("#consent-decline")
    page.wait_for_url(re.compile(r"/study/production-decline/no-consent/$"))
    assert page.inner_text("#no-consent-code") == "NOCONSENT1"
    session = StudySession.objects.get(study=study)
    assert ConsentDecision.objects.get(study_session=session).answer == ConsentAnswer.DECLINED

    # Asking for a task again, by the task door or the study link, leads back to the same page.
    for path in (
        "/validate/next/",
        f"/study/{study.slug}/?" + PROLIFIC.format(pid="9d1b2c3d4e5f6a7b8c9d0e1f", session="pd-1"),
    ):
        page.goto(page.site + path)
        page.wait_for_url(re.compile(r"/study/production-decline/no-consent/$"))
    assert not ValidationClaim.objects.exists()
    assert not ValidationLabel.objects.filter(worker=session.worker).exists()
    page.recorder.assert_clean("consent declined", {"css/site.css"})
