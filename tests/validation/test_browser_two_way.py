"""A validator labels a two-way (DNC-style) batch in a real browser with the keys 1 and 2 only."""

import re

import pytest

from corpus.models import LabelScheme, Pair, ValidationLabel
from corpus.services import create_pairs
from tests import factories

from .validation_factories import pair_of_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_two_way_batch_with_keys_1_and_2(page, live_server, make_worker):
    dataset = factories.dataset("browser-two-way", label_scheme=LabelScheme.TWO_WAY)
    premise = factories.premise(
        dataset, factories.genre("recast"), text="When asked about the product , Ann said , ' great ' ."
    )
    pairs = create_pairs(
        dataset,
        "dev",
        [
            Pair(
                premise=premise, pair_id=f"tw{i}", hypothesis=f"Ann liked the product {i} .", author_label="entailment"
            )
            for i in range(5)
        ],
        [["entailment"]] * 5,
    )
    make_worker(username="two-way", password="two-way-pass-1")
    page.goto(f"{live_server.url}/accounts/login/?next=/validate/next/")
    page.fill("#id_username", "two-way")
    page.fill("#id_password", "two-way-pass-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    fieldsets = page.locator("fieldset.validation-pair")
    assert fieldsets.count() == 5
    assert fieldsets.nth(0).get_by_text("Not entailed").count() == 1
    assert page.locator("text=Definitely correct").count() == 0
    items = [fieldsets.nth(i).get_attribute("data-item") for i in range(5)]
    order = [pair_of_item()[item] for item in items]
    keys = ["1", "2", "3", "2", "1", "1"]  # 3 has no button here: it does nothing
    answered = 0
    for key in keys:
        page.keyboard.press(key)
        if key != "3":
            assert fieldsets.nth(answered).locator(f'input[data-key="{key}"]').is_checked()
            answered += 1
    assert page.locator("#answered-count").inner_text() == "5 of 5 answered"
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/validate/next/")  # saved; nothing left to validate
    assert page.get_by_role("heading", name="No pairs to validate right now").count() == 1
    expected = ["entailment", "neutral", "neutral", "entailment", "entailment"]
    stored = dict(ValidationLabel.objects.filter(worker__user__username="two-way").values_list("pair_id", "label"))
    assert [stored[pk] for pk in order] == expected
    assert {p.pk for p in pairs} == set(order)
