"""A study set up in a browser at phone and desktop width: New study, the form
filled, the study's page opening on its pre-launch check, which names the premises without a split;
Assign splits on the imports page clears it. The pages never scroll sideways."""

import re

import pytest

from crowd.models import Study
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_writing_study_set_up_on_the_dashboard_with_its_pre_launch_check(
    live_server, page, make_researcher, viewport
):
    dataset = factories.dataset("ours", writings_per_premise=1)
    fiction = factories.genre("fiction")
    for _ in range(4):
        factories.premise(dataset, fiction, split="")
    make_researcher(username="ada", password="research-pass-1")
    page.set_viewport_size(viewport)
    page.goto(f"{live_server.url}/accounts/login/?next=/dashboard/studies/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/dashboard/studies/$"))
    page.click("#new-study")
    page.fill("#id_name", "Our writing")
    page.fill("#id_slug", "our-writing")
    page.select_option("#id_task_kind", "writing")
    page.select_option("#id_dataset", str(dataset.pk))
    page.fill("#id_planned_sessions", "2")
    page.fill("#id_claim_minutes", "15")
    page.fill("#id_completion_code", "OURCODE")
    page.fill("#id_completion_url", "https://app.prolific.com/submissions/complete?cc={code}")
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    page.click("#save-study")
    page.wait_for_url(re.compile(r".*/dashboard/studies/our-writing/$"))
    check = page.locator("#launch-check")
    assert "None of the pool's 4 premises has a split" in check.inner_text()
    assert check.locator('[data-level="block"]').count() == 1
    assert Study.objects.get(slug="our-writing").claim_minutes == 15

    page.goto(f"{live_server.url}/dashboard/imports/?dataset=ours")
    page.fill("#splits-dev", "3")
    page.fill("#splits-test", "3")
    page.click("#assign-splits button")
    page.wait_for_url(re.compile(r".*/dashboard/imports/"))
    page.goto(f"{live_server.url}/dashboard/studies/our-writing/")
    assert page.locator('#launch-check [data-level="block"]').count() == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
