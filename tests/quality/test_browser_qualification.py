"""A Prolific worker meets a qualification test in a real browser: one fails politely, one passes
with the keyboard alone and goes on to the study's tasks."""

import pytest

from crowd.models import Study
from quality.models import QualificationAttempt, QualificationDrawItem
from tests.quality.qualification_helpers import qualified_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LINK = "/study/{slug}/?PROLIFIC_PID={pid}&STUDY_ID=60aa11bb22cc33dd44ee55ff&SESSION_ID=browser-q-{pid}"


def expected_keys(page, test):
    """The key (1/2/3) that answers each pair on the page as the researchers did (the judge reads
    the page's item tokens from the try's stored draw; the page itself names no pair)."""
    keys = {"entailment": "1", "neutral": "2", "contradiction": "3"}
    pairs = page.locator(".validation-pair")
    tokens = [pairs.nth(i).get_attribute("data-item") for i in range(pairs.count())]
    expected = {
        item.token: item.reference.label
        for item in QualificationDrawItem.objects.filter(token__in=tokens, draw__test=test).select_related("reference")
    }
    return [keys[expected[token]] for token in tokens]


def test_a_worker_fails_the_test_and_is_told_politely(page, live_server):
    study, test = qualified_study(max_attempts=1)
    page.goto(live_server.url + LINK.format(slug=study.slug, pid="FAILER00001"))
    page.locator("#qualification-test").wait_for()
    keys = {"1": "2", "2": "3", "3": "1"}  # every answer wrong
    for key in expected_keys(page, test):
        page.keyboard.press(keys[key])
    page.locator("#answered-count").get_by_text("4 of 4 answered").wait_for()
    page.locator("#submit-batch").click()
    refusal = page.locator("#not-admitted")
    refusal.wait_for()
    assert "no tries left" in refusal.inner_text() and "you will not be penalised" in refusal.inner_text()
    attempt = QualificationAttempt.objects.get()
    assert (attempt.correct, attempt.passed) == (0, False)


def test_a_worker_passes_with_the_keyboard_and_starts_writing(page, live_server):
    study, test = qualified_study()
    page.goto(live_server.url + LINK.format(slug=study.slug, pid="PASSER00001"))
    page.locator("#qualification-test").wait_for()
    Study.objects.filter(pk=study.pk).update(require_signed_link=True)  # trust follows verified ids only
    for key in expected_keys(page, test):
        page.keyboard.press(key)
    page.locator("#answered-count").get_by_text("4 of 4 answered").wait_for()
    page.locator("#submit-batch").click()
    page.locator("#premise").wait_for()  # the writing task
    assert "/write/" in page.url
    page.get_by_text("You passed the qualification test").wait_for()
    attempt = QualificationAttempt.objects.get()
    assert (attempt.correct, attempt.total, attempt.passed) == (4, 4, True)
    assert attempt.worker.is_trusted
