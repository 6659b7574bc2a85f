"""The dashboard on a phone (390 px wide): no page is wider than the screen; a wide table scrolls on
its own, never its card or the page. And every page has a favicon."""

import re

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from . import cost_factories, factories

PHONE = {"width": 390, "height": 844}
PAGES = [
    "collection",
    "validation",
    "corpus",
    "workers",
    "costs",
    "studies",
    "pairs",
    "reports",
    "artifacts",
    "mpe",
    "adjudication",
    "snapshots",
    "training",
    "imports",
    "audit",
    "stopping",
    "bonuses",
    "markets",
    "aggregation",
    "label_pairs",
    "recast",
    "adversarial",
    "study_new",
]
# What may scroll sideways on a phone: a table (its own scroll box), a table's wrapper, a code block.
SCROLLERS_ALLOWED = "TABLE, .table-scroll, PRE, pre.config"
FIND_SCROLLERS = """allowed => [...document.querySelectorAll('main *')]
  .filter(el => el.scrollWidth > el.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
  .filter(el => !el.matches(allowed))
  .map(el => el.tagName + (el.id ? '#' + el.id : '') + '.' + el.className)"""
# The elements that reach past the screen's right edge (outside any scroll box): what widens the page.
TOO_WIDE = """() => [...document.querySelectorAll('body *')]
  .filter(el => el.getBoundingClientRect().right > window.innerWidth + 1)
  .filter(el => !el.parentElement.closest('table, .table-scroll, pre'))
  .map(el => el.tagName + (el.id ? '#' + el.id : '') + '.' + el.className + ' ' + Math.round(el.getBoundingClientRect().right))
  .slice(-6)"""


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_no_dashboard_page_is_wider_than_a_phone(live_server, page, make_researcher):
    factories.worker_corpus()
    factories.corpus()
    cost_factories.build("costs-on-a-phone", prefix="phone-")  # the cost page's widest table, with rows
    make_researcher(username="ada", password="research-pass-1")
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/accounts/login/?next=/dashboard/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "research-pass-1")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/$"))
    for name in PAGES:
        page.goto(f"{live_server.url}{reverse(f'dashboard:{name}')}")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= page.evaluate("window.innerWidth"), (
            f"{name}: the page is {width} px wide on a phone: {page.evaluate(TOO_WIDE)}"
        )
        assert page.evaluate(FIND_SCROLLERS, SCROLLERS_ALLOWED) == [], f"{name}: more than a table scrolls"
    # The widest table still shows everything: it scrolls on its own, its card does not.
    page.goto(f"{live_server.url}{reverse('dashboard:workers')}")
    table = page.locator("#table-workers")
    assert table.evaluate("el => el.scrollWidth > el.clientWidth")
    assert table.evaluate("el => el.closest('.card').scrollWidth <= el.closest('.card').clientWidth")


def test_every_page_names_a_favicon_and_favicon_ico_leads_to_it(client):
    html = client.get(reverse("login")).content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in html
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
    assert finders.find("favicon.svg")
