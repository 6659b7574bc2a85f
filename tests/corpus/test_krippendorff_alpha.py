"""Krippendorff's α equals independent implementations: the `krippendorff` package and
NLTK's AnnotationTask, to 1e-9, on SNLI dev, on DNC's ordinal kg_relations file with validators'
ratings added, and on randomly thinned label sets."""

import functools
import json
import random
import re

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.metrics.agreement import AnnotationTask

from corpus.agreement import agreement_stats, krippendorff_alpha
from corpus.alpha import NOMINAL, ORDINAL, alpha_of_units
from corpus.labels import LABELS
from corpus.models import Dataset, Pair, Split, ValidationLabel
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from corpus.services import add_labels
from importers.dnc_import import import_dnc_file
from importers.services import import_pairs_file
from tests import factories
from tests.conftest import shared_file
from tests.importers.helpers import ensure_genres
from tests.present import present

TOLERANCE = 1e-9


def package_alpha(units, categories, metric=NOMINAL):
    """The `krippendorff` package's α over units given as label lists (rows: label positions)."""
    width = max((len(unit) for unit in units), default=1) or 1
    data = np.full((width, len(units)), np.nan)
    for column, unit in enumerate(units):
        for row, label in enumerate(unit):
            data[row, column] = categories.index(label)
    return krippendorff.alpha(
        reliability_data=data, level_of_measurement=metric, value_domain=list(range(len(categories)))
    )


def nltk_alpha(units):
    """NLTK's α (nominal: binary distance) over units given as label lists."""
    return AnnotationTask(
        [
            (str(position), str(unit), label)
            for unit, labels in enumerate(units)
            for position, label in enumerate(labels)
        ]
    ).alpha()


@functools.cache
def snli_dev_units():
    with open(shared_file("snli_1.0_dev.jsonl"), encoding="utf-8") as handle:
        return [[label for label in json.loads(line)["annotator_labels"] if label in LABELS] for line in handle]


def label_units(dataset, field="label"):
    """Each pair's counted labels, read from the label table (not the counters α is computed from)."""
    units: dict[int, list[object]] = {}
    for pair_id, value in (
        ValidationLabel.objects.filter(pair__dataset=dataset)
        .exclude(**{f"{field}__isnull": True})
        .values_list("pair_id", field)
    ):
        units.setdefault(pair_id, []).append(value)
    return list(units.values())


# --- the pure computation -------------------------------------------------------------------------


def test_snli_dev_alpha_equals_both_independent_implementations():
    units = snli_dev_units()
    ours = alpha_of_units(units, LABELS)
    assert ours.alpha == pytest.approx(package_alpha(units, list(LABELS)), abs=TOLERANCE)
    assert ours.alpha == pytest.approx(nltk_alpha(units), abs=TOLERANCE)
    assert (ours.pairs, ours.labels, ours.all_pairs) == (10000, sum(map(len, units)), 10000)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), keep=st.floats(0.2, 1.0), size=st.integers(20, 400))
def test_alpha_of_randomly_thinned_snli_label_sets_equals_the_package(seed, keep, size):
    rng = random.Random(seed)
    units = [[label for label in unit if rng.random() < keep] for unit in rng.sample(snli_dev_units(), size)]
    ours = alpha_of_units(units, LABELS)
    assert ours.pairs == sum(1 for unit in units if len(unit) >= 2)
    if ours.alpha is None:
        assert ours.labels < 2 or len({label for unit in units if len(unit) >= 2 for label in unit}) == 1
        return
    assert ours.alpha == pytest.approx(package_alpha(units, list(LABELS)), abs=TOLERANCE)
    assert ours.alpha == pytest.approx(nltk_alpha(units), abs=TOLERANCE)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(1, 5), max_size=6), min_size=2, max_size=60))
def test_ordinal_alpha_of_random_ratings_equals_the_package(units):
    ours = alpha_of_units(units, [1, 2, 3, 4, 5], ORDINAL)
    if ours.alpha is None:
        return
    assert ours.alpha == pytest.approx(package_alpha(units, [1, 2, 3, 4, 5], ORDINAL), abs=TOLERANCE)


# --- in the database ------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.slow
def test_snli_dev_alpha_from_the_database_equals_the_package_before_and_after_thinning():
    ensure_genres("captions")
    assert import_pairs_file(shared_file("snli_1.0_dev.jsonl"), "snli").ok
    units = list(snli_dev_units())
    for source in ("tallies", "pairs"):
        alpha = agreement_stats(Scope.named("snli"), source=source)["krippendorff_alpha"]["nominal"]
        assert alpha["alpha"] == pytest.approx(package_alpha(units, list(LABELS)), abs=TOLERANCE)
        assert (alpha["pairs"], alpha["all_pairs"], alpha["share"]) == (10000, 10000, 1.0)
        assert alpha["per_split"]["dev"]["alpha"] == alpha["alpha"]
        assert alpha["per_genre"]["captions"]["alpha"] == alpha["alpha"]

    # Thin the label table at random (as a stopping rule would), let the counters follow, compare again.
    rng = random.Random(42)
    labels = list(ValidationLabel.objects.filter(pair__dataset__slug="snli").values_list("pk", flat=True))
    ValidationLabel.objects.filter(pk__in=[pk for pk in labels if rng.random() < 0.45]).delete()
    recompute_gold(Dataset.objects.get(slug="snli"))
    thinned = label_units(factories.Dataset.objects.get(slug="snli"))
    for source in ("tallies", "pairs"):
        alpha = krippendorff_alpha(Scope.named("snli"), source=source)["nominal"]
        assert alpha["alpha"] == pytest.approx(package_alpha(thinned, list(LABELS)), abs=TOLERANCE)
        assert alpha["pairs"] == sum(1 for unit in thinned if len(unit) >= 2)
        assert alpha["share"] == pytest.approx(alpha["pairs"] / 10000)


