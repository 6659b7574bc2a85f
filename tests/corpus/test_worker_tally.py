"""The maintained worker figures (corpus.worker_tally): every writer moves them, and they
equal the truth grouped from the labels and pairs (quality.selectors.label_figures' rule).

After each kind of write (labels added one at a time and in batches, labels waiting for a market's
word and released, adjudications, withdrawals and retirements, exclusions and re-admissions with
the recompute that follows them, split moves, folds) and after a random mix of them, the tally has
no drift, and the flags `worker_quality` reads from it are the flags of the exact figures.
"""

import contextlib
import random

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from collection.splits import assign_splits
from corpus import tallies, worker_tally
from corpus.adjudication import adjudicate
from corpus.exclusions import set_workers_excluded
from corpus.models import (
    AdjudicationAction,
    Pair,
    Split,
    Worker,
    WorkerLabelTally,
    WorkerSecondsTally,
    WriterTally,
)
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from corpus.services import LabelRefused, add_label, add_labels, release_awaiting_labels
from quality import flags as flag_rules
from quality import sequential
from quality.selectors import label_figures, median_seconds, worker_quality
from tests import factories
from tests.present import present

pytestmark = pytest.mark.django_db

E, N, C = "entailment", "neutral", "contradiction"
LABELS = [E, N, C]


def assert_no_drift(dataset=None):
    report = tallies.check_and_rebuild(dataset, worker_tally.TALLY, repair=False)
    assert (report.keys, report.rows, report.examples) == (0, 0, [])


def workers(count, prefix="w"):
    return [Worker.objects.create(user=User.objects.create(username=f"{prefix}{i}")) for i in range(count)]


def fresh(worker):
    return Worker.objects.get(pk=worker.pk)  # is_excluded may have moved


def corpus(seed=1, pairs=12, writers=2):
    """A dataset of `pairs` pairs on premises of their own in random splits, written by `writers`
    workers or imported (no author)."""
    rng = random.Random(seed)
    dataset = factories.dataset(f"workers-{seed}")
    genre = factories.genre("fiction")
    authors = workers(writers, prefix=f"a{seed}-")
    made = [
        factories.pair(
            dataset,
            factories.premise(dataset, genre, split=rng.choice([Split.DEV, Split.TEST, Split.TRAIN])),
            [rng.choice(LABELS)],
            author=rng.choice([*authors, None]),
        )
        for _ in range(pairs)
    ]
    return dataset, made


def flags_from_the_truth(dataset=None, **options):
    """{(worker pk, flag kind)} of quality.flags over the exact figures grouped from the labels."""
    labels, medians = label_figures(Scope.of_dataset(dataset)), median_seconds(Scope.of_dataset(dataset))
    figures = [
        flag_rules.WorkerFigures(
            worker=pk,
            label_counts={label: row[f"own_{label}"] for label in LABELS if row[f"own_{label}"]},
            loo_items=row["loo_items"],
            loo_agreements=row["loo_agreements"],
            loo_own_label_counts={label: row[f"loo_own_{label}"] for label in LABELS if row[f"loo_own_{label}"]},
            loo_gold_counts={label: row[f"loo_gold_{label}"] for label in LABELS if row[f"loo_gold_{label}"]},
            timed_items=row["timed"],
            median_seconds=medians.get(pk),
        )
        for pk, row in labels.items()
        if row["n"]
    ]
    return {(flag.worker, flag.kind) for flag in flag_rules.flag_workers(figures, **options)}


def flags_from_the_tally(dataset=None, **options):
    return {
        (row.worker.pk, flag.kind)
        for row in worker_quality(Scope.of_dataset(dataset), **options)
        for flag in row.flags
        if flag.kind in flag_rules.FLAG_KINDS
    }


# --- each kind of write -----------------------------------------------------------------------------


def test_labels_added_one_at_a_time_and_in_batches_move_every_label_of_their_pairs():
    _, pairs = corpus()
    crowd = workers(5)
    for number, pair in enumerate(pairs):
        for worker in crowd[: 1 + number % 4]:  # the author's label and up to four
            add_label(pair, LABELS[(number + worker.pk) % 3], worker=worker, seconds=2.5 + number)
            assert_no_drift()
    _, batch_pairs = corpus(seed=2)
    add_labels([(pair, E) for pair in batch_pairs], worker=crowd[0], seconds=3.04)
    add_labels([(pair, N) for pair in batch_pairs], worker=crowd[1], seconds=None)
    assert_no_drift()
    assert WorkerLabelTally.objects.exists() and WorkerSecondsTally.objects.exists() and WriterTally.objects.exists()


