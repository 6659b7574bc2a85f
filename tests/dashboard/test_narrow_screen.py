"""The dashboard on a phone (390 px wide): no page is wider than the screen; wide tables scroll in
their cards. And every page has a favicon."""

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
]


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
        assert width <= PHONE["width"], f"{name}: the page is {width} px wide on a {PHONE['width']} px screen"
    # The widest table still shows everything: it scrolls inside its card.
    page.goto(f"{live_server.url}{reverse('dashboard:workers')}")
    scroller = page.locator("#table-workers").evaluate_handle("table => table.closest('.card')")
    assert scroller.evaluate("el => el.scrollWidth > el.clientWidth")


def test_every_page_names_a_favicon_and_favicon_ico_leads_to_it(client):
    html = client.get(reverse("login")).content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in html
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
    assert finders.find("favicon.svg")
