"""The pair browser's bulk actions and "Mark for validation" in a browser, at desktop and phone width:
a writer's pairs found, their count on each action's button, sent to adjudication in one
click and taken back by "Undo it", sent again and settled in the adjudication page's "sent" queue by
keyboard; kept out of snapshots; a share of train pairs marked on the imports page. The pages never
scroll sideways."""

import re

import pytest

from corpus.models import Label, Pair, Split
from modeling.models import SnapshotExclusion
from tests import factories
from validation.models import AdjudicationRequest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
E = Label.ENTAILMENT.value
DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}


def fits(page):
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_writers_pairs_sent_to_adjudication_undone_settled_and_kept_out(
    live_server, page, make_researcher, make_worker, viewport
):
    dataset = factories.dataset("bulk-browser")
    writer = make_worker(external_id="PASTER9")
    pairs = [
        factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [E], author=writer) for _ in range(3)
    ]
    factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [E])  # someone else's
    Pair.objects.filter(dataset=dataset).update(needs_validation=False)
    make_researcher(username="ada", password="research-pass-1")
    page.set_viewport_size(viewport)
    found = f"/dashboard/pairs/?dataset={dataset.slug}&writer=PASTER9"
    page.goto(f"{live_server.url}/accounts/login/?next={found.replace('?', '%3F').replace('&', '%26')}")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/dashboard/pairs/\?"))
    assert page.locator("#bulk-adjudicate").inner_text() == "Send 3 pairs to adjudication"
    assert fits(page)

    page.fill("#bulk-reason", "pasted sentences?")
    with page.expect_navigation():
        page.click("#bulk-adjudicate")
    assert "3 pairs of writer PASTER9 are sent to adjudication" in page.content()
    assert AdjudicationRequest.objects.count() == 3
    with page.expect_navigation():
        page.click("#bulk-history button[data-undo]")
    assert "Undone: 3 pairs" in page.content() and not AdjudicationRequest.objects.exists()

    page.fill("#bulk-reason", "pasted sentences?")
    with page.expect_navigation():
        page.click("#bulk-adjudicate")
    page.goto(f"{live_server.url}/dashboard/adjudication/?dataset={dataset.slug}&queue=sent")
    assert page.locator("article.adjudication").count() == 3
    assert fits(page)
    with page.expect_navigation():
        page.keyboard.press("1")  # the first sent pair: entailment
    assert page.locator("article.adjudication").count() == 2
    assert Pair.objects.get(pk=pairs[0].pk).adjudicated_label == E

    page.goto(f"{live_server.url}{found}")
    page.fill("#bulk-reason", "kept for a later release")
    with page.expect_navigation():
        page.click("#bulk-exclude")
    assert "are kept out of the snapshots" in page.content()
    assert set(SnapshotExclusion.objects.values_list("pair_id", flat=True)) == {pair.pk for pair in pairs}

    page.goto(f"{live_server.url}/dashboard/imports/")
    page.select_option("#mark-dataset", dataset.slug)
    page.fill("#mark-share", "50")
    with page.expect_navigation():
        page.click("#mark-validation-form button[type=submit]")
    assert "2 train pairs newly marked for validation; 2 of 4 train pairs (50 %)" in page.content()
    assert fits(page)
