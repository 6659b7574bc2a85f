"""Label schemes in the core (corpus.labels): two-way and ordinal answers map onto the core's
labels, gold is 3 of 5 under the scheme, and statistics are over the scheme's categories while
three-way figures stay as they were."""

import pytest

from corpus import labels as L
from corpus.agreement import agreement_stats, fleiss_kappa_from_sums
from corpus.models import Dataset, LabelScheme, ValidationLabel
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from corpus.services import LabelRefused, add_label, add_labels
from tests.importers.helpers import make_labelled_pairs

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "scheme, answer, stored, shown",
    [
        ("three_way", "neutral", ("neutral", None), "neutral"),
        ("two_way", "entailed", ("entailment", None), "entailed"),
        ("two_way", "not-entailed", ("neutral", None), "not-entailed"),
        ("ordinal", 5, ("entailment", 5), "entailed"),
        ("ordinal", "4", ("neutral", 4), "not-entailed"),
        ("ordinal", 1, ("neutral", 1), "not-entailed"),
    ],
)
def test_answers_map_to_core_labels_and_back_to_the_schemes_words(scheme, answer, stored, shown):
    assert L.to_stored(scheme, answer) == stored
    assert L.to_scheme(scheme, stored[0]) == shown


@pytest.mark.parametrize(
    "scheme, answer",
    [
        ("two_way", "contradiction"),
        ("two_way", "entailment"),
        ("three_way", "entailed"),
        ("ordinal", 0),
        ("ordinal", 6),
        ("ordinal", True),
    ],
)
def test_answers_outside_the_scheme_are_refused_with_a_message(scheme, answer):
    with pytest.raises(ValueError, match="choose"):
        L.to_stored(scheme, answer)


def _dataset(slug, scheme):
    return Dataset.objects.create(slug=slug, name=slug, label_scheme=scheme)


def test_two_way_statistics_are_over_two_categories_in_the_schemes_words():
    dataset = _dataset("two", LabelScheme.TWO_WAY)
    E, N = "entailment", "neutral"
    make_labelled_pairs(dataset, [[E, E, E, E, E], [E, E, E, N, N], [N, N, N, N, E], [N, N, E, E, E]])
    recompute_gold(dataset)
    stats = agreement_stats(Scope.of_dataset(dataset))
    assert stats["label_scheme"] == "two_way"
    assert stats["gold_counts"] == {"entailed": 3, "not-entailed": 1, "-": 0}
    assert set(stats["fleiss_kappa"]) == {"overall", "entailed", "not-entailed"}
    # κ over the 4×2 table by hand: entailed 5, 3, 1, 3 votes; not-entailed 0, 2, 4, 2.
    e_sums, e_squares = 12, 25 + 9 + 1 + 9
    n_sums, n_squares = 8, 0 + 4 + 16 + 4
    assert stats["fleiss_kappa"]["overall"] == pytest.approx(
        fleiss_kappa_from_sums(4, 5, [e_sums, n_sums], [e_squares, n_squares])
    )
    assert stats["fleiss_kappa"]["entailed"] == pytest.approx(stats["fleiss_kappa"]["overall"])


def test_three_way_statistics_keep_their_keys():
    dataset = _dataset("three", LabelScheme.THREE_WAY)
    make_labelled_pairs(dataset, [["entailment"] * 5, ["neutral"] * 3 + ["contradiction"] * 2])
    recompute_gold(dataset)
    stats = agreement_stats(Scope.of_dataset(dataset))
    assert "label_scheme" not in stats
    assert set(stats["gold_counts"]) == {"entailment", "neutral", "contradiction", "-"}
    assert set(stats["fleiss_kappa"]) == {"overall", "entailment", "neutral", "contradiction"}


