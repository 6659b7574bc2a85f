"""Researcher pages as a browser draws them: the adversarial rounds table shows
every column on a 1280 px screen, and the stopping, artifacts and recast pages style every input
(an <input> written without a type, or a number field, was left as the browser's bare box)."""

import re

import pytest
from django.urls import reverse

from tests.adversarial.helpers import adversarial_study

PHONE = {"width": 390, "height": 844}


def log_in(page, live_server, make_researcher):
    make_researcher(username="ada", password="research-pass-1")
    page.goto(f"{live_server.url}/accounts/login/?next=/dashboard/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/$"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_rounds_table_shows_every_column_on_a_1280_px_screen(live_server, page, make_researcher):
    from adversarial.models import RoundStatus
    from modeling.models import Snapshot

    study, round1 = adversarial_study(target_endpoint="http://127.0.0.1:9/a-long-endpoint-name/predict")
    round1.round_snapshot = round1.training_snapshot = Snapshot.objects.create(status="failed", error="disk full")
    round1.status, round1.error = RoundStatus.CLOSING, "snapshot 1 failed: the disk of the export folder is full"
    round1.save()
    log_in(page, live_server, make_researcher)
    page.goto(f"{live_server.url}{reverse('dashboard:adversarial_rounds', args=[study.slug])}")
    table = page.locator("#rounds")
    hidden = table.evaluate("t => t.scrollWidth - t.parentElement.clientWidth")
    assert hidden <= 0, f"{hidden} px of the rounds table are scrolled out of sight at 1280 px"
    last = page.locator("#rounds thead th").last
    assert last.inner_text() == "Export" and last.is_visible()
    right = last.evaluate("th => th.getBoundingClientRect().right")
    assert right <= 1280


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_every_input_of_the_stopping_artifacts_and_recast_pages_is_styled_on_a_phone(
    live_server, page, make_researcher
):
    from tests import factories

    factories.dataset("collected")
    log_in(page, live_server, make_researcher)
    page.set_viewport_size(PHONE)
    for name in ("stopping", "artifacts", "recast"):
        page.goto(f"{live_server.url}{reverse(f'dashboard:{name}')}")
        fields = page.locator(
            "main input:not([type=hidden]):not([type=checkbox]):not([type=radio]), main select, main textarea"
        )
        assert fields.count() > 0, name
        for index in range(fields.count()):
            field = fields.nth(index)
            style = field.evaluate(
                "el => { const s = getComputedStyle(el); return [s.borderTopLeftRadius, s.borderTopColor]; }"
            )
            assert style[0] == "6px", (name, field.evaluate("el => el.outerHTML"), style)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{name}: {width} px wide on a phone"
