"""The confident stopping rule after an aggregation run (quality/stopping.py) on small label tables
built here, the run's Dawid–Skene rows written as the run writes them: only a finished run stops
pairs; a pair stops when the run's Dawid–Skene posterior of its leading label reaches its split's
threshold, unless that label is a minority of its entailment, neutral and contradiction votes, or
when it has its split's maximum of labels; another method's posterior, another run's, another
dataset's pairs and pairs under another rule are left alone; each split is judged by its own
policy, and the count returned is every split's stopped pairs together."""

import pytest

from base.long_tasks import JobStatus
from corpus.models import Dataset, Pair, Split, StoppingPolicy, StoppingRule
from quality.models import AggregatedLabel, AggregationRun
from quality.stopping import METHOD, stop_confident_pairs
from tests import factories

pytestmark = pytest.mark.django_db

E, N, C = "entailment", "neutral", "contradiction"


def confident_dataset(slug: str = "confident", *, threshold: float = 0.9, max_labels: int = 4) -> Dataset:
    dataset = factories.dataset(slug)
    StoppingPolicy.objects.create(
        dataset=dataset, split=Split.DEV, rule=StoppingRule.CONFIDENT, threshold=threshold, max_labels=max_labels
    )
    return dataset


def pair_of(dataset: Dataset, labels: list[str], split: str = Split.DEV) -> Pair:
    return factories.pair(dataset, factories.premise(dataset, split=split), labels)


def finished_run(dataset: Dataset, status: str = JobStatus.DONE) -> AggregationRun:
    return AggregationRun.objects.create(dataset=dataset, methods=[METHOD], status=status)


def aggregated(run: AggregationRun, pair: Pair, label: str, posterior: float, method: str = METHOD) -> None:
    AggregatedLabel.objects.create(
        run=run, method=method, pair=pair, label=label, posterior=posterior, gold_label="-", differs=False
    )


def stopped(*pairs: Pair) -> list[bool]:
    return [Pair.objects.get(pk=pair.pk).stopped_early for pair in pairs]


def open_to_labels(*pairs: Pair) -> list[bool]:
    return [Pair.objects.get(pk=pair.pk).needs_validation for pair in pairs]


def test_a_pair_stops_once_the_posterior_of_its_majority_label_reaches_the_threshold() -> None:
    dataset = confident_dataset(threshold=0.9)
    run = finished_run(dataset)
    sure, at_threshold, unsure = pair_of(dataset, [E, E]), pair_of(dataset, [N, N]), pair_of(dataset, [C, C])
    aggregated(run, sure, E, 0.99)
    aggregated(run, at_threshold, N, 0.9)
    aggregated(run, unsure, C, 0.89)
    assert stop_confident_pairs(run) == 2
    assert stopped(sure, at_threshold, unsure) == [True, True, False]
    assert open_to_labels(sure, at_threshold, unsure) == [False, False, True]


@pytest.mark.parametrize("status", [JobStatus.PENDING, JobStatus.RUNNING, JobStatus.FAILED])
def test_a_run_not_finished_stops_nothing(status: str) -> None:
    dataset = confident_dataset()
    run = finished_run(dataset, status)
    sure, full = pair_of(dataset, [E, E]), pair_of(dataset, [E, N, C, N])
    aggregated(run, sure, E, 1.0)
    assert stop_confident_pairs(run) == 0
    assert stopped(sure, full) == [False, False]


@pytest.mark.parametrize(
    ("votes", "leading", "stops"),
    [
        ([E, N, C], E, False),
        ([N, E, C], N, False),
        ([C, E, N], C, False),
        ([E, E, N], E, True),
        ([N, C, N], N, True),
        ([C, C, E], C, True),
        ([E, N, N], E, False),
        ([N, C, C], N, False),
        ([C, E, E], C, False),
    ],
)
def test_a_confident_label_that_is_a_minority_of_the_votes_does_not_stop(
    votes: list[str], leading: str, stops: bool
) -> None:
    dataset = confident_dataset(threshold=0.9, max_labels=5)
    run = finished_run(dataset)
    pair = pair_of(dataset, votes)
    aggregated(run, pair, leading, 0.99)
    assert stop_confident_pairs(run) == int(stops)
    assert stopped(pair) == [stops]


