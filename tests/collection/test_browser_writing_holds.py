"""A writer sees their line's hold, on a phone and on a desktop: the time left,
a warning with "More time" before the end, and when it ran out on the open page, one message, the
fields and the send button shut, and "Get this line back" returns the same line with the typed
sentences kept in the browser."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from collection.models import WritingClaim
from crowd.models import Study, TaskKind
from tests.collection.writing_helpers import add_premises, writing_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(page_on_phone_and_desktop):
    return page_on_phone_and_desktop


def hold_ends_in(token, delta):
    WritingClaim.objects.filter(token=token).update(expires_at=timezone.now() + delta)


def test_the_line_warns_extends_and_comes_back_with_the_sentences(page, live_server):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    study = Study.objects.create(
        slug="holds", name="Write", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="W-H"
    )
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=6a1b2c3d4e5f6a7b8c9d0e1f"
        "&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=holds-writing-1"
    )
    page.wait_for_url(re.compile(r"/write/[0-9a-f-]+/$"))
    task = page.url
    token = task.rstrip("/").rsplit("/", 1)[1]
    assert re.fullmatch(r"(29|30) min \d\d s", page.locator("#expiry [data-hold-countdown]").inner_text())
    assert not page.locator("#hold-warning").is_visible()
    page.fill("#id_entailment", "A boat departed early in the morning.")

    hold_ends_in(token, timedelta(minutes=2))
    page.reload()
    page.locator("#hold-warning").wait_for(state="visible")
    page.click("#hold-more-time")
    page.wait_for_url(task)
    assert "more time" in page.locator(".messages").inner_text()
    assert WritingClaim.objects.get(token=token).expires_at - timezone.now() > timedelta(minutes=29)
    assert page.input_value("#id_entailment") == "A boat departed early in the morning."

    hold_ends_in(token, timedelta(seconds=3))
    page.reload()
    page.locator("#hold-expired").wait_for(state="visible")
    assert page.locator("#submit-hypotheses").is_disabled() and page.locator("#id_neutral").is_disabled()
    assert not page.locator("[data-draft-note]").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    page.click("#hold-take-back")
    page.wait_for_url(task)
    assert "this line again" in page.locator(".messages").inner_text()
    assert page.input_value("#id_entailment") == "A boat departed early in the morning."
    assert page.locator("#submit-hypotheses").is_enabled()
