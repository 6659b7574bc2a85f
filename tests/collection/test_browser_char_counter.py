"""The writing form's live character counters (static/js/char_counter.js), in a real browser."""

import pytest

from tests.collection.writing_helpers import add_premises, writing_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_counters_follow_typing_and_the_box_stops_at_the_limit(page, live_server, make_worker, settings):
    settings.NLI = {**settings.NLI, "MAX_HYPOTHESIS_CHARS": 40}
    dataset, genre = writing_setup(slug="browser-counter")
    add_premises(dataset, genre, 1)
    make_worker(username="counter", password="counter-pass-1")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "counter")
    page.fill("input[name=password]", "counter-pass-1")
    page.click("button[type=submit]")
    page.get_by_role("link", name="Next writing task").click()
    counter = page.locator("#id_neutral-counter")
    counter.get_by_text("0 / 40 characters").wait_for()
    page.locator("#id_neutral").press_sequentially("The boat sailed.")
    counter.get_by_text("16 / 40 characters").wait_for()
    page.locator("#id_neutral").press_sequentially(" It carried forty tourists to an island far away.")
    counter.get_by_text("40 / 40 characters").wait_for()  # maxlength stops the typing at the limit
    assert len(page.locator("#id_neutral").input_value()) == 40
    report_counter = page.locator("#id_problem_report-counter")
    page.locator(".problem-report summary").click()
    page.locator("#id_problem_report").fill("Cut off.")
    report_counter.get_by_text("8 / 500 characters").wait_for()
