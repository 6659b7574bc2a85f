"""The adjudication queue by keyboard, at desktop and phone width: j moves to the next
pair, 2 makes neutral its gold, the statistics before/after follow, u undoes the decision just made
(the decided pair had left the queue and u acted on the next one), the decided
pairs are listed with who and when, and w withdraws a decision from the decided view."""

import re

import pytest

from corpus.models import Adjudication, Label, Pair, Split
from tests import factories
from tests.present import present

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}


def after_gold(page, label):
    return int(page.locator(f'[data-stat="after-gold-{label}"]').get_attribute("data-value"))


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_researcher_settles_and_undoes_a_pair_by_keyboard(live_server, page, make_researcher, viewport):
    dataset = factories.dataset("kbd-adjudication")
    first, second = (
        factories.pair(dataset, factories.premise(dataset, split=Split.DEV), labels)
        for labels in ([E, E, N, N, C], [C, C, N, N, E])
    )
    make_researcher(username="ada", password="research-pass-1")
    page.set_viewport_size(viewport)
    queue_url = f"/dashboard/adjudication/?dataset={dataset.slug}&queue=no_gold"
    page.goto(f"{live_server.url}/accounts/login/?next={queue_url.replace('?', '%3F').replace('&', '%26')}")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/dashboard/adjudication/\?"))
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    items = page.locator("article.adjudication")
    assert items.count() == 2
    neutral_before = after_gold(page, N)

    page.keyboard.press("j")  # the second pair
    assert page.evaluate("document.activeElement.dataset.pair") == str(second.pk)
    with page.expect_navigation():
        page.keyboard.press("2")  # neutral
    assert "gold label is now neutral" in page.content()
    assert Pair.objects.get(pk=second.pk).gold_label == N
    decision = Adjudication.objects.get(pair=second)
    assert (present(decision.researcher).username, decision.reason) == (
        "ada",
        "no gold label: every label in, no 3 agree",
    )
    assert page.locator("article.adjudication").count() == 1  # decided pairs leave the queue
    assert after_gold(page, N) == neutral_before + 1
    assert int(page.locator('[data-stat="before-gold-neutral"]').get_attribute("data-value")) == neutral_before

    # u undoes the decision just made, not the pair now first in the queue.
    assert page.locator("#table-decisions tr[data-decision]").first.inner_text().count("ada") == 1
    with page.expect_navigation():
        page.keyboard.press("u")
    assert "undone: gold label is - again" in page.content()
    assert Pair.objects.get(pk=second.pk).gold_label == "-" and Pair.objects.get(pk=first.pk).gold_label == "-"
    assert Adjudication.objects.filter(pair=first).count() == 0
    assert page.locator("article.adjudication").count() == 2  # back in its queue
    assert page.locator("#undo-last").count() == 0  # nothing left to undo
    page.keyboard.press("j")
    with page.expect_navigation():
        page.keyboard.press("2")  # decided again

    assert "decided=1" in page.locator("#show-decided").get_attribute("href")  # decided pairs, linked
    page.goto(f"{live_server.url}{queue_url.replace('no_gold', 'two_two_one')}&decided=1")
    target = page.locator(f'article.adjudication[data-pair="{second.pk}"]')
    assert target.locator('[data-stat="gold"]').inner_text() == N
    while page.evaluate("document.activeElement.dataset.pair") != str(second.pk):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("/")  # the reason box takes typed keys as text
    page.keyboard.press("Control+a")
    page.keyboard.type("undo: u, w and 2 are text here")
    page.keyboard.press("Escape")
    with page.expect_navigation():
        page.keyboard.press("w")
    assert Pair.objects.get(pk=second.pk).gold_label == "-"
    actions = list(Adjudication.objects.filter(pair=second).values_list("action", "reason"))
    assert [action for action, _ in actions] == ["label", "withdraw", "label", "withdraw"]
    assert actions[1][1].startswith("undo of decision") and actions[3][1] == "undo: u, w and 2 are text here"
    assert after_gold(page, N) == neutral_before
    assert Pair.objects.get(pk=first.pk).gold_label == "-"