def test_a_label_in_moves_the_leave_one_out_gold_of_the_labels_before_it():
    dataset, _ = corpus(pairs=0)
    pair = factories.pair(dataset, factories.premise(dataset), [E])
    first, second, third = workers(3)
    add_label(pair, E, worker=first)
    add_label(pair, E, worker=second)
    # Without the first: the author's E and the second's E, no majority yet.
    assert label_figures(Scope.of_dataset(dataset))[first.pk]["loo_items"] == 0
    add_label(pair, E, worker=third)  # now the others of the first have 3 E: its leave-one-out gold is E
    assert label_figures(Scope.of_dataset(dataset))[first.pk]["loo_items"] == 1
    sums = worker_tally.worker_sums(Scope.of_dataset(dataset))
    assert (sums[first.pk]["loo_items"], sums[first.pk]["loo_agreements"]) == (1, 1)
    assert_no_drift()


def test_adjudication_withdrawal_and_retirement_move_the_gold_of_the_pairs_labels():
    dataset, pairs = corpus()
    crowd = workers(5)
    for number, pair in enumerate(pairs):
        for worker in crowd[:4]:
            add_label(pair, LABELS[(number * worker.pk) % 3], worker=worker, seconds=5.0)
    for pair, action, label in (
        (pairs[0], AdjudicationAction.LABEL, C),
        (pairs[1], AdjudicationAction.RETIRE, ""),
        (pairs[0], AdjudicationAction.WITHDRAW, ""),
        (pairs[2], AdjudicationAction.LABEL, N),
    ):
        adjudicate(Pair.objects.get(pk=pair.pk), label, action=action)
        assert_no_drift()
    given = worker_tally.worker_sums(Scope.of_dataset(dataset), medians=False)
    assert sum(row["with_gold"] for row in given.values()) <= sum(row["n"] for row in given.values())


def test_an_exclusion_and_a_readmission_with_their_recompute_leave_no_drift():
    dataset, pairs = corpus(pairs=10)
    crowd = workers(6)
    for number, pair in enumerate(pairs):
        for worker in crowd[:4]:
            add_label(pair, LABELS[(number + worker.pk) % 3], worker=worker, seconds=4.0 + worker.pk % 3)
    # The excluded worker's labels stop counting: replacements come in after them (positions 6 on).
    outcome = set_workers_excluded(Worker.objects.filter(pk=crowd[0].pk), True, teams=[dataset.team_id])
    assert outcome.changed == 1
    assert_no_drift()  # checked, not rebuilt: the exclusion and its recount kept it
    for pair in pairs:
        with contextlib.suppress(LabelRefused):
            add_label(pair, E, worker=fresh(crowd[4]), seconds=7.0)
    assert_no_drift()
    outcome = set_workers_excluded(Worker.objects.filter(pk=crowd[0].pk), False, teams=[dataset.team_id])
    assert outcome.changed == 1
    assert_no_drift()
    # The tally's figures are label_figures' (the excluded worker's own labels scored against all counted).
    sums = worker_tally.worker_sums(Scope.of_dataset(dataset), medians=False)
    for pk, row in label_figures(Scope.of_dataset(dataset)).items():
        names = [name for name in worker_tally.FIGURE_NAMES if name in row]
        assert {name: sums[pk][name] for name in names} == {name: row[name] for name in names}


def test_labels_waiting_for_a_markets_word_count_in_the_figures_when_released():
    dataset, _ = corpus(pairs=0)
    pairs = [factories.pair(dataset, factories.premise(dataset), [E]) for _ in range(4)]
    crowd = workers(3)
    for worker in crowd[:2]:
        add_labels([(pair, E) for pair in pairs], worker=worker, seconds=6.0)
    # Waiting, the third E counts nowhere: scored against the author's and two E (3 votes: gold E).
    add_labels([(pair, E) for pair in pairs], worker=crowd[2], seconds=6.0, awaiting_market_session=77)
    assert worker_tally.worker_sums(Scope.of_dataset(dataset))[crowd[2].pk]["loo_items"] == 4
    assert_no_drift()
    # Released, it counts: it leaves its own leave-one-out gold (E again, of four E now) and gives
    # the others' theirs (3 of the other four).
    assert release_awaiting_labels(77)
    assert_no_drift()
    assert worker_tally.worker_sums(Scope.of_dataset(dataset))[crowd[0].pk]["loo_agreements"] == 4


