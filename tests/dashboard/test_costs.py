"""The cost page: its figures on a hand-built pair of studies (worked out by hand in
cost_factories.py), who may see it, and a statement count that does not grow with the corpus."""

from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.scope import Scope
from crowd.models import TaskKind
from dashboard.queries.costs import Money, cost_overview
from tests import factories as base

from . import cost_factories, factories
from .pagefigures import figures

pytestmark = pytest.mark.django_db

GBP = Decimal


def gbp(money):
    assert set(money.amounts) <= {"GBP"}, money
    return money.amounts.get("GBP", Decimal("0"))


def cents(value):
    return Decimal(value).quantize(Decimal("0.01"))


def test_the_figures_of_a_small_hand_built_study():
    cost_factories.build()
    overview = cost_overview()
    by_slug = {row.study.slug: row for row in overview["studies"]}

    w = by_slug["writing"]
    assert (w.tasks, gbp(w.task_money), gbp(w.bonuses_paid)) == (2, GBP("1.80"), 0)
    assert w.labels_bought == 6 and w.label_kind == "hypotheses"
    assert gbp(w.cost_per_label) == GBP("0.30")
    assert w.cost_per_gold is None  # a writing study's pairs get their gold in validation

    v = by_slug["validation"]
    assert (v.tasks, gbp(v.task_money)) == (3, GBP("1.50"))
    assert gbp(v.bonuses_paid) == GBP("1.00") and gbp(v.bonuses_owed) == GBP("1.00")  # owed is shown, not spent
    assert gbp(v.spent) == GBP("2.50")
    assert v.labels_bought == 11  # A 4 + B 2 + D 4 + E 1; the catch trial adds none
    assert (v.gold, v.saved) == (2, 2)  # A and B have gold; B stopped at 3 of 5
    assert gbp(v.cost_per_gold) == GBP("1.25")

    totals = overview["totals"]
    assert gbp(totals["spent"]) == GBP("4.30")
    assert (totals["validation_labels"], totals["hypotheses"], totals["saved"], totals["gold"]) == (11, 6, 2, 2)
    assert gbp(totals["cost_per_gold"]) == GBP("2.15")
    assert totals["unallocated"].is_zero

    groups = {(g.split, g.genre): g for g in overview["groups"]}
    fiction, letters = groups[("dev", "fiction")], groups[("dev", "letters")]
    assert (fiction.hypotheses, fiction.validation_labels, fiction.gold, fiction.saved) == (3, 6, 2, 2)
    assert (letters.hypotheses, letters.validation_labels, letters.gold, letters.saved) == (3, 5, 0, 0)
    # 3 hypotheses at 0.30 + 6 labels at 2.50 / 11
    assert cents(gbp(fiction.money)) == GBP("2.26") and cents(gbp(letters.money)) == GBP("2.04")
    assert cents(gbp(fiction.money) + gbp(letters.money)) == GBP("4.30")  # every penny lands in a row
    assert cents(gbp(fiction.cost_per_gold)) == GBP("1.13") and letters.cost_per_gold is None

    projection = overview["projection"]
    # Finished: A (4 validation labels), B (2, stopped), D (4): 10 / 3 a pair.
    assert projection["rate_measured"] and projection["finished_pairs"] == 3
    assert projection["expected_labels_per_pair"] == pytest.approx(10 / 3)
    # Left: C (has 0 of them), E (has 1), F (has 0): 10/3 + 7/3 + 10/3 = 9 labels at 2.50 / 11.
    assert projection["remaining_pairs"] == 3
    assert projection["labels"] == pytest.approx(9.0)
    assert cents(gbp(projection["cost_per_label"])) == GBP("0.23")
    assert cents(gbp(projection["cost"])) == GBP("2.05")
    assert (fiction.remaining_pairs, letters.remaining_pairs) == (1, 2)
    assert fiction.projected_labels == pytest.approx(10 / 3) and letters.projected_labels == pytest.approx(17 / 3)


def test_a_dataset_scope_leaves_other_datasets_out():
    cost_factories.build()
    other = factories.dataset("other")
    overview = cost_overview(Scope.of_dataset(other))
    assert overview["studies"] == [] and overview["groups"] == [] and not overview["has_figures"]


def test_before_any_pair_is_finished_the_projection_assumes_four_labels():
    ds = factories.dataset("fresh")
    premise = factories.premise(ds, factories.genre("fiction"), "dev", "A fresh premise.")
    base.pair(ds, premise, [factories.E], hypothesis="Fresh.", needs_validation=True)
    cost_factories.study("fresh-validation", ds, TaskKind.VALIDATION, "0.40")
    projection = cost_overview(Scope.of_dataset(ds))["projection"]
    assert not projection["rate_measured"] and projection["expected_labels_per_pair"] == 4
    assert projection["labels"] == 4 and projection["cost"] is None  # no label bought: no price yet


