"""The agreement tables (quality/agreement_tables.py) row by row: the overall table lists the
page's figures in their order, then Fleiss' κ, then Krippendorff's α per metric; the per-genre and
per-label tables carry each genre's and each label's figures (no "overall" or "ordinal" row among
the labels); the annotator pairs count only two named workers on the same pair of the scope's
datasets and split, once per two workers, most shared pairs first then by worker, from a minimum
number of shared pairs, with the share of equal labels; each worker against the rest counts every
split of the scope, has no agreement where no other labels give a gold label, and is sorted by the
name shown; a worker is named by market id, else username, else "worker <id>"; only the tables
asked for are built, and the default scope is every dataset."""

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from corpus.agreement import agreement_stats
from corpus.models import Dataset, Label, Split, Worker
from corpus.scope import Scope
from quality.agreement_tables import OVERALL_KEYS, TABLES, agreement_tables, annotator_pairs, worker_vs_rest
from tests import factories

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value


@pytest.fixture
def labelled(make_worker: Any) -> Dataset:
    """Workers made in the order ANN, bobby (no market id), CY, DEE (an author), EVE.
    Named labels per pair: p1 dev ANN E, bobby N, CY E; p2 dev bobby N, CY N; p3 train bobby C, CY E;
    p4 dev DEE E (author), ANN E, bobby E; p5 dev EVE E alone with an anonymous author.
    Another dataset has ANN and CY agreeing, which no scope of this one may count."""
    dataset = factories.dataset("agree")
    ann = make_worker(external_id="ANN")
    bob = make_worker(username="bobby")
    cy = make_worker(external_id="CY")
    dee = make_worker(external_id="DEE")
    eve = make_worker(external_id="EVE")
    fiction, travel = factories.genre("fiction"), factories.genre("travel")
    factories.pair(
        dataset, factories.premise(dataset, fiction, split=Split.DEV), [E, E, N, E, E], validators=(ann, bob, cy)
    )
    factories.pair(dataset, factories.premise(dataset, travel, split=Split.DEV), [N, N, N, C, N], validators=(bob, cy))
    factories.pair(dataset, factories.premise(dataset, fiction, split=Split.TRAIN), [C, C, E], validators=(bob, cy))
    factories.pair(
        dataset, factories.premise(dataset, travel, split=Split.DEV), [E, E, E], author=dee, validators=(ann, bob)
    )
    factories.pair(dataset, factories.premise(dataset, travel, split=Split.DEV), [C, E], validators=(eve,))
    other = factories.dataset("other")
    factories.pair(other, factories.premise(other, fiction, split=Split.DEV), [N, N, N], validators=(ann, cy))
    return dataset


def pairs_of(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(row["worker_a"], row["worker_b"], row["shared_pairs"], row["agreement"]) for row in rows]


def test_the_fixed_tables_list_the_pages_figures_in_order(labelled: Dataset) -> None:
    scope = Scope.of_dataset(labelled)
    stats = agreement_stats(scope)
    tables = agreement_tables(scope)
    assert list(tables) == list(TABLES)
    assert tables["overall"] == [
        *({"figure": key, "value": stats[key]} for key in OVERALL_KEYS),
        {"figure": "fleiss_kappa", "value": stats["fleiss_kappa"]["overall"]},
        *(
            {"figure": f"krippendorff_alpha_{metric}", "value": figures["alpha"]}
            for metric, figures in stats["krippendorff_alpha"].items()
        ),
    ]
    assert [row["figure"] for row in tables["overall"]][-2:] == ["fleiss_kappa", "krippendorff_alpha_nominal"]
    assert all(row["value"] is not None for row in tables["overall"])
    alpha = stats["krippendorff_alpha"]["nominal"]["per_genre"]
    assert tables["per_genre"] == [
        {
            "genre": slug,
            "pairs": figures["pairs"],
            "five_label_pairs": figures["five_label_pairs"],
            "agreement": figures["agreement"],
            "krippendorff_alpha": alpha[slug]["alpha"],
        }
        for slug, figures in stats["per_genre"].items()
    ]
    assert [row["genre"] for row in tables["per_genre"]] == ["fiction", "travel"]
    assert all(row["krippendorff_alpha"] is not None for row in tables["per_genre"])
    kappa, gold = stats["fleiss_kappa"], stats["gold_counts"]
    assert tables["per_label"] == [
        {"label": label, "fleiss_kappa": kappa[label], "gold_pairs": gold[label]} for label in (E, N, C)
    ]
    assert [row["gold_pairs"] for row in tables["per_label"]] == [2, 1, 0]


