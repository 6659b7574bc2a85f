"""A worker labels a batch of premise-hypothesis pairs of MPE items in a real browser, by keyboard."""

import re

import pytest

from corpus.models import Label
from validation.forms import claim_field_name
from validation.models import PremiseLabel, PremiseLabelClaim

from .premise_helpers import make_items

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_worker_labels_three_premise_pairs_with_the_keys(page, live_server, make_worker):
    make_items(3, slug="browser-spe")
    make_worker(username="spe-browser", password="spe-browser-pass")
    page.goto(f"{live_server.url}/accounts/login/?next=/validate/premises/next/")
    page.fill("#id_username", "spe-browser")
    page.fill("#id_password", "spe-browser-pass")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/validate/premises/batch/[0-9a-f-]+/$"))

    fieldsets = page.locator("fieldset.premise-pair")
    assert fieldsets.count() == 3
    assert fieldsets.nth(0).locator("p.premise").count() == 1  # one caption, not four
    pair_of = {claim_field_name(claim): claim.premise_pair_id for claim in PremiseLabelClaim.objects.all()}
    order = [pair_of[fieldsets.nth(i).get_attribute("data-item")] for i in range(3)]

    page.keyboard.press("1")
    page.keyboard.press("3")
    # One left out: the server names it and nothing is saved.
    page.get_by_role("button", name=re.compile("Submit all 3")).click()
    assert "missing: pair 3" in page.get_by_role("alert").inner_text()
    assert not PremiseLabel.objects.exists()
    page.locator("fieldset.premise-pair").nth(2).focus()
    page.keyboard.press("2")
    page.get_by_role("button", name=re.compile("Submit all 3")).click()
    page.wait_for_url(re.compile(r"/validate/premises/(next|batch/[0-9a-f-]+)/$"))

    expected = [Label.ENTAILMENT, Label.CONTRADICTION, Label.NEUTRAL]
    assert [PremiseLabel.objects.get(premise_pair_id=pk).label for pk in order] == expected