def test_money_in_two_currencies_is_never_summed_across():
    total = Money.of(Decimal("1.50"), "GBP") + Money.of(Decimal("2"), "USD") + Money.of(Decimal("0.50"), "GBP")
    assert total.amounts == {"GBP": Decimal("2.00"), "USD": Decimal("2")} and total.value == "2.00 GBP + 2.00 USD"
    assert str(total) == "2.00 GBP + 2.00 USD"
    assert str(total.per(4)) == "0.50 GBP + 0.50 USD" and total.per(0) is None
    assert str(Money()) == "0.00" and Money.of(0, "GBP").is_zero and str(Money.of(0, "GBP")) == "0.00 GBP"
    assert (
        str(Money.of(Decimal("3"), "GBP") + Money.of(0, "USD")) == "3.00 GBP"
    )  # a study that spent nothing adds no currency


def test_the_page_shows_the_figures(client, researcher):
    cost_factories.build()
    client.force_login(researcher)
    response = client.get(reverse("dashboard:costs"))
    assert response.status_code == 200
    page = figures(response.content.decode())
    assert page.by_id["stat-spent"][0] == "4.30"
    assert page.by_id["stat-cost-per-gold"][0] == "2.15"
    assert page.by_id["stat-saved"][0] == "2" and page.by_id["stat-gold"][0] == "2"
    assert page.by_id["stat-projected-cost"] == ("2.05", "2.05 GBP")
    rows = {(row.get("data-study"), stat): value for row, stat, value, _ in page.rows if row.get("data-study")}
    assert rows[("validation", "spent")] == "2.50" and rows[("validation", "cost-per-gold")] == "1.25"
    assert rows[("writing", "cost-per-label")] == "0.30" and rows[("writing", "cost-per-gold")] == ""
    assert b'href="/dashboard/costs/"' in response.content  # in the dashboard's nav


def test_an_empty_platform_says_so(client, researcher):
    client.force_login(researcher)
    response = client.get(reverse("dashboard:costs"))
    assert response.status_code == 200
    assert b'id="costs-empty"' in response.content and b"Nothing spent yet" in response.content


def test_only_researchers_see_costs(client, make_worker):
    url = reverse("dashboard:costs")
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    client.force_login(make_worker().user)
    assert client.get(url).status_code == 403


def statements(client):
    cache.clear()  # cold: the genre names are read afresh each time
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("dashboard:costs"))
    assert response.status_code == 200
    return len(queries)


def test_the_statement_count_does_not_grow_with_the_corpus(client, researcher):
    client.force_login(researcher)
    cost_factories.build()
    small = statements(client)
    # Three times the studies, sessions, claims, pairs and bonuses (two more datasets' worth).
    cost_factories.build("costs-2", prefix="b-")
    cost_factories.build("costs-3", prefix="c-")
    ds = factories.dataset("costs-3")
    for index in range(12):
        premise = factories.premise(ds, factories.genre(f"genre-{index % 4}"), "test", f"More premise {index}.")
        base.pair(ds, premise, [factories.E], hypothesis=f"More {index}.", needs_validation=True)
    large = statements(client)
    assert small == large, (small, large)
    assert large <= 12, large


def test_counts_come_from_the_figure_cache_and_a_payment_edit_shows_at_once(settings):
    """The grouped counts are cached (a figure read again within the interval is not recounted);
    the studies' payments are read on every request, so an edit prices the cached counts at once."""
    settings.DASHBOARD_CACHE_SECONDS = 3600
    ds, writing, _, _ = cost_factories.build()
    first = cost_overview()
    assert gbp(first["totals"]["spent"]) == GBP("4.30")
    premise = factories.premise(ds, factories.genre("fiction"), "dev", "A later premise.")
    base.pair(ds, premise, [factories.E], hypothesis="Later.", needs_validation=True)
    cached_read = cost_overview()
    assert cached_read["projection"]["remaining_pairs"] == first["projection"]["remaining_pairs"] == 3
    writing.payment_per_task = Decimal("1.90")
    writing.save()
    edited = cost_overview()
    by_slug = {row.study.slug: row for row in edited["studies"]}
    assert gbp(by_slug["writing"].task_money) == GBP("3.80")  # 2 tasks at the new rate, at once
    assert gbp(edited["totals"]["spent"]) == GBP("6.30")
    assert cents(gbp(by_slug["writing"].cost_per_label)) == GBP("0.63")  # 3.80 over the 6 cached hypotheses
    cache.clear()
    assert cost_overview()["projection"]["remaining_pairs"] == 4  # recounted once the cache is gone


def test_the_refresh_task_recounts_the_cached_counts(settings):
    from dashboard.figure_cache import cache_key, refresh_figure_now

    settings.DASHBOARD_CACHE_SECONDS = 3600
    ds, _, _, _ = cost_factories.build()
    assert cost_overview()["projection"]["remaining_pairs"] == 3
    premise = factories.premise(ds, factories.genre("fiction"), "dev", "A later premise.")
    base.pair(ds, premise, [factories.E], hypothesis="Later.", needs_validation=True)
    refresh_figure_now("costs-rows", None, "")  # what dashboard.refresh_figure runs
    assert cache.get(cache_key("costs-rows", Scope.everything()))["value"]["pool"]
    assert cost_overview()["projection"]["remaining_pairs"] == 4