def test_ordinal_ratings_are_kept_and_kappa_is_over_the_five_ratings():
    dataset = _dataset("ord", LabelScheme.ORDINAL)
    ratings = [[5, 5, 5, 4, 5], [1, 2, 1, 1, 1], [3, 3, 4, 3, 3]]
    pairs = make_labelled_pairs(dataset, [[L.to_stored("ordinal", r)[0] for r in row] for row in ratings])
    for pair, row in zip(pairs, ratings, strict=False):
        for position, value in enumerate(row, start=1):
            ValidationLabel.objects.filter(pair=pair, position=position).update(ordinal=value)
    recompute_gold(dataset)
    stats = agreement_stats(Scope.of_dataset(dataset))
    assert stats["gold_counts"] == {"entailed": 1, "not-entailed": 2, "-": 0}
    sums = [4, 1, 4, 2, 4]  # ratings 1..5 over the three pairs
    squares = [16, 1, 16, 1 + 1, 16]
    assert stats["fleiss_kappa"]["ordinal"] == pytest.approx(fleiss_kappa_from_sums(3, 5, sums, squares))


def test_ordinal_label_must_carry_a_rating_that_maps_to_it():
    dataset = _dataset("ord2", LabelScheme.ORDINAL)
    pair = make_labelled_pairs(dataset, [["entailment"]])[0]
    with pytest.raises(LabelRefused, match="rating"):
        add_label(pair, "entailment")
    with pytest.raises(LabelRefused, match="maps to another label"):
        add_label(pair, "entailment", ordinal=3)
    add_label(pair, "neutral", ordinal=3)
    assert ValidationLabel.objects.get(pair=pair, position=2).ordinal == 3


@pytest.mark.parametrize("path", ["one label", "batch"])
@pytest.mark.parametrize(
    "scheme, label, ordinal, refusal",
    [
        (LabelScheme.TWO_WAY, "contradiction", None, "not a label of a two_way dataset"),
        (LabelScheme.ORDINAL, "entailment", None, "rating"),
        (LabelScheme.ORDINAL, "entailment", 3, "maps to another label"),
        (LabelScheme.THREE_WAY, "entailment", 5, "rating"),
    ],
)
def test_a_label_outside_the_datasets_scheme_is_refused_alone_or_in_a_batch(path, scheme, label, ordinal, refusal):
    """`add_label` and `add_labels` refuse by the same rules: a batch checks the scheme too, and
    saves nothing when one of its labels is refused."""
    dataset = _dataset(f"scheme-{scheme}", scheme)
    fine_label, fine_ordinal = ("neutral", 2) if scheme == LabelScheme.ORDINAL else ("entailment", None)
    fine, pair = make_labelled_pairs(dataset, [[fine_label], [fine_label]])
    before = ValidationLabel.objects.count()
    with pytest.raises(LabelRefused, match=refusal):
        if path == "one label":
            add_label(pair, label, ordinal=ordinal)
        else:
            add_labels([(fine, fine_label, fine_ordinal), (pair, label, ordinal)])
    assert ValidationLabel.objects.count() == before


def _two_way_with_votes():
    dataset = _dataset("two-page", LabelScheme.TWO_WAY)
    make_labelled_pairs(dataset, [["entailment"] * 5, ["neutral"] * 4 + ["entailment"]])
    recompute_gold(dataset)
    return dataset


def test_agreement_stats_command_prints_a_two_way_datasets_categories():
    from io import StringIO

    from django.core.management import call_command

    _two_way_with_votes()
    out = StringIO()
    call_command("agreement_stats", "--dataset", "two-page", stdout=out)
    text = out.getvalue()
    assert "entailed" in text and "not-entailed" in text and "contradiction" not in text


def test_dashboard_validation_page_shows_a_two_way_datasets_categories(client, researcher):
    _two_way_with_votes()
    client.force_login(researcher)
    page = client.get("/dashboard/validation/?dataset=two-page").content.decode()
    assert 'data-stat="kappa-entailed"' in page and 'data-stat="kappa-not-entailed"' in page
    assert 'data-stat="kappa-contradiction"' not in page
