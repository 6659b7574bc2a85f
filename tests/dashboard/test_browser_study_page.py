"""A researcher in Chromium opens a study's page from the studies list, on a desk (1280 px) and
on a phone (390 px): the funnel, times, pay, live claims, what is left and the costs read as
test_study_page.py's hand-built study says, and nothing is wider than the phone's screen.

Screenshots go to $DASHBOARD_SHOTS (default /tmp/dashboard-shots/).
"""

import re

import pytest

from .test_browser import shot
from .test_study_page import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def step(page, name):
    return page.locator(f'#table-funnel tr[data-step="{name}"] td[data-value]').get_attribute("data-value")


def test_researcher_reads_a_study_page_on_a_desk_and_on_a_phone(live_server, page, make_researcher):
    study = build_study()
    make_researcher(username="ada", password="research-pass-1")
    page.goto(f"{live_server.url}/dashboard/studies/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/studies/$"))
    assert page.locator(".dash-nav a[aria-current=page]").inner_text() == "Studies"
    page.click(f'#table-studies tr[data-study="{study.slug}"] a')
    page.wait_for_url(re.compile(rf".*/dashboard/studies/{study.slug}/$"))
    assert page.text_content("h1").strip() == study.name
    counts = {name: step(page, name) for name in ("arrived", "started", "completed", "held", "returned", "timed_out")}
    assert counts == {"arrived": "6", "started": "4", "completed": "2", "held": "1", "returned": "1", "timed_out": "1"}
    assert page.text_content("#stat-task-median").strip() == "7.5 min"  # the held session's task apart
    assert page.get_attribute("#stat-live-claims", "data-value") == "1"
    assert page.get_attribute("#stat-left", "data-value") == "5"
    # Spent is what a market confirmed paid (the fooled bonus); s1's tasks are owed.
    assert page.text_content("#stat-spent").strip() == "2.00 GBP"
    assert page.text_content("#stat-held-tasks").strip() == "3.00 GBP"
    assert page.text_content("#stat-owed").strip() == "4.00 GBP"
    assert page.locator("#sessions-csv").get_attribute("href") == f"/dashboard/studies/{study.slug}/sessions.csv"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    shot(page, "study-1-desk")

    page.set_viewport_size(PHONE)
    page.reload()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the study page is {width} px wide on a {PHONE['width']} px screen"
    assert page.locator("#stat-hourly").is_visible()
    shot(page, "study-2-phone")
    page.goto(f"{live_server.url}/dashboard/studies/")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