@pytest.mark.django_db
@pytest.mark.slow
def test_dnc_ordinal_alpha_from_the_database_equals_the_package():
    report = import_dnc_file(shared_file("dnc/dev/recast_kg_relations_data.json"))
    dataset = factories.Dataset.objects.get(slug=report.dataset)
    pairs = list(Pair.objects.filter(dataset=dataset).order_by("pk"))
    rng = random.Random(7)
    ratings = dict(ValidationLabel.objects.filter(pair__dataset=dataset).values_list("pair_id", "ordinal"))
    # Validators rate a random subset of the pairs, near DNC's rating, in three rounds.
    for _ in range(3):
        batch = []
        for pair in rng.sample(pairs, len(pairs) // 2):
            rating = min(5, max(1, present(ratings[pair.pk]) + rng.choice([-2, -1, 0, 0, 0, 1])))
            batch.append((pair, "entailment" if rating == 5 else "neutral", rating))
        add_labels(batch)
    units = label_units(dataset, "ordinal")
    alpha = agreement_stats(Scope.of_dataset(dataset))["krippendorff_alpha"]
    assert alpha["ordinal"]["alpha"] == pytest.approx(package_alpha(units, [1, 2, 3, 4, 5], ORDINAL), abs=TOLERANCE)
    two_way = [["entailed" if rating == 5 else "not-entailed" for rating in unit] for unit in units]
    assert alpha["nominal"]["alpha"] == pytest.approx(
        package_alpha(two_way, ["entailed", "not-entailed"]), abs=TOLERANCE
    )
    pairable = sum(1 for unit in units if len(unit) >= 2)
    assert alpha["ordinal"]["pairs"] == alpha["nominal"]["pairs"] == pairable
    assert alpha["ordinal"]["share"] == pytest.approx(pairable / len(pairs))


@pytest.mark.django_db
def test_alpha_per_split_and_genre_covers_the_pairs_with_two_labels_or_more():
    dataset = factories.dataset("alpha-scope")
    fiction, travel = factories.genre("fiction"), factories.genre("travel")
    E, N, C = LABELS
    plan = {
        (Split.DEV, fiction): [[E, E, N, E, C], [N, N, N], [C]],
        (Split.TEST, travel): [[E, E], [C, N, C, C], [N, E]],
    }
    for (split, genre), units in plan.items():
        for labels in units:
            factories.pair(dataset, factories.premise(dataset, genre, split=split), labels)
    alpha = krippendorff_alpha(Scope.of_dataset(dataset))["nominal"]
    everything = [labels for units in plan.values() for labels in units]
    assert alpha["alpha"] == pytest.approx(package_alpha(everything, list(LABELS)), abs=TOLERANCE)
    assert (alpha["pairs"], alpha["all_pairs"], alpha["share"]) == (5, 6, 5 / 6)
    dev = alpha["per_split"][Split.DEV]
    assert dev["alpha"] == pytest.approx(package_alpha(plan[(Split.DEV, fiction)], list(LABELS)), abs=TOLERANCE)
    assert (dev["pairs"], dev["all_pairs"]) == (2, 3)
    assert alpha["per_genre"]["travel"]["alpha"] == pytest.approx(
        package_alpha(plan[(Split.TEST, travel)], list(LABELS)), abs=TOLERANCE
    )
    assert krippendorff_alpha(Scope.of_dataset(dataset, Split.TEST))["nominal"]["per_split"].keys() == {Split.TEST}


@pytest.mark.django_db
def test_agreement_stats_command_prints_alpha_beside_kappa_with_what_each_covers():
    from io import StringIO

    from django.core.management import call_command

    from corpus.models import StoppingPolicy, StoppingRule

    dataset = factories.dataset("alpha-command")
    E, N, C = LABELS
    for labels in ([E, E, N, E, C], [N, N, N], [C]):
        factories.pair(dataset, factories.premise(dataset, split=Split.DEV), labels)
    out = StringIO()
    call_command("agreement_stats", "--dataset", "alpha-command", stdout=out)
    text = out.getvalue()
    alpha = krippendorff_alpha(Scope.of_dataset(dataset))["nominal"]["alpha"]
    assert re.search(rf"nominal overall +{alpha:.3f}   2 pairs, 66.67%", text)
    assert "cover the 1 pairs with all five labels (33.3% of the 3 pairs in scope)" in text
    assert "covers the 2 pairs with at least two labels" in text
    assert "Stopping rule" not in text
    StoppingPolicy.objects.create(dataset=dataset, split=Split.DEV, rule=StoppingRule.DECIDED)
    out = StringIO()
    call_command("agreement_stats", "--dataset", "alpha-command", stdout=out)
    assert "Stopping rule decided in scope" in out.getvalue()
