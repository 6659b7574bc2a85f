"""The grammaticality task answered with the keys 1/2/3 in a real browser at phone width."""

import pytest

from corpus.models import GrammaticalityJudgment

from .test_grammaticality_page import open_dataset

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_keys_answer_each_sentence_in_turn_at_phone_width(page, live_server, make_worker):
    _, pairs = open_dataset("gram-keys")
    worker = make_worker(username="keys", password="keys-pass-1")
    page.set_viewport_size({"width": 375, "height": 740})
    page.goto(f"{live_server.url}/accounts/login/?next=/validate/grammaticality/")
    page.fill("#id_username", "keys")
    page.fill("#id_password", "keys-pass-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/validate/grammaticality/")
    fieldsets = page.locator("fieldset.validation-pair")
    assert fieldsets.count() == 3
    shown = [int(fieldsets.nth(i).get_attribute("data-pair")) for i in range(3)]
    for number, key in enumerate(("3", "1", "2")):
        page.keyboard.press(key)
        assert fieldsets.nth(number).locator(f'input[data-key="{key}"]').is_checked()
    page.keyboard.press("9")  # no button has it: nothing changes
    assert page.text_content("#answered-count") == "3 of 3 answered"
    # Focus moved past the last sentence to the button: Enter sends the page.
    assert page.evaluate("document.activeElement.id") == "submit-batch"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "Saved. Thank you!" in page.content()
    saved = dict(GrammaticalityJudgment.objects.filter(worker=worker).values_list("pair_id", "judgment"))
    assert saved == dict(zip(shown, ["major", "none", "minor"], strict=True))
    assert {p.pk for p in pairs} == set(shown)
