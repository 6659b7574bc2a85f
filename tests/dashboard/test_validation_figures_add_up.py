"""The validation page's figures add up, the held-premise count is the same on the
collection and reports pages, and figures follow an exclusion at once. On the loaded demo, where
the page once said 313 pairs 'not yet validated' beside 336 pairs with fewer than five labels (some
of those already have 3 agreeing labels, so a gold label) and counted all pairs per genre beside an
agreement over five-label pairs."""

import io

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from collection.models import PremiseReport
from collection.premise_pool import hold_premises
from corpus.agreement import agreement_stats
from corpus.models import Dataset, Premise, PremiseStatus, ValidationLabel, Worker
from corpus.scope import Scope
from quality.services import set_excluded
from teams.models import default_team_id
from tests.conftest import rows_for_the_module
from tests.present import present

from .pagefigures import figures, number

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def loaded_demo(django_db_setup, django_db_blocker, tmp_path_factory):
    """The demo, loaded once for the module; each test sees it as one load leaves it (rows_for_the_module)."""
    with rows_for_the_module(django_db_blocker, tmp_path_factory.mktemp("demo")):
        call_command("load_demo", "--no-artifacts", "--no-training", "--no-quality", stdout=io.StringIO())
        yield


@pytest.fixture
def demo(client, loaded_demo):
    client.login(username="researcher", password="researcher-demo")
    return Dataset.objects.get(slug=settings.NLI["DEFAULT_DATASET"])  # the demo loads into it


def page_figures(client, dataset):
    page = figures(client.get(reverse("dashboard:validation"), {"dataset": dataset.slug}).content.decode())
    value = {key: number(entry[0]) for key, entry in page.by_id.items() if entry[0] != ""}
    return page, value


def test_the_validation_page_figures_add_up(client, demo):
    page, value = page_figures(client, demo)
    tiles = {n: value[f"stat-labels-{n}"] for n in range(1, 6)}
    pairs = value["stat-pairs"]
    assert sum(tiles.values()) == pairs
    gold_rows = sum(number(v) for _row, stat, v, _ in page.rows if stat and stat.startswith("gold-"))
    assert gold_rows == pairs
    short = sum(tiles[n] for n in range(1, 5))
    assert value["stat-short-pairs"] == short
    assert value["stat-short-with-gold"] + value["stat-short-without-gold"] == short
    assert value["stat-gold-unvalidated"] == value["stat-short-without-gold"]
    assert value["stat-short-with-gold"] > 0  # the case that made the old figures disagree
    five = value["stat-five_label_pairs"]
    assert five == tiles[5]
    # Per genre: the five-label pairs the agreement is over, adding up to the page's five-label pairs.
    per_genre_five = {row.get("data-genre"): number(v) for row, stat, v, _ in page.rows if stat == "genre-five"}
    assert sum(per_genre_five.values()) == five
    stats = agreement_stats(Scope.of_dataset(demo))
    assert per_genre_five == {genre: f["five_label_pairs"] for genre, f in stats["per_genre"].items()}


def test_held_premises_are_one_figure_on_the_collection_and_reports_pages(client, demo):
    premises = list(Premise.objects.filter(dataset=demo).order_by("pk")[:3])
    # One held by a researcher without a report, one held after reports, one reported once (not held).
    hold_premises(Premise.objects.filter(pk=premises[0].pk))
    worker = Worker.objects.exclude(user=None).first()
    for premise in premises[1:]:
        PremiseReport.objects.create(premise=premise, worker=worker, message="garbled")
    hold_premises(Premise.objects.filter(pk=premises[1].pk))
    held = Premise.objects.filter(dataset=demo, status=PremiseStatus.HELD).count()
    collection = figures(client.get(reverse("dashboard:collection"), {"dataset": demo.slug}).content.decode())
    reports_html = client.get(reverse("dashboard:reports"), {"dataset": demo.slug}).content.decode()
    reports = figures(reports_html)
    assert number(collection.by_id["stat-held"][0]) == number(reports.by_id["stat-held"][0]) == held >= 2
    assert number(reports.by_id["stat-reported-not-held"][0]) == 1
    # Every held premise is on the reports page to act on, the one held without a report too.
    for premise in premises:
        assert f'data-premise="{premise.pk}"' in reports_html


def test_figures_change_right_after_an_exclusion(client, demo, settings):
    settings.DASHBOARD_CACHE_SECONDS = 3600  # a cached figure would otherwise be shown for an hour
    _page, before = page_figures(client, demo)
    assert before == page_figures(client, demo)[1]  # cached: the same figures
    # A validator with labels on five-label pairs.
    validator = present(
        ValidationLabel.objects.filter(pair__dataset=demo, pair__label_count=5, position__gt=1)
        .values_list("worker", flat=True)
        .first()
    )
    set_excluded([validator], True, teams=[default_team_id()])
    _page, after = page_figures(client, demo)
    assert after["stat-five_label_pairs"] < before["stat-five_label_pairs"]
    assert after["stat-five_label_pairs"] == agreement_stats(Scope.of_dataset(demo))["five_label_pairs"]