def test_a_pair_at_its_splits_maximum_stops_without_a_posterior() -> None:
    dataset = confident_dataset(max_labels=4)
    run = finished_run(dataset)
    full, short = pair_of(dataset, [E, N, C, N]), pair_of(dataset, [E, N, C])
    assert stop_confident_pairs(run) == 1
    assert stopped(full, short) == [True, False]


def test_a_pair_already_stopped_or_full_is_not_counted_again() -> None:
    dataset = confident_dataset(max_labels=4)
    run = finished_run(dataset)
    full, five = pair_of(dataset, [E, N, C, N]), pair_of(dataset, [E, E, E, N, N])
    aggregated(run, five, E, 1.0)
    assert stop_confident_pairs(run) == 1
    assert stop_confident_pairs(run) == 0
    assert stopped(full, five) == [True, False]


def test_only_the_runs_own_dawid_skene_posteriors_count() -> None:
    dataset = confident_dataset()
    run, earlier = finished_run(dataset), finished_run(dataset)
    by_mace, by_earlier = pair_of(dataset, [E, E]), pair_of(dataset, [N, N])
    aggregated(run, by_mace, E, 1.0, method="mace")
    aggregated(run, by_mace, E, 0.5)
    aggregated(earlier, by_earlier, N, 1.0)
    assert stop_confident_pairs(run) == 0
    assert stopped(by_mace, by_earlier) == [False, False]


def test_other_datasets_and_other_rules_are_left_alone() -> None:
    dataset = confident_dataset("confident", threshold=0.9, max_labels=4)
    # Another dataset's policy on the same split is laxer: it judges none of this dataset's pairs.
    other = confident_dataset("other", threshold=0.5, max_labels=3)
    run, others_run = finished_run(dataset), finished_run(other)
    mine, unsure, three = pair_of(dataset, [E, E]), pair_of(dataset, [N, N]), pair_of(dataset, [E, N, C])
    theirs, full_theirs = pair_of(other, [E, E]), pair_of(other, [E, N, C, N])
    fixed = pair_of(dataset, [E, E], split=Split.TEST)
    full_fixed = pair_of(dataset, [E, N, C, N], split=Split.TEST)
    # A pair of the confident split that keeps the fixed rule (five labels) is not stopped either.
    kept_fixed, full_kept_fixed = pair_of(dataset, [C, C]), pair_of(dataset, [E, N, C, N])
    Pair.objects.filter(pk__in=[kept_fixed.pk, full_kept_fixed.pk]).update(stopping_rule=StoppingRule.FIXED)
    for pair in (mine, fixed, kept_fixed):
        aggregated(run, pair, pair.author_label, 1.0)
    aggregated(run, unsure, N, 0.6)
    aggregated(others_run, theirs, E, 1.0)
    assert stop_confident_pairs(run) == 1
    assert stopped(mine, unsure, three, theirs, full_theirs, fixed, full_fixed, kept_fixed, full_kept_fixed) == [
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        False,
    ]


def test_each_split_is_judged_by_its_own_policy_and_the_counts_add_up() -> None:
    dataset = confident_dataset(threshold=0.9, max_labels=4)
    StoppingPolicy.objects.create(
        dataset=dataset, split=Split.TEST, rule=StoppingRule.CONFIDENT, threshold=0.6, max_labels=3
    )
    run = finished_run(dataset)
    dev_sure, dev_unsure = pair_of(dataset, [E, E]), pair_of(dataset, [E, E])
    dev_three = pair_of(dataset, [E, N, C])
    test_sure, test_three = pair_of(dataset, [N, N], split=Split.TEST), pair_of(dataset, [E, N, C], split=Split.TEST)
    test_unsure = pair_of(dataset, [C, C], split=Split.TEST)
    aggregated(run, dev_sure, E, 0.95)
    aggregated(run, dev_unsure, E, 0.7)
    aggregated(run, test_sure, N, 0.7)
    aggregated(run, test_unsure, C, 0.5)
    assert stop_confident_pairs(run) == 3
    assert stopped(dev_sure, dev_unsure, dev_three, test_sure, test_three, test_unsure) == [
        True,
        False,
        False,
        True,
        True,
        False,
    ]
