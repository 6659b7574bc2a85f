"""A researcher in Chromium reads the cost page, raises a study's payment in the study settings
(the admin), and reads the new figures. The figures are cost_factories.py's, worked
out by hand there and in test_costs.py.

Screenshots go to $DASHBOARD_SHOTS (default /tmp/dashboard-shots/).
"""

import re

import pytest

from crowd.models import Study

from . import cost_factories
from .test_browser import shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def study_cell(page, slug, stat):
    return page.locator(f'#table-studies tr[data-study="{slug}"] td[data-stat="{stat}"]').inner_text().strip()


def test_researcher_reads_the_costs_and_changes_a_studys_payment(live_server, page, make_researcher):
    _, _, validation, _ = cost_factories.build()
    make_researcher(username="ada", password="research-pass-1")

    page.goto(f"{live_server.url}/dashboard/costs/")
    assert "/accounts/login/" in page.url
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/costs/$"))
    assert page.locator(".dash-nav a[aria-current=page]").inner_text() == "Costs"
    assert page.text_content("#stat-spent") == "4.30 GBP"
    assert page.text_content("#stat-gold") == "2" and page.text_content("#stat-saved") == "2"
    assert page.text_content("#stat-cost-per-gold") == "2.15 GBP"
    assert study_cell(page, "validation", "spent") == "2.50 GBP"
    assert study_cell(page, "validation", "cost-per-gold") == "1.25 GBP"
    assert study_cell(page, "writing", "cost-per-label") == "0.30 GBP"
    assert page.text_content("#stat-remaining-pairs") == "3"
    assert page.text_content("#stat-projected-labels") == "9.0"
    assert page.text_content("#stat-projected-cost") == "2.05 GBP"
    fiction = page.locator('#table-groups tr[data-genre="fiction"] td[data-stat="money"]')
    assert fiction.inner_text().strip() == "2.26 GBP"
    shot(page, "costs-1-before")

    # The study settings: the payment per task is edited with the rest of the study.
    page.goto(f"{live_server.url}/admin/crowd/study/{validation.pk}/change/")
    payment = page.locator("#id_payment_per_task")
    assert payment.input_value() == "0.50"
    payment.fill("1.00")
    page.click("input[name=_save]")
    page.wait_for_url(re.compile(r".*/admin/crowd/study/$"))
    assert "was changed successfully" in page.text_content(".messagelist")
    validation.refresh_from_db()
    assert str(validation.payment_per_task) == "1.00"
    # A negative payment is refused with the field's message, and nothing changes.
    page.goto(f"{live_server.url}/admin/crowd/study/{validation.pk}/change/")
    page.fill("#id_payment_per_task", "-1")
    page.click("input[name=_save]")
    assert "greater than or equal to 0" in page.text_content(".field-payment_per_task")
    assert str(Study.objects.get(pk=validation.pk).payment_per_task) == "1.00"

    page.goto(f"{live_server.url}/dashboard/costs/")
    # 3 batches at 1.00 + the 1.00 bonus paid; 4.00 / 11 labels a validation label.
    assert study_cell(page, "validation", "task-money") == "3.00 GBP"
    assert study_cell(page, "validation", "spent") == "4.00 GBP"
    assert page.text_content("#stat-spent") == "5.80 GBP"
    assert page.text_content("#stat-cost-per-gold") == "2.90 GBP"
    assert page.text_content("#stat-projected-cost") == "3.27 GBP"
    shot(page, "costs-2-after")
