"""A validator's choices are never lost: they survive a reload, the back button and a failed send,
and are dropped from the browser once the server has saved them. The page says where the worker
is (batch n of m, time left) in the worker's own clock, and fits a phone."""

import re

import pytest

from corpus.models import Label
from crowd.models import Study, TaskKind

from .validation_factories import make_dataset, make_pair

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def arrive(page, live_server, tasks_per_batch=2):
    dataset = make_dataset("browser-drafts")
    for _ in range(10):
        make_pair(dataset, label=Label.NEUTRAL)
    study = Study.objects.create(
        slug="browser-drafts",
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=tasks_per_batch,
        completion_code="DRAFTS-1",
    )
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=7a1b2c3d4e5f6a7b8c9d0e1f"
        "&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=drafts-session-1"
    )
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))


def chosen(page):
    return [page.locator(f"fieldset.validation-pair >> nth={i} >> input:checked").count() for i in range(5)]


def draft_keys(page):
    return page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('nli-draft:'))")


def test_choices_survive_a_reload_a_failed_send_and_the_back_button(page, live_server):
    arrive(page, live_server)
    assert page.locator("#batch-progress").inner_text() == "Batch 1 of 2 of this study."
    for key in ("1", "3", "2"):
        page.keyboard.press(key)
    page.reload()
    assert chosen(page) == [1, 1, 1, 0, 0]
    assert page.locator("[data-draft-note]").is_visible()
    assert page.locator("#answered-count").inner_text() == "3 of 5 answered"

    page.keyboard.press("3")
    page.keyboard.press("1")
    batch_url = page.url
    page.goto(f"{live_server.url}/validate/faq/")  # the worker looks something up, then goes back
    page.go_back()
    page.wait_for_url(batch_url)
    assert chosen(page) == [1, 1, 1, 1, 1]

    # The network fails as the worker sends: the server never sees the labels, the browser keeps them.
    page.route(
        re.compile(r".*/validate/batch/.*"),
        lambda route: route.abort() if route.request.method == "POST" else route.continue_(),
    )
    with page.expect_event("requestfailed"):
        page.click("#submit-batch")
    page.unroute(re.compile(r".*/validate/batch/.*"))
    page.goto(batch_url)
    assert chosen(page) == [1, 1, 1, 1, 1]
    assert draft_keys(page) == [f"nli-draft:batch-{batch_url.rstrip('/').rsplit('/', 1)[1]}"]

    page.click("#submit-batch")
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))  # the next batch of the study
    assert page.locator("#batch-progress").inner_text() == "Batch 2 of 2 of this study."
    assert draft_keys(page) == []  # the server saved the batch: the browser's copy is gone
    assert not page.locator("fieldset.validation-pair input:checked").count()


def test_times_are_in_the_workers_clock_and_the_page_fits_a_phone(page, live_server):
    page.context.close()
    context = page.context.browser.new_context(timezone_id="Asia/Tokyo", viewport={"width": 390, "height": 844})
    tokyo = context.new_page()
    arrive(tokyo, live_server)
    shown = tokyo.locator("#batch-expiry time").inner_text()
    assert "UTC" not in shown
    utc = tokyo.locator("#batch-expiry time").get_attribute("datetime")
    expected = tokyo.evaluate(f"new Date('{utc}').toLocaleTimeString([], {{hour: '2-digit', minute: '2-digit'}})")
    assert shown == expected
    assert tokyo.evaluate("document.documentElement.scrollWidth") <= 390
    context.close()
