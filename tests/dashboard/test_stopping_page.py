"""The stopping-rules page: a researcher chooses a split's rule in Chromium and sees the
pairs it stopped; bad values are refused; workers cannot reach it; the replay preview."""

import re

import pytest

from corpus import services
from corpus.models import Label, Pair, Split, StoppingPolicy, StoppingRule
from tests.validation.validation_factories import make_dataset, make_pair

E, N = Label.ENTAILMENT, Label.NEUTRAL


def settled_and_open_pairs(dataset):
    """Two dev pairs with three agreeing labels (settled under the decided rule), one with a split vote."""
    for _ in range(2):
        pair = make_pair(dataset, label=E)
        services.add_label(pair, E)
        services.add_label(pair, E)
    pair = make_pair(dataset, label=E)
    services.add_label(pair, N)
    five = make_pair(dataset, label=N)
    for label in (N, N, E, N):
        services.add_label(five, label)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_researcher_puts_a_split_on_the_decided_rule(live_server, page, make_researcher):
    dataset = make_dataset("browser-stopping")
    settled_and_open_pairs(dataset)
    make_researcher(username="grace", password="research-pass-1")
    page.goto(f"{live_server.url}/dashboard/stopping/")
    assert "/accounts/login/" in page.url
    page.fill("#id_username", "grace")
    page.fill("#id_password", "research-pass-1")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/stopping/$"))
    row = page.locator("#stopping-browser-stopping-dev")
    assert row.locator("td[data-rule]").get_attribute("data-rule") == "fixed"
    page.select_option("#stopping-dataset", "browser-stopping")
    page.select_option("#stopping-split", "dev")
    page.select_option("#stopping-rule", "decided")
    page.click("#stopping-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/stopping/$"))
    assert "2 stopped at once" in page.locator(".messages").inner_text()
    assert row.locator("td[data-rule]").get_attribute("data-rule") == "decided"
    assert row.locator("td.num").nth(2).get_attribute("data-value") == "2"
    assert row.locator("td.num").nth(3).get_attribute("data-value") == "4"
    policy = StoppingPolicy.objects.get(dataset=dataset, split=Split.DEV)
    assert policy.rule == StoppingRule.DECIDED
    assert Pair.objects.filter(dataset=dataset, stopped_early=True, needs_validation=False).count() == 2
    # The replay preview of the split's five-label pairs.
    row.locator("a", has_text="replay").click()
    preview = page.locator("#stopping-preview")
    assert "1 five-label pairs" in preview.locator("h2").inner_text()
    decided = preview.locator('tr[data-rule="decided"][data-order="file"]')
    assert decided.locator("td[data-gold-changed]").get_attribute("data-gold-changed") == "0"


@pytest.mark.django_db
def test_bad_values_are_refused_and_workers_are_kept_out(client, researcher, make_worker):
    dataset = make_dataset("refusals")
    settled_and_open_pairs(dataset)
    client.force_login(make_worker().user)
    assert client.get("/dashboard/stopping/").status_code in (302, 403)
    client.force_login(researcher)
    response = client.post(
        "/dashboard/stopping/",
        {"dataset": "refusals", "split": "dev", "rule": "confident", "threshold": "1.5", "max_labels": "5"},
        follow=True,
    )
    assert "Not saved" in response.content.decode()
    assert not StoppingPolicy.objects.exists()
    response = client.post(
        "/dashboard/stopping/",
        {
            "dataset": "refusals",
            "split": "dev",
            "rule": "confident",
            "threshold": "0.9",
            "max_labels": "4",
            "confirm_held_out": "1",
        },
        follow=True,
    )
    policy = StoppingPolicy.objects.get()
    assert (policy.rule, policy.threshold, policy.max_labels) == (StoppingRule.CONFIDENT, 0.9, 4)
    assert set(Pair.objects.filter(label_count__lt=5).values_list("stopping_rule", flat=True)) == {"confident"}
    # The five-label pair keeps the rule it was validated under.
    assert Pair.objects.get(label_count=5).stopping_rule == StoppingRule.FIXED


@pytest.mark.django_db
def test_the_confident_rule_on_dev_or_test_needs_the_researchers_confirmation(client, researcher):
    dataset = make_dataset("held-out-confident")
    settled_and_open_pairs(dataset)
    client.force_login(researcher)
    chosen = {"dataset": "held-out-confident", "rule": "confident", "threshold": "0.9", "max_labels": "5"}
    for split in ("dev", "test"):
        page = client.post("/dashboard/stopping/", {**chosen, "split": split}, follow=True).content.decode()
        assert "Not saved: the confident rule on " + split in page
    assert not StoppingPolicy.objects.exists()
    page = client.post("/dashboard/stopping/", {**chosen, "split": "train"}, follow=True).content.decode()
    assert StoppingPolicy.objects.get().split == Split.TRAIN and "Not saved" not in page
    page = client.post(
        "/dashboard/stopping/", {**chosen, "split": "dev", "confirm_held_out": "1"}, follow=True
    ).content.decode()
    assert StoppingPolicy.objects.filter(split=Split.DEV, rule=StoppingRule.CONFIDENT).exists()
    assert "cover only its pairs with five labels" in page