def test_a_recompute_that_fixes_counters_moves_the_figures_with_them():
    _, pairs = corpus(pairs=6)
    crowd = workers(4)
    for worker in crowd:
        add_labels([(pair, C) for pair in pairs], worker=worker, seconds=9.0)
    # Counters that drifted (a bulk write around the writers) and the figures rebuilt from them:
    # the fix moves both back together.
    Pair.objects.filter(pk__in=[pair.pk for pair in pairs[:3]]).update(contradiction_votes=1, label_count=2)
    tallies.check_and_rebuild(None, worker_tally.TALLY)
    report = recompute_gold()
    assert report.fixed == 3
    assert present(report.worker_tally_drift).keys == 0
    assert_no_drift()


def test_premises_moving_to_another_split_take_their_figures_with_them():
    dataset, _ = corpus(pairs=0)
    author = workers(1, prefix="a")[0]
    pairs = [factories.pair(dataset, factories.premise(dataset, split=""), [E], author=author) for _ in range(10)]
    for worker in workers(3):
        add_labels([(pair, E) for pair in pairs], worker=worker, seconds=3.3)
    assign_splits(dataset, dev=3, test=3, seed=5)
    assert set(Pair.objects.filter(dataset=dataset).values_list("premise__split", flat=True)) == {
        "dev",
        "test",
        "train",
    }
    assert_no_drift()
    assert set(WorkerLabelTally.objects.values_list("split", flat=True)) >= {"dev", "test", "train"}


def test_folding_keeps_every_sum_and_a_write_around_the_writers_shows_as_drift():
    dataset, pairs = corpus(pairs=8)
    for worker in workers(3):
        add_labels([(pair, N) for pair in pairs], worker=worker, seconds=11.0)
    before = worker_tally.worker_sums(Scope.of_dataset(dataset))
    tallies.fold()
    assert worker_tally.worker_sums(Scope.of_dataset(dataset)) == before
    assert_no_drift()
    Pair.objects.filter(pk=pairs[0].pk).update(gold_label=C)  # no writer of corpus.services
    report = tallies.check_and_rebuild(None, worker_tally.TALLY, repair=False)
    assert report.keys
    tallies.check_and_rebuild(None, worker_tally.TALLY)
    assert_no_drift()


# --- a random mix, and the flags -----------------------------------------------------------------


def test_a_random_mix_of_writes_leaves_the_tally_equal_to_the_truth_and_the_same_flags():
    rng = random.Random(53)
    dataset, pairs = corpus(seed=53, pairs=30, writers=3)
    crowd = workers(9)
    session = 0
    assert_no_drift()
    for step in range(160):
        action = rng.random()
        try:
            if action < 0.35:
                worker = rng.choice([*crowd, None])
                add_label(
                    rng.choice(pairs),
                    rng.choice(LABELS),
                    worker=worker and fresh(worker),
                    seconds=rng.choice([None, rng.uniform(1, 30), 3.95, 4.04]),
                )
            elif action < 0.65:
                batch = rng.sample(pairs, rng.randint(1, 5))
                waiting = None
                if rng.random() < 0.2:
                    session += 1
                    waiting = session
                add_labels(
                    [(pair, rng.choice(LABELS)) for pair in batch],
                    worker=fresh(rng.choice(crowd)),
                    seconds=rng.uniform(1, 30),
                    awaiting_market_session=waiting,
                )
            elif action < 0.72 and session:
                release_awaiting_labels(rng.randint(1, session))
            elif action < 0.8:
                set_workers_excluded(
                    Worker.objects.filter(pk=rng.choice(crowd).pk), rng.random() < 0.6, teams=[dataset.team_id]
                )
            elif action < 0.88:
                decision = rng.choice(list(AdjudicationAction))
                label = rng.choice(LABELS) if decision == AdjudicationAction.LABEL else ""
                adjudicate(Pair.objects.get(pk=rng.choice(pairs).pk), label, action=decision)
            elif action < 0.93:
                tallies.fold()
            else:
                assign_splits(dataset, dev=rng.randint(0, 2), test=rng.randint(0, 2), seed=step)
        except LabelRefused:
            pass
        if step % 20 == 19:
            assert_no_drift()
            assert flags_from_the_tally(dataset) == flags_from_the_truth(dataset)
    assert_no_drift()
    options = {"guesser_min_items": 3, "same_label_min_items": 3, "too_fast_min_items": 2, "min_median_seconds": 10.0}
    assert flags_from_the_tally(dataset, **options) == flags_from_the_truth(dataset, **options)
    assert flags_from_the_tally(**options) == flags_from_the_truth(**options)


