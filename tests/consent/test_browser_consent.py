"""Consent → task → withdraw in a real browser: the sheet before the first task, the agree button,
the task, the quiet withdraw link, and the claims given back."""

import re

import pytest

from consent.models import ConsentAnswer, ConsentDecision, Withdrawal
from crowd.models import ClaimStatus, StudySession
from validation.models import ValidationClaim

from .helpers import validation_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_consent_then_a_task_then_withdrawal(chromium_browser, live_server):
    study = validation_study("browser-consent")
    page = chromium_browser.new_page()
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=8a1b2c3d4e5f6a7b8c9d0e1f"
        "&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=consent-session-1"
    )
    page.wait_for_url(re.compile(r"/study/browser-consent/consent/$"))
    assert "We study how people judge sentences" in page.inner_text("#sheet-text")
    assert not ValidationClaim.objects.exists()

    page.click("#consent-agree")
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    session = StudySession.objects.get()
    assert ConsentDecision.objects.get(study_session=session).answer == ConsentAnswer.AGREED
    assert ValidationClaim.objects.filter(study_session=session, status=ClaimStatus.OPEN).exists()

    page.click("#withdraw-link")
    page.wait_for_selector("#withdraw-confirm")
    page.click("#withdraw-confirm")
    page.wait_for_selector("#withdrawn")
    assert Withdrawal.objects.filter(study_session=session).exists()
    assert not ValidationClaim.objects.filter(status=ClaimStatus.OPEN).exists()
    assert page.locator("#withdraw-link").count() == 0
    page.goto(f"{live_server.url}/validate/next/")
    assert "You have withdrawn" in page.content()
    page.close()
