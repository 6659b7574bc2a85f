"""A validator from Prolific labels a batch of five in a real browser with the keys 1/2/3 only."""

import re

import pytest

from corpus.models import Label, Pair, ValidationLabel
from crowd.models import Study, StudySession, TaskKind
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair, pair_of_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KEY_LABEL = {"1": Label.ENTAILMENT, "2": Label.NEUTRAL, "3": Label.CONTRADICTION}


def test_validator_labels_five_pairs_with_the_keyboard_and_gets_the_code(page, live_server):
    dataset = make_dataset("browser-validation")
    pairs = [make_pair(dataset, label=Label.NEUTRAL) for _ in range(5)]
    study = Study.objects.create(
        slug="browser-validation",
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=1,
        completion_code="VALID-CODE-5",
    )
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=6a1b2c3d4e5f6a7b8c9d0e1f"
        "&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=validation-session-1"
    )
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    fieldsets = page.locator("fieldset.validation-pair")
    assert fieldsets.count() == 5
    assert page.get_by_role("link", name="validation FAQ").count() == 1
    items = [fieldsets.nth(i).get_attribute("data-item") for i in range(5)]
    order = [pair_of_item()[item] for item in items]
    assert set(order) == {pair.pk for pair in pairs}

    keys = ["1", "3", "2", "3", "1"]
    for index, key in enumerate(keys):
        # Focus sits on the pair to answer; after each key it moves on to the next one.
        assert page.evaluate("document.activeElement.dataset.item") == items[index]
        page.keyboard.press(key)
        assert fieldsets.nth(index).locator(f'input[data-key="{key}"]').is_checked()
    assert page.evaluate("document.activeElement.id") == "submit-batch"
    assert page.locator("#answered-count").inner_text() == "5 of 5 answered"
    page.keyboard.press("Enter")

    page.wait_for_url(f"{live_server.url}/validate/next/")
    code = page.locator("#completion-code").inner_text()
    assert code.startswith("VALID-CODE-5-") and code == StudySession.objects.get().completion_code

    for pk, key in zip(order, keys, strict=False):
        pair = Pair.objects.get(pk=pk)
        expected = {Label.ENTAILMENT: 0, Label.NEUTRAL: 1, Label.CONTRADICTION: 0}
        expected[KEY_LABEL[key]] += 1
        assert pair.label_count == 2
        assert (pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes) == (
            expected[Label.ENTAILMENT],
            expected[Label.NEUTRAL],
            expected[Label.CONTRADICTION],
        )
        assert ValidationLabel.objects.get(pair=pair, position=2).label == KEY_LABEL[key]
    assert set(ValidationClaim.objects.values_list("status", flat=True)) == {"submitted"}


def test_a_missing_label_is_named_and_the_choices_are_kept(page, live_server, make_worker):
    dataset = make_dataset("browser-validation-2")
    for _ in range(5):
        make_pair(dataset)
    make_worker(username="val-browser", password="val-browser-pass")
    page.goto(f"{live_server.url}/accounts/login/?next=/validate/next/")
    page.fill("#id_username", "val-browser")
    page.fill("#id_password", "val-browser-pass")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    # Two answers by mouse, two by key, one left out.
    page.locator("fieldset.validation-pair").nth(0).get_by_text("Might be correct").click()
    page.locator("fieldset.validation-pair").nth(1).get_by_text("Definitely incorrect").click()
    page.keyboard.press("1")
    page.keyboard.press("1")
    page.get_by_role("button", name=re.compile("Submit all 5")).click()
    assert "missing: pair 5" in page.get_by_role("alert").inner_text()
    assert page.locator("fieldset.validation-pair input:checked").count() == 4
    assert not ValidationLabel.objects.filter(worker__user__username="val-browser").exists()
    # Focus waits on the missing pair: one key finishes it.
    page.keyboard.press("2")
    page.get_by_role("button", name=re.compile("Submit all 5")).click()
    page.wait_for_url(f"{live_server.url}/validate/next/")
    assert "No pairs to validate right now" in page.content()
    assert ValidationLabel.objects.filter(worker__user__username="val-browser").count() == 5


def test_on_a_phone_the_page_opens_at_the_instructions_and_keys_still_answer_the_first_pair(
    page, live_server, make_worker
):
    """The page scrolled ~865 px to its first pair on a 390 px phone, past the labels' definitions,
    so a first-time participant never saw them; a refused send still scrolls to the gap."""
    dataset = make_dataset("browser-validation-phone")
    for _ in range(5):
        make_pair(dataset)
    make_worker(username="val-phone", password="val-phone-pass")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/accounts/login/?next=/validate/next/")
    page.fill("#id_username", "val-phone")
    page.fill("#id_password", "val-phone-pass")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    page.wait_for_load_state("load")
    assert page.evaluate("window.scrollY") == 0
    definitions = page.locator(".validation-instructions").get_by_text("Definitely correct").first
    top = definitions.evaluate("el => el.getBoundingClientRect().top")
    assert 0 <= top < 844, f"the first definition is at {top} px, off the screen"
    first = page.locator("fieldset.validation-pair").nth(0)
    assert page.evaluate("document.activeElement.dataset.item") == first.get_attribute("data-item")
    page.keyboard.press("1")  # the keys answer the first pair without scrolling to it first
    assert first.locator('input[data-key="1"]').is_checked()
    page.get_by_role("button", name=re.compile("Submit all 5")).click()
    page.wait_for_load_state("load")
    assert "missing" in page.get_by_role("alert").inner_text()
    assert page.evaluate("window.scrollY") > 0  # a refused send shows the problem


def test_a_touch_phone_shows_no_key_badges_a_keyboard_does(chromium_browser, page, live_server, make_worker):
    """Keys 1/2/3 on the buttons and in the instructions mean nothing on a phone with no keyboard."""
    dataset = make_dataset("browser-validation-touch")
    for _ in range(5):
        make_pair(dataset)
    make_worker(username="val-touch", password="val-touch-pass")
    phone = chromium_browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        for screen, shown in ((phone.new_page(), False), (page, True)):
            screen.goto(f"{live_server.url}/accounts/login/?next=/validate/next/")
            screen.fill("#id_username", "val-touch")
            screen.fill("#id_password", "val-touch-pass")
            screen.get_by_role("button", name="Log in").click()
            screen.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
            assert screen.locator(".label-button kbd").first.is_visible() is shown
            assert screen.locator(".validation-instructions .key-hint").first.is_visible() is shown
            assert screen.locator(".label-button").first.is_visible()  # the buttons themselves stay
    finally:
        phone.close()