def test_the_too_fast_flag_is_the_exact_medians_where_the_histogram_leaves_it_open():
    dataset, _ = corpus(pairs=0)
    premise = factories.premise(dataset)
    just_below, just_above, clear = workers(3)
    helper = workers(1, prefix="h")[0]
    # Ten timed labels each, five either side of 4 s: the histogram's buckets either side of 4 s
    # cannot tell whether the median is under 4 s; the exact medians are 3.995 and 4.005.
    for number in range(10):
        pair = factories.pair(dataset, premise, [E])
        add_label(pair, E, worker=just_below, seconds=3.95 if number < 5 else 4.04)
        add_label(pair, E, worker=just_above, seconds=3.96 if number < 5 else 4.05)
        add_label(pair, E, worker=clear, seconds=12.34)
        add_label(pair, E, worker=helper, seconds=20.0)
    rows = {row.worker.pk: row for row in worker_quality(Scope.of_dataset(dataset))}
    kinds = {pk: {flag.kind for flag in row.flags} for pk, row in rows.items()}
    assert flag_rules.TOO_FAST in kinds[just_below.pk]
    assert flag_rules.TOO_FAST not in kinds[just_above.pk]
    assert rows[just_below.pk].median_seconds == pytest.approx(3.995)  # read exactly, being open
    assert rows[just_above.pk].median_seconds == pytest.approx(4.005)
    assert rows[clear.pk].median_seconds != 12.34  # the histogram's: the middle of its bucket,
    assert rows[clear.pk].median_seconds == pytest.approx(12.34, rel=0.046)  # within 4.6%
    assert flags_from_the_tally(dataset) == flags_from_the_truth(dataset)


def test_worker_quality_reads_no_label_and_as_many_statements_for_three_times_the_crowd():
    def crowd_of(seed):
        _, pairs = corpus(seed=seed, pairs=9, writers=2)
        crowd = workers(4, prefix=f"c{seed}-")
        for number, worker in enumerate(crowd):
            add_labels(
                [(pair, LABELS[(number + pair.pk) % 3]) for pair in pairs[: 4 + number]], worker=worker, seconds=8.0
            )

    def statements():
        with CaptureQueriesContext(connection) as captured:
            rows = worker_quality()
        return [query["sql"] for query in captured.captured_queries], rows

    crowd_of(1)
    small, small_rows = statements()
    crowd_of(2)
    crowd_of(3)
    large, large_rows = statements()
    assert len(large_rows) > 2 * len(small_rows)
    assert len(large) == len(small), (small, large)
    # The figures are the tally's: no statement groups the labels (the exact median of an open
    # worker aside, none here) or the pairs.
    assert not [sql for sql in large if "validation_validationlabel" in sql or 'FROM "collection_pair"' in sql]


def test_the_flags_thresholds_are_bounds_of_the_seconds_buckets():
    """The too-fast flag's threshold and the quality test's far-too-fast one fall on bucket bounds,
    so a median in a bucket either side of them is decided by the histogram alone."""
    lower_bounds = {worker_tally.bucket_bounds(bucket)[0] for bucket in range(-48, 96)}
    assert flag_rules.TOO_FAST_SECONDS in lower_bounds
    assert sequential.FAR_TOO_FAST_SECONDS in lower_bounds
    for bucket in range(-47, 95):
        low, high = worker_tally.bucket_bounds(bucket)
        assert low < high == worker_tally.bucket_bounds(bucket + 1)[0]
        assert (high - low) / 2 < 0.046 * low  # the middle of a bucket is within 4.6% of its seconds


def test_a_deleted_workers_rows_go_with_them():
    """The tally names workers without a database constraint (no share lock on their rows at each
    submit's commit); Django deletes a worker's rows with the worker all the same."""
    _, pairs = corpus(pairs=4, writers=1)
    leaving, staying = workers(2)
    for worker in (leaving, staying):
        add_labels([(pair, E) for pair in pairs], worker=worker, seconds=5.0)
    Worker.objects.filter(pk=leaving.pk).delete()
    for model, _ in worker_tally.TABLES:
        assert not model.objects.filter(worker_id=leaving.pk).exists()
    assert WorkerLabelTally.objects.filter(worker_id=staying.pk).exists()
