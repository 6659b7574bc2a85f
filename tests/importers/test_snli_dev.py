"""Acceptance on the real SNLI 1.0 dev set: import, recompute and statistics reproduce its figures.

The expected figures are those of ../shared/data/README.md (computed there from the file).
"""

import json

import pytest

from corpus.agreement import agreement_stats
from corpus.models import Dataset, Pair
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from importers.services import import_pairs_file
from tests.conftest import shared_file
from tests.importers.helpers import ensure_genres

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_snli_dev_import_recompute_and_statistics():
    path = shared_file("snli_1.0_dev.jsonl")
    ensure_genres("captions")
    report = import_pairs_file(path, "snli")
    assert report.ok, report.summary()
    assert (report.pairs_created, report.labels_skipped, report.gold_differs_from_file) == (10000, 0, 0)
    assert report.split == "dev"

    # The importer's counters already agree with the label table; a recompute confirms it.
    recomputed = recompute_gold(Dataset.objects.get(slug="snli"))
    assert (recomputed.pairs_checked, recomputed.disagreements, recomputed.fixed) == (10000, 0, 0)

    with open(path, encoding="utf-8") as handle:
        file_gold = {row["pairID"]: row["gold_label"] for row in map(json.loads, handle)}
    assert dict(Pair.objects.filter(dataset__slug="snli").values_list("pair_id", "gold_label")) == file_gold

    stats = agreement_stats(Scope.named("snli"))
    assert stats["pairs"] == 10000
    assert stats["five_label_pairs"] == 9986
    assert stats["gold_counts"] == {"entailment": 3329, "neutral": 3235, "contradiction": 3278, "-": 158}
    percent = lambda value: round(100 * value, 2)  # noqa: E731 - README figures are to 0.01 pp
    assert percent(stats["unanimous"]) == 54.87
    assert percent(stats["individual_eq_gold"]) == 86.71
    assert percent(stats["gold_eq_author"]) == 92.03
    assert percent(stats["no_gold"]) == 1.55
    # Table 2/3 rows sum to 100: gold = author, gold != author, no gold.
    assert stats["gold_eq_author"] + stats["gold_ne_author"] + stats["no_gold"] == pytest.approx(1)
    assert stats["per_genre"] == {
        "captions": {"pairs": 10000, "five_label_pairs": 9986, "agreement": stats["individual_eq_gold"]}
    }

    # Re-importing the file changes nothing.
    again = import_pairs_file(path, "snli")
    assert (again.pairs_created, again.already_present) == (0, 10000)
    assert Pair.objects.filter(dataset__slug="snli").count() == 10000
