"""A worker judges a batch of MPE items in a real browser: four captions, the proposed sentence, yes / unknown / no."""
import re

import pytest

from corpus.models import Label, Pair, ValidationLabel
from corpus.mpe_wording import QUESTION

from .test_mpe_task import CAPTIONS, make_mpe_items

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_worker_judges_five_mpe_items_by_mouse_and_keys(page, live_server, make_worker):
    _, items = make_mpe_items(5, slug="browser-mpe")
    make_worker(username="mpe-browser", password="mpe-browser-pass")
    page.goto(f"{live_server.url}/accounts/login/?next=/validate/mpe/next/")
    page.fill("#id_username", "mpe-browser")
    page.fill("#id_password", "mpe-browser-pass")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/validate/mpe/batch/[0-9a-f-]+/$"))

    assert page.get_by_role("heading", name=QUESTION).count() == 1
    fieldsets = page.locator("fieldset.mpe-item")
    assert fieldsets.count() == 5
    first = fieldsets.nth(0)
    assert first.locator("li.caption").all_inner_texts() == CAPTIONS
    order = [int(fieldsets.nth(i).get_attribute("data-pair")) for i in range(5)]

    # Two answers with the mouse (the buttons say yes / unknown / no), three with the keys 1/2/3.
    first.get_by_text("unknown", exact=False).click()
    fieldsets.nth(1).locator("label", has_text=re.compile(r"\bno$")).click()
    page.keyboard.press("1")
    page.keyboard.press("3")
    # One left out: the page names it and nothing is saved.
    page.get_by_role("button", name=re.compile("Submit all 5")).click()
    assert "every item" in page.get_by_role("alert").inner_text()
    assert not ValidationLabel.objects.exists()
    page.keyboard.press("2")
    page.get_by_role("button", name=re.compile("Submit all 5")).click()
    page.wait_for_url(f"{live_server.url}/validate/mpe/next/")

    expected = [Label.NEUTRAL, Label.CONTRADICTION, Label.ENTAILMENT, Label.CONTRADICTION, Label.NEUTRAL]
    assert [ValidationLabel.objects.get(pair_id=pk).label for pk in order] == expected
    assert all(Pair.objects.get(pk=pk).label_count == 1 for pk in order)


def test_researcher_adjudicates_a_split_item_on_a_phone(page, live_server, make_worker, make_researcher):
    from corpus.models import Adjudication

    from .test_mpe_task import judge

    dataset, items = make_mpe_items(2, slug="browser-adjudication")
    workers = [make_worker(username=f"j{i}") for i in range(5)]
    E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
    judge(items, workers, [[E, E, N, N, C], [E, E, E, E, N]])
    make_researcher(username="ada", password="research-pass-1")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/accounts/login/?next=/dashboard/mpe/%3Fdataset%3D{dataset.slug}")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/mpe/\?dataset="))
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    queued = page.locator("article.adjudication")
    assert queued.count() == 1 and queued.get_attribute("data-pair") == str(items[0].pk)
    assert "2-2-1 split" in queued.inner_text()
    queued.get_by_role("button", name=re.compile("^contradiction")).click()
    page.wait_for_url(re.compile(r".*/dashboard/mpe/\?dataset="))
    assert "gold label is now contradiction" in page.content()
    assert page.locator("article.adjudication").count() == 0
    item = Pair.objects.get(pk=items[0].pk)
    assert (item.gold_label, item.label_count) == (C, 5)
    assert Adjudication.objects.get().researcher.username == "ada"