@pytest.mark.parametrize("table", ["overall", "per_genre", "per_label", "annotator_pairs", "worker_vs_rest"])
def test_only_the_table_asked_for_is_built_with_its_figures(labelled: Dataset, table: str) -> None:
    scope = Scope.of_dataset(labelled)
    alone = agreement_tables(scope, tables=(table,))
    assert alone == {table: agreement_tables(scope)[table]}
    assert alone[table]


def test_annotator_pairs_count_two_named_workers_once_most_shared_first(labelled: Dataset) -> None:
    rows = annotator_pairs(Scope.of_dataset(labelled))
    # An author with a worker counts (DEE); anonymous labels and the other dataset do not.
    assert pairs_of(rows) == [
        ("bobby", "CY", 3, pytest.approx(1 / 3)),
        ("ANN", "bobby", 2, 0.5),
        ("ANN", "CY", 1, 1.0),
        ("ANN", "DEE", 1, 1.0),
        ("bobby", "DEE", 1, 1.0),
    ]


def test_annotator_pairs_keep_the_split_and_a_minimum_of_shared_pairs(labelled: Dataset) -> None:
    dev = annotator_pairs(Scope.of_dataset(labelled, Split.DEV))
    assert pairs_of(dev) == [
        ("ANN", "bobby", 2, 0.5),
        ("bobby", "CY", 2, 0.5),
        ("ANN", "CY", 1, 1.0),
        ("ANN", "DEE", 1, 1.0),
        ("bobby", "DEE", 1, 1.0),
    ]
    scope = Scope.of_dataset(labelled)
    assert pairs_of(annotator_pairs(scope, min_shared=2)) == [
        ("bobby", "CY", 3, pytest.approx(1 / 3)),
        ("ANN", "bobby", 2, 0.5),
    ]
    assert pairs_of(annotator_pairs(scope, min_shared=3)) == [("bobby", "CY", 3, pytest.approx(1 / 3))]
    assert annotator_pairs(scope, min_shared=4) == []


def test_the_default_scope_is_every_dataset(labelled: Dataset) -> None:
    rows = {(row["worker_a"], row["worker_b"]): row for row in agreement_tables()["annotator_pairs"]}
    assert rows[("ANN", "CY")]["shared_pairs"] == 2


def test_each_worker_against_the_rest_counts_every_split_sorted_by_name(labelled: Dataset) -> None:
    expected = [
        {"worker": "ANN", "labels": 2, "pairs_with_others_gold": 1, "agreement_with_rest": 1.0},
        {"worker": "CY", "labels": 3, "pairs_with_others_gold": 2, "agreement_with_rest": 1.0},
        {"worker": "EVE", "labels": 1, "pairs_with_others_gold": 0, "agreement_with_rest": None},
        {"worker": "bobby", "labels": 4, "pairs_with_others_gold": 2, "agreement_with_rest": 0.5},
    ]
    assert worker_vs_rest(Scope.of_dataset(labelled)) == expected
    assert worker_vs_rest(Scope.of_dataset(labelled, Split.DEV)) == expected


def test_a_worker_with_neither_market_id_nor_username_is_named_by_id(labelled: Dataset) -> None:
    bob = Worker.objects.get(user__username="bobby")
    get_user_model().objects.filter(pk=bob.user_id).update(username="")
    rows = annotator_pairs(Scope.of_dataset(labelled), min_shared=2)
    assert pairs_of(rows)[1][:2] == ("ANN", f"worker {bob.pk}")
