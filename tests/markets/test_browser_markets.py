"""The market panel in a real browser: a researcher connects a study to Prolific (the market
STAND-IN, tests/markets/standin.py), tests the connection, approves the completed sessions and
pays the owed bonuses, each in one click."""

import re

import pytest

from markets.models import MarketConnection, ReviewState, SessionReview

from .conftest import arrive, ledger_paid, make_study, owe_bonuses

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_researcher_connects_tests_approves_and_pays_in_the_browser(
    page, live_server, standin, django_user_model, make_researcher
):
    study = make_study()
    sessions = arrive(study, standin, django_user_model, 3)
    owe_bonuses(study, sessions, per_session=2)
    make_researcher(username="payer", password="payer-pass-1")

    page.goto(f"{live_server.url}/accounts/login/?next=/dashboard/markets/%3Fstudy%3D{study.slug}")
    page.fill("#id_username", "payer")
    page.fill("#id_password", "payer-pass-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/dashboard/markets/"))

    # A wrong token first: the test says what is wrong in one line.
    page.select_option("#market", "prolific")
    page.fill("#token", "not-the-token")
    page.fill("#market_study_id", standin.study_id)
    page.fill("#webhook_secret", "hook-secret")
    page.locator("#save-connection").click()
    page.locator("#test-connection").click()
    assert "Prolific refused the API token (401): Invalid token." in page.locator(".messages").inner_text()

    page.fill("#token", standin.prolific_token)
    page.locator("#save-connection").click()
    assert "credentials sealed" in page.locator(".messages").inner_text()
    page.locator("#test-connection").click()
    assert "Connected to Prolific" in page.locator(".messages").inner_text()
    assert (
        page.locator("#webhook-url")
        .inner_text()
        .endswith(f"/markets/hooks/prolific/{MarketConnection.objects.get().webhook_key}/")
    )
    # The page never shows a stored secret.
    assert standin.prolific_token not in page.content() and "hook-secret" not in page.content()

    assert page.locator("#table-to-approve tbody tr").count() == 3
    page.locator("#approve-all").click()
    assert "Approved on the market: 3." in page.locator(".messages").inner_text()
    page.locator("#nothing-to-approve").wait_for()
    assert SessionReview.objects.filter(state=ReviewState.CONFIRMED).count() == 3

    assert page.locator("#owed-count").inner_text() == "6"
    page.locator("#pay-owed").click()
    assert "Paid on the market: 6 bonus(es), 3.00 GBP." in page.locator(".messages").inner_text()
    assert page.locator("#owed-count").inner_text() == "0"
    assert page.locator("#paid-count").inner_text() == "6"
    page.locator("#pay-owed").click()  # a second click pays nothing
    assert "Paid on the market: 0 bonus(es), 0.00 GBP." in page.locator(".messages").inner_text()
    assert standin.prolific_paid_cents() == {s.worker.external_id: 100 for s in sessions}
    assert len(standin.bulk_pay_calls) == 1
    assert ledger_paid(study).count() == 6
    actions = [page.locator("#table-calls tbody tr").nth(i).get_attribute("data-action") for i in range(6)]
    assert "bonus.pay" in actions and "bonus.create" in actions
