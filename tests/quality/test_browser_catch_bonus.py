"""A Prolific validator meets a catch trial in a real browser; a researcher then pays the bonus."""

import re
from decimal import Decimal
from pathlib import Path

import pytest

from corpus.models import Label, Pair, ValidationLabel
from crowd.models import Study, TaskKind
from quality.models import BonusEntry, BonusKind, CatchTrialAnswer
from quality.services import set_reference_label
from tests.present import present
from tests.validation.validation_factories import make_dataset, make_pair
from validation.forms import claim_field_name
from validation.models import ValidationClaim

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KEY = {Label.ENTAILMENT: "1", Label.NEUTRAL: "2", Label.CONTRADICTION: "3"}


def test_worker_meets_a_catch_trial_and_a_researcher_pays_the_bonus(
    page, chromium_browser, live_server, make_researcher
):
    dataset = make_dataset("browser-catch")
    for _ in range(4):
        make_pair(dataset, label=Label.NEUTRAL)
    trap = make_pair(dataset, label=Label.CONTRADICTION, needs_validation=False)
    set_reference_label(trap, Label.CONTRADICTION, is_catch_trial=True)
    trap_before = Pair.objects.values_list("label_count", "gold_label").get(pk=trap.pk)
    study = Study.objects.create(
        slug="browser-catch",
        name="Validate with catch trials",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=1,
        completion_code="CATCH-CODE",
        catch_trial_share=1.0,
        bonus_per_catch_match=Decimal("1.00"),
        bonus_currency="GBP",
        # A paid study takes participants only with verified ids (crowd.arrival.launch_refusal).
        require_signed_link=True,
    )
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=5f0c0ffee0c0ffee0c0ffee0"
        f"&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=catch-session-1&sig={study.link_signature()}"
    )
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    fieldsets = page.locator("fieldset.validation-pair")
    assert fieldsets.count() == 5
    # The page names items by opaque per-claim tokens; the test maps them back through the claims.
    pair_of = {claim_field_name(claim): claim.pair_id for claim in ValidationClaim.objects.all()}
    order = [pair_of[fieldsets.nth(i).get_attribute("data-item")] for i in range(5)]
    assert trap.pk in order
    # Nothing on the page tells a catch trial from any other pair.
    assert "catch" not in page.content().lower()
    for pk in order:
        page.keyboard.press(KEY[Label.CONTRADICTION] if pk == trap.pk else KEY[Label.NEUTRAL])
    assert page.locator("#answered-count").inner_text() == "5 of 5 answered"
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/validate/next/")
    assert page.locator("#completion-code").inner_text().startswith("CATCH-CODE-")

    answer = CatchTrialAnswer.objects.get()
    assert (answer.pair_id, answer.matched) == (trap.pk, True)
    assert Pair.objects.values_list("label_count", "gold_label").get(pk=trap.pk) == trap_before
    assert not ValidationLabel.objects.filter(pair=trap, position__gt=1).exists()
    earned = BonusEntry.objects.get(kind=BonusKind.EARNED)

    make_researcher(username="payer", password="payer-pass-1")
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        researcher = context.new_page()
        researcher.set_default_timeout(15_000)
        researcher.goto(f"{live_server.url}/accounts/login/?next=/dashboard/bonuses/")
        researcher.fill("#id_username", "payer")
        researcher.fill("#id_password", "payer-pass-1")
        researcher.get_by_role("button", name="Log in").click()
        researcher.wait_for_url(re.compile(r"/dashboard/bonuses/"))
        row = researcher.locator(f'#table-unpaid tr[data-bonus="{earned.pk}"]')
        assert "5f0c0ffee0c0ffee0c0ffee0" in row.inner_text() and "1.00 GBP" in row.inner_text()
        with researcher.expect_download() as download:
            researcher.locator("#export-prolific").click()
        assert Path(download.value.path()).read_text() == "5f0c0ffee0c0ffee0c0ffee0,1.00\n"
        assert "1.00 GBP" in researcher.locator("#unpaid-total").inner_text()  # the sum, before the click
        researcher.check("#confirm-paid")
        researcher.get_by_role("button", name="Mark these 1 bonus(es) as paid").click()
        researcher.locator("#nothing-unpaid").wait_for()
        assert "Marked 1 bonus(es) paid: 1.00 GBP" in researcher.content()
        assert researcher.locator('#table-bonus-workers [data-stat="unpaid"]').inner_text() == "0.00"
    finally:
        context.close()
    paid = BonusEntry.objects.get(kind=BonusKind.PAID)
    assert (
        paid.pays_id == earned.pk and paid.amount == Decimal("1.00") and present(paid.recorded_by).username == "payer"
    )


def test_a_researcher_labels_a_catch_trial_with_the_keyboard(page, live_server, make_researcher):
    dataset = make_dataset("browser-label")
    first, second = make_pair(dataset), make_pair(dataset)
    make_researcher(username="labeller", password="labeller-pass-1")
    page.goto(f"{live_server.url}/accounts/login/?next=/dashboard/label/")
    page.fill("#id_username", "labeller")
    page.fill("#id_password", "labeller-pass-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/dashboard/label/"))
    assert page.locator("fieldset.validation-pair").get_attribute("data-pair") == str(first.pk)
    page.locator("#is-catch-trial").check()
    page.locator("fieldset.validation-pair").focus()
    page.keyboard.press("3")
    assert page.locator('input[data-key="3"]').is_checked()
    assert page.evaluate("document.activeElement.id") == "submit-batch"
    page.keyboard.press("Enter")
    page.locator(f'fieldset.validation-pair[data-pair="{second.pk}"]').wait_for()
    assert "is a catch trial with answer contradiction" in page.content()
    from quality.models import ReferenceLabel

    reference = ReferenceLabel.objects.get(pair=first)
    assert (reference.label, reference.is_catch_trial) == (Label.CONTRADICTION, True)
