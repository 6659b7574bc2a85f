"""agreement_stats: the validation statistics of MultiNLI Table 2 / SNLI Table 3 in SQL."""

import json
import math

import numpy as np
import pytest
from django.core.management import call_command
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import fleiss_kappa

from corpus.agreement import agreement_stats
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from tests.importers.helpers import C, E, N, make_dataset, make_labelled_pairs

pytestmark = pytest.mark.django_db

KEYS = {
    "pairs",
    "five_label_pairs",
    "no_consensus_pairs",
    "unanimous",
    "individual_eq_gold",
    "individual_eq_author",
    "gold_eq_author",
    "gold_ne_author",
    "no_gold",
    "fleiss_kappa",
    "per_genre",
    "gold_counts",
    "gold_sources",
    "krippendorff_alpha",
}
LABELS = [E, N, C]

# Worked by hand below; author's label first.
CAPTIONS_DEV = [
    [E, E, E, E, E],  # unanimous, gold E = author
    [N, E, E, E, N],  # gold E != author N
    [C, C, N, E, N],  # no gold
    [E, E, N],  # not yet five labels: counted in pairs and gold_counts only
]
FICTION_TEST = [[C, C, C, N, C]]  # gold C = author


@pytest.fixture
def worked_example():
    dataset = make_dataset("worked")
    make_labelled_pairs(dataset, CAPTIONS_DEV, split="dev", genre="captions", prefix="cap")
    make_labelled_pairs(dataset, FICTION_TEST, split="test", genre="fiction", prefix="fic")
    recompute_gold()
    return dataset


def test_hand_worked_figures(worked_example):
    stats = agreement_stats(Scope.named("worked"))
    assert set(stats) == KEYS
    assert stats["pairs"] == 5
    assert stats["five_label_pairs"] == 4
    assert stats["unanimous"] == pytest.approx(1 / 4)
    # Individual labels (all five, the author's included) equal to gold: 5 + 3 + 0 + 4 of 20.
    assert stats["individual_eq_gold"] == pytest.approx(12 / 20)
    # Validation labels (positions 2-5) equal to the author's: 4 + 1 + 1 + 3 of 16.
    assert stats["individual_eq_author"] == pytest.approx(9 / 16)
    assert stats["gold_eq_author"] == pytest.approx(2 / 4)
    assert stats["gold_ne_author"] == pytest.approx(1 / 4)
    assert stats["no_gold"] == pytest.approx(1 / 4)
    assert stats["no_consensus_pairs"] == 1
    assert stats["gold_counts"] == {E: 2, N: 0, C: 1, "-": 2}
    assert stats["per_genre"] == {
        "captions": {"pairs": 4, "five_label_pairs": 3, "agreement": pytest.approx(8 / 15)},
        "fiction": {"pairs": 1, "five_label_pairs": 1, "agreement": pytest.approx(4 / 5)},
    }


def test_split_filter(worked_example):
    dev = agreement_stats(Scope.named("worked", "dev"))
    assert (dev["pairs"], dev["five_label_pairs"]) == (4, 3)
    assert dev["gold_eq_author"] == pytest.approx(1 / 3)
    assert set(dev["per_genre"]) == {"captions"}
    test = agreement_stats(Scope.named("worked", "test"))
    assert test["unanimous"] == 0 and test["gold_eq_author"] == 1


def test_no_five_label_pairs_gives_undefined_fractions():
    make_labelled_pairs(make_dataset("young"), [[E], [N, N]])
    recompute_gold()
    stats = agreement_stats(Scope.named("young"))
    assert stats["pairs"] == 2 and stats["five_label_pairs"] == 0
    assert stats["unanimous"] is None and stats["fleiss_kappa"]["overall"] is None
    assert stats["gold_counts"] == {E: 0, N: 0, C: 0, "-": 2}


def _same(ours, theirs):
    if ours is None:
        return math.isnan(theirs)
    return ours == pytest.approx(theirs, abs=1e-9)


five_label_lists = st.lists(st.lists(st.sampled_from(LABELS), min_size=5, max_size=5), min_size=1, max_size=30)
short_label_lists = st.lists(st.lists(st.sampled_from(LABELS), min_size=1, max_size=4), max_size=5)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(full=five_label_lists, partial=short_label_lists)
def test_fleiss_kappa_equals_statsmodels(db, full, partial):
    with transaction.atomic():
        dataset = make_dataset("kappa")
        make_labelled_pairs(dataset, full + partial)  # partial pairs must be left out of κ
        recompute_gold(dataset)
        kappa = agreement_stats(Scope.of_dataset(dataset))["fleiss_kappa"]
        table = np.array([[labels.count(label) for label in LABELS] for labels in full])
        with np.errstate(divide="ignore", invalid="ignore"):
            assert _same(kappa["overall"], fleiss_kappa(table))
            for j, label in enumerate(LABELS):
                one_vs_rest = np.stack([table[:, j], 5 - table[:, j]], axis=1)
                assert _same(kappa[label], fleiss_kappa(one_vs_rest)), label
        transaction.set_rollback(True)


def test_a_handful_of_queries_whatever_the_size(django_assert_max_num_queries):
    dataset = make_dataset("many")
    make_labelled_pairs(dataset, [[E, E, N, C, E], [C, C, C, C, C], [N, E]] * 40)
    recompute_gold()
    with django_assert_max_num_queries(4):
        stats = agreement_stats(Scope.of_dataset(dataset))
    assert stats["pairs"] == 120 and stats["five_label_pairs"] == 80


def test_command_json_has_exactly_the_keys(worked_example, capsys):
    call_command("agreement_stats", "--dataset", "worked", "--json")
    data = json.loads(capsys.readouterr().out)
    assert set(data) == KEYS
    assert set(data["fleiss_kappa"]) == {"overall", E, N, C}
    assert data["gold_counts"] == {E: 2, N: 0, C: 1, "-": 2}
    call_command("agreement_stats", "--dataset", "worked", "--split", "dev")
    out = capsys.readouterr().out
    assert "Individual label = gold label" in out and "53.33%" in out  # 8 of the 15 dev labels
    assert "captions" in out and "fiction" not in out
