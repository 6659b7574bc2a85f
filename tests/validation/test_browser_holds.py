"""A validator sees their batch's hold and keeps their choices across its end,
on a phone and on a desktop: the time left counts down, a warning with "More time" comes before the
end and extends the hold, and at the end the page says so once, shuts its answers and send button,
and "Get these pairs back" brings the same pairs back with the choices kept in the browser."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from corpus.models import Label, Pair
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from tests.present import present
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(page_on_phone_and_desktop):
    return page_on_phone_and_desktop


def arrive(page, live_server):
    dataset = make_dataset("browser-holds")
    for _ in range(10):
        make_pair(dataset, label=Label.NEUTRAL)
    study = Study.objects.create(
        slug="browser-holds",
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=2,
        completion_code="HOLDS-1",
    )
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=5a1b2c3d4e5f6a7b8c9d0e1f"
        "&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=holds-session-1"
    )
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    return page.url.rstrip("/").rsplit("/", 1)[1]


def hold_ends_in(batch, delta):
    ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() + delta)


def answered(page):
    return page.locator("#answered-count").inner_text()


def fits(page):
    width = page.viewport_size["width"]
    return page.evaluate("document.documentElement.scrollWidth") <= width


def test_the_hold_counts_down_warns_extends_and_comes_back_with_the_choices(page, live_server):
    batch = arrive(page, live_server)
    assert re.fullmatch(r"(19|20) min \d\d s", page.locator("#batch-expiry [data-hold-countdown]").inner_text())
    assert page.locator("#batch-expiry").is_visible()
    assert not page.locator("#hold-warning").is_visible()  # 20 minutes left: no warning yet
    for key in ("1", "3", "2"):
        page.keyboard.press(key)
    assert answered(page) == "3 of 5 answered"

    # Two minutes left: the warning, with its button, and "More time" extends the same batch.
    hold_ends_in(batch, timedelta(minutes=2))
    page.reload()
    page.locator("#hold-warning").wait_for(state="visible")
    assert fits(page)
    page.click("#hold-more-time")
    page.wait_for_url(re.compile(rf"/validate/batch/{batch}/$"))
    assert "more time" in page.locator(".messages").inner_text()
    assert not page.locator("#hold-warning").is_visible()
    assert answered(page) == "3 of 5 answered"  # the browser's choices, back
    left = present(ValidationClaim.objects.filter(batch=batch).first()).expires_at - timezone.now()
    assert left > timedelta(minutes=19)

    # The hold runs out on the open page: one message, the answers and the send button shut.
    hold_ends_in(batch, timedelta(seconds=3))
    page.reload()
    page.locator("#hold-expired").wait_for(state="visible")
    assert not page.locator("#batch-expiry").is_visible()
    assert not page.locator("[data-draft-note]").is_visible()
    assert page.locator("#submit-batch").is_disabled()
    page.keyboard.press("1")  # the keys no longer choose
    assert answered(page) == "3 of 5 answered"
    assert fits(page)

    # Nobody took the pairs: they come back, the same ones, with the choices kept.
    page.click("#hold-take-back")
    page.wait_for_url(re.compile(rf"/validate/batch/{batch}/$"))
    assert "these pairs again" in page.locator(".messages").inner_text()
    assert answered(page) == "3 of 5 answered"
    assert page.locator("#submit-batch").is_enabled()
    assert not page.locator("#hold-expired").is_visible()
    claims = ValidationClaim.objects.filter(batch=batch)
    assert all(claim.status == ClaimStatus.OPEN for claim in claims)


def test_pairs_taken_meanwhile_do_not_come_back_and_a_new_batch_is_offered(page, live_server):
    batch = arrive(page, live_server)
    page.keyboard.press("1")
    hold_ends_in(batch, -timedelta(minutes=1))
    # Meanwhile one of the pairs got its five labels.
    Pair.objects.filter(pk=present(ValidationClaim.objects.filter(batch=batch).first()).pair_id).update(label_count=5)
    page.reload()
    assert page.locator("#hold-expired").is_visible() and page.locator("#submit-batch").is_disabled()
    page.click("#hold-take-back")
    page.wait_for_url(re.compile(rf"/validate/batch/{batch}/\?taken=taken$"))
    assert "went to other participants" in page.locator("#hold-expired").inner_text()
    assert not page.locator("#hold-take-back").count()
    page.click("#hold-new-batch")
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    assert batch not in page.url
    assert fits(page)


def test_a_take_back_refused_while_another_waits_says_why_and_keeps_the_choices(page, live_server, make_worker):
    batch = arrive(page, live_server)
    for key in ("1", "3"):
        page.keyboard.press(key)
    # Another participant of the study was told "no task" a minute ago and holds nothing since.
    study = Study.objects.get(slug="browser-holds")
    waiter = StudySession.objects.create(study=study, worker=make_worker(), external_session_id="waiter")
    StudySession.objects.filter(pk=waiter.pk).update(no_task_at=timezone.now() - timedelta(minutes=1))
    hold_ends_in(batch, -timedelta(minutes=1))
    page.reload()
    page.click("#hold-take-back")
    page.wait_for_url(re.compile(rf"/validate/batch/{batch}/\?taken=back_waited_for$"))
    said = page.locator("#hold-not-back").inner_text()
    assert "other participants are waiting for work" in said and "still kept in this browser" in said
    assert not page.locator("#hold-take-back").count()
    assert answered(page) == "2 of 5 answered"  # the browser's choices, still there
    assert page.locator("#submit-batch").is_disabled()
    assert fits(page)
