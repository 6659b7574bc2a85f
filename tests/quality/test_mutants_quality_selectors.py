"""The quality pages' reads (quality/selectors.py) at the edges mutmut found unguarded: a worker
row's shares are None where nothing was counted and exact where something was, a two-way worker's
shares leave the three-way labels out, the flag words name each flag in words, the other judges'
most common answer is no reference on a tie or without another judge, the histogram's median is
read exactly only where the too-fast flag needs it, and each grouped figure (labels, medians, catch
trials, written pairs, reference labels) counts what its page says it counts."""

import pytest

from corpus.labels import TWO_WAY_SCHEME
from corpus.models import Label, Pair, Worker
from corpus.pair_record_models import GrammaticalityJudgment
from corpus.scope import Scope
from corpus.services import add_label
from corpus.tallies.worker_tally import bucket_bounds
from crowd.models import CodeHold, DeviceSighting, StudySession
from quality import flags as flag_rules
from quality import sequential
from quality.models import (
    CatchTrialAnswer,
    QualificationAnswer,
    QualificationAttempt,
    QualificationTest,
    ReferenceLabel,
)
from quality.selectors import (
    _BOUND_SLACK,
    WorkerQuality,
    _most_common_of_others,
    _tallies_by_worker,
    catch_figures,
    flag_kind_words,
    flag_marks,
    flag_words,
    flagged_worker_ids,
    guesser_evidence_by_worker,
    histogram_medians,
    label_figures,
    median_per_worker,
    median_seconds,
    next_pair_to_label,
    quality_evidence,
    quality_evidence_by_worker,
    reference_label_counts,
    sequential_evidence,
    worker_quality,
    writer_figures,
)
from tests import factories
from tests.collection.writing_helpers import make_study
from tests.validation.validation_factories import make_dataset, make_pair

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
LABELS = [E, N, C]


def flag(worker: int, kind: str) -> flag_rules.WorkerFlag:
    return flag_rules.WorkerFlag(worker=worker, kind=kind, reason="", figures={})


def unsaved_row(pk: int = 1, **figures) -> WorkerQuality:
    return WorkerQuality(worker=Worker(pk=pk), **figures)


# --- a worker row's own figures ----------------------------------------------------------------------


def test_a_row_with_nothing_counted_has_no_shares():
    row = unsaved_row()
    assert (row.loo_agreement, row.catch_accuracy, row.written_gold_differs_share) == (None, None, None)
    assert row.label_shares == {E: None, N: None, C: None}
    assert row.two_way_shares is None


def test_a_rows_shares_divide_what_agreed_by_what_was_counted():
    row = unsaved_row(
        loo_items=4, loo_agreements=3, catch_seen=5, catch_matched=2, pairs_written=8, written_gold_differs=2
    )
    assert row.loo_agreement == 0.75
    assert row.catch_accuracy == 0.4
    assert row.written_gold_differs_share == 0.25


def test_three_way_shares_are_of_the_three_way_labels_only():
    row = unsaved_row(label_counts={E: 6, N: 3, C: 1}, three_way_counts={E: 2, C: 2})
    assert row.label_shares == {E: 0.5, N: 0.0, C: 0.5}


def test_two_way_shares_are_the_labels_given_beside_the_three_way_ones():
    # Two-way datasets store "not entailed" as neutral: 4 entailed and 1 not entailed there.
    row = unsaved_row(label_counts={E: 6, N: 1, C: 1}, three_way_counts={E: 2, C: 1})
    assert row.two_way_shares == {"entailed": 0.8, "not_entailed": 0.2}


def test_a_worker_of_three_way_datasets_only_has_no_two_way_shares():
    row = unsaved_row(label_counts={E: 2, C: 1}, three_way_counts={E: 2, C: 1})
    assert row.two_way_shares is None


def test_a_rows_figures_are_the_flags_input_named_by_the_workers_pk():
    row = unsaved_row(
        pk=42,
        label_counts={E: 3},
        loo_items=3,
        loo_agreements=2,
        loo_own_label_counts={E: 3},
        loo_gold_counts={E: 2, N: 1},
        timed_items=3,
        median_seconds=2.5,
    )
    figures = row.figures()
    assert figures.worker == 42
    assert figures.label_counts == {E: 3}
    assert (figures.loo_items, figures.loo_agreements) == (3, 2)
    assert figures.loo_gold_counts == {E: 2, N: 1}
    assert (figures.timed_items, figures.median_seconds) == (3, 2.5)


# --- flag words and flagged ids ------------------------------------------------------------------------


def test_flag_words_name_each_flag_in_words():
    assert flag_kind_words([flag_rules.RANDOM_GUESSER, flag_rules.TOO_FAST]) == [
        f"flagged: {flag_rules.RANDOM_GUESSER.replace('_', ' ')}",
        f"flagged: {flag_rules.TOO_FAST.replace('_', ' ')}",
    ]
    assert flag_kind_words(["same_label"]) == ["flagged: same label"]
    row = unsaved_row(flags=[flag(1, "random_guesser"), flag(1, "too_fast")])
    assert flag_words(row) == ["flagged: random guesser", "flagged: too fast"]


def test_flagged_ids_are_the_flagged_rows_workers_in_order():
    rows = [
        unsaved_row(pk=9, flags=[flag(9, "too_fast")]),
        unsaved_row(pk=3),
        unsaved_row(pk=5, flags=[flag(5, "same_label")]),
    ]
    assert flagged_worker_ids(rows) == [5, 9]


# --- the other judges' most common answer -------------------------------------------------------------


def test_no_other_judge_is_no_reference():
    assert _most_common_of_others([], 1) is None
    assert _most_common_of_others([(1, E)], 1) is None


def test_one_other_judge_is_a_reference_of_one():
    assert _most_common_of_others([(1, N), (2, E)], 1) == (E, "one other")


def test_two_others_agreeing_are_an_agreeing_reference_and_the_worker_is_not_counted():
    assert _most_common_of_others([(1, N), (2, E), (3, E), (4, N)], 1) == (E, "agreeing")


def test_a_tie_among_the_others_is_no_reference():
    assert _most_common_of_others([(2, E), (3, N)], 1) is None
    # The worker's own answer does not break the tie.
    assert _most_common_of_others([(1, E), (2, E), (3, N)], 1) is None


# --- the histogram's medians ----------------------------------------------------------------------------


def middle(bucket: int) -> float:
    low, high = bucket_bounds(bucket)
    return (low + high) / 2


def test_a_worker_without_timed_labels_has_no_histogram_median():
    sums = {7: {"timed": 0, "lower_middle": None, "upper_middle": None}}
    assert histogram_medians(sums) == {}


def test_the_histogram_median_is_the_middle_of_the_two_middle_buckets_bounds():
    # Far from the too-fast threshold: decided by the bounds, nothing read.
    sums = {7: {"timed": 30, "lower_middle": 16, "upper_middle": 24}}
    (low, _), (_, high) = bucket_bounds(16), bucket_bounds(24)
    lows = (bucket_bounds(16)[0] + bucket_bounds(24)[0]) / 2
    highs = (bucket_bounds(16)[1] + bucket_bounds(24)[1]) / 2
    assert histogram_medians(sums) == {7: pytest.approx((lows + highs) / 2, rel=1e-12)}
    assert low < histogram_medians(sums)[7] < high


def test_the_slowest_bucket_gives_its_lower_bound():
    top = 12 * 8  # the highest bucket: no upper bound
    sums = {7: {"timed": 30, "lower_middle": top, "upper_middle": top}}
    assert histogram_medians(sums) == {7: bucket_bounds(top)[0]}


@pytest.mark.django_db
def test_an_open_median_is_read_exactly_from_the_labels(make_worker):
    # Bucket 0 starts exactly at the too-fast threshold (4 s): its bounds leave the flag open.
    worker = make_worker()
    dataset = make_dataset()
    for _ in range(10):
        add_label(make_pair(dataset), E, worker=worker, seconds=4.1)
    sums = {worker.pk: {"timed": 10, "lower_middle": 0, "upper_middle": 0}}
    assert histogram_medians(sums) == {worker.pk: pytest.approx(4.1)}


@pytest.mark.django_db
def test_a_median_just_under_the_threshold_is_read_exactly_too(make_worker):
    # Bucket -1 ends exactly at the threshold: a label on the bound is not decided by a rounding.
    worker = make_worker()
    dataset = make_dataset()
    for _ in range(10):
        add_label(make_pair(dataset), E, worker=worker, seconds=3.9)
    sums = {worker.pk: {"timed": 10, "lower_middle": -1, "upper_middle": -1}}
    assert histogram_medians(sums) == {worker.pk: pytest.approx(3.9)}


@pytest.mark.django_db
def test_an_open_median_of_too_few_timed_labels_stays_the_histograms(make_worker):
    # Under the flag's minimum of timed items the flag does not fire whatever the median: no read.
    worker = make_worker()
    dataset = make_dataset()
    for _ in range(9):
        add_label(make_pair(dataset), E, worker=worker, seconds=4.1)
    sums = {worker.pk: {"timed": 9, "lower_middle": 0, "upper_middle": 0}}
    assert histogram_medians(sums) == {worker.pk: middle(0)}
    # A lower minimum (the flag's option) makes it open again.
    assert histogram_medians(sums, min_items=9) == {worker.pk: pytest.approx(4.1)}


@pytest.mark.django_db
def test_the_threshold_given_decides_which_medians_are_open(make_worker):
    worker = make_worker()
    dataset = make_dataset()
    for _ in range(10):
        add_label(make_pair(dataset), E, worker=worker, seconds=8.3)
    bucket = 8  # [8 s, 8.72 s)
    sums = {worker.pk: {"timed": 10, "lower_middle": bucket, "upper_middle": bucket}}
    assert histogram_medians(sums) == {worker.pk: middle(bucket)}
    assert histogram_medians(sums, threshold=8.0) == {worker.pk: pytest.approx(8.3)}
    assert histogram_medians(sums, threshold=8.5) == {worker.pk: pytest.approx(8.3)}
    assert histogram_medians(sums, threshold=9.0) == {worker.pk: middle(bucket)}


# --- the figures grouped from the labels -----------------------------------------------------------------


@pytest.mark.django_db
def test_label_figures_count_each_figure_of_a_workers_labels(make_worker):
    dataset = make_dataset()
    me, a, b, c = (make_worker() for _ in range(4))
    # Others E (author), E, E, N: gold E without me; I said E, timed.
    p1 = make_pair(dataset, label=E)
    add_label(p1, E, worker=me, seconds=3.0)
    for worker, label in ((a, E), (b, E), (c, N)):
        add_label(p1, label, worker=worker)
    # Others N (author), N, N, C: gold N without me; I said C, untimed.
    p2 = make_pair(dataset, label=N)
    add_label(p2, C, worker=me)
    for worker, label in ((a, N), (b, N), (c, C)):
        add_label(p2, label, worker=worker)
    # Others E, N, C, C: no gold without me; I said C.
    p3 = make_pair(dataset, label=E)
    add_label(p3, C, worker=me, seconds=5.0)
    for worker, label in ((a, N), (b, C), (c, C)):
        add_label(p3, label, worker=worker)

    mine = label_figures(Scope.of_dataset(dataset))[me.pk]

    assert mine == {
        "worker_id": me.pk,
        "n": 3,
        "timed": 2,
        "loo_items": 2,
        "loo_agreements": 1,
        "own_entailment": 1,
        "own_neutral": 0,
        "own_contradiction": 2,
        "three_way_entailment": 1,
        "three_way_neutral": 0,
        "three_way_contradiction": 2,
        "loo_own_entailment": 1,
        "loo_own_neutral": 0,
        "loo_own_contradiction": 1,
        "loo_gold_entailment": 1,
        "loo_gold_neutral": 1,
        "loo_gold_contradiction": 0,
    }


@pytest.mark.django_db
def test_label_figures_of_a_two_way_dataset_count_no_three_way_labels(make_worker):
    dataset = factories.dataset("recast", label_scheme=TWO_WAY_SCHEME)
    me = make_worker()
    add_label(make_pair(dataset, label=E), E, worker=me)
    add_label(make_pair(dataset, label=E), N, worker=me)
    mine = label_figures(Scope.of_dataset(dataset))[me.pk]
    assert (mine["own_entailment"], mine["own_neutral"]) == (1, 1)
    assert (mine["three_way_entailment"], mine["three_way_neutral"]) == (0, 0)
    assert mine["loo_items"] == 0


@pytest.mark.django_db
def test_median_seconds_are_each_workers_exact_medians(make_worker):
    dataset = make_dataset()
    odd, even, untimed = make_worker(), make_worker(), make_worker()
    for seconds in (2.0, 4.0, 30.0):
        add_label(make_pair(dataset), E, worker=odd, seconds=seconds)
    for seconds in (2.0, 5.0):
        add_label(make_pair(dataset), E, worker=even, seconds=seconds)
    add_label(make_pair(dataset), E, worker=untimed)
    medians = median_seconds(Scope.of_dataset(dataset))
    assert medians == {odd.pk: 4.0, even.pk: 3.5}
    assert all(type(value) is float for value in medians.values())


@pytest.mark.django_db
def test_median_per_worker_reads_the_rows_of_the_query_given(make_worker):
    one, two = make_worker(), make_worker()
    sql = "SELECT * FROM (VALUES (%s, 1.0), (%s, 3.0), (%s, 6.0)) AS t(worker_id, seconds)"
    assert median_per_worker(sql, [one.pk, one.pk, two.pk]) == {one.pk: 2.0, two.pk: 6.0}


@pytest.mark.django_db
def test_catch_figures_count_seen_and_matched_of_a_study_only_when_asked(make_worker):
    dataset = make_dataset()
    study = make_study(dataset)
    worker = make_worker()
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="s1")
    for matched, in_study in ((True, True), (False, True), (True, False)):
        CatchTrialAnswer.objects.create(
            worker=worker,
            pair=make_pair(dataset),
            study_session=session if in_study else None,
            batch="00000000-0000-0000-0000-000000000001",
            label=E,
            expected=E if matched else N,
            matched=matched,
        )
    assert catch_figures(Scope.of_dataset(dataset)) == {worker.pk: (3, 2)}
    assert catch_figures(Scope.of_dataset(dataset), study=study) == {worker.pk: (2, 1)}


@pytest.mark.django_db
def test_writer_figures_count_five_label_pairs_and_those_whose_gold_differs(make_worker):
    dataset = make_dataset()
    writer = make_worker()
    others = [make_worker() for _ in range(4)]
    for author_label, votes in ((E, [E, E, N, C]), (N, [C, C, C, N]), (C, [C, C, C, C])):
        pair = make_pair(dataset, author=writer, label=author_label)
        for worker, label in zip(others, votes, strict=True):
            add_label(pair, label, worker=worker)
    unfinished = make_pair(dataset, author=writer, label=E)  # four labels short: not counted
    add_label(unfinished, N, worker=others[0])
    assert writer_figures(Scope.of_dataset(dataset)) == {writer.pk: (3, 1)}


@pytest.mark.django_db
def test_the_next_pair_to_label_is_the_oldest_judged_pair_then_the_oldest_pair(make_worker, django_user_model):
    dataset = make_dataset()
    labellers = [make_worker() for _ in range(4)]
    older, newer = make_pair(dataset), make_pair(dataset)
    judged = [make_pair(dataset), make_pair(dataset)]
    for pair in judged:
        for worker in labellers:
            add_label(pair, E, worker=worker)
    scope = Scope.of_dataset(dataset)
    assert next_pair_to_label(scope) == judged[0]
    ReferenceLabel.objects.create(pair=judged[0], label=E)
    assert next_pair_to_label(scope) == judged[1]
    ReferenceLabel.objects.create(pair=judged[1], label=E)
    assert next_pair_to_label(scope) == older
    ReferenceLabel.objects.create(pair=older, label=E)
    assert next_pair_to_label(scope) == newer
    ReferenceLabel.objects.create(pair=newer, label=E)
    assert next_pair_to_label(scope) is None


@pytest.mark.django_db
def test_reference_label_counts_count_the_labels_and_the_catch_trials_among_them():
    dataset = make_dataset()
    for is_catch_trial in (True, False, True):
        ReferenceLabel.objects.create(pair=make_pair(dataset), label=E, is_catch_trial=is_catch_trial)
    assert reference_label_counts(Scope.of_dataset(dataset)) == {"labelled": 3, "catch_trials": 2}


# --- the rows and their flags ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_flagged_workers_come_first_then_the_most_labels_then_the_oldest_id(make_worker):
    dataset = make_dataset()
    fast, few, many, same = (make_worker() for _ in range(4))
    for number in range(12):
        pair = make_pair(dataset, label=LABELS[number % 3])
        add_label(pair, LABELS[number % 3], worker=fast, seconds=1.0)
        add_label(pair, LABELS[number % 3], worker=many, seconds=12.0)
        if number < 3:
            add_label(pair, LABELS[number % 3], worker=few, seconds=12.0)
            add_label(pair, LABELS[number % 3], worker=same, seconds=12.0)
    rows = worker_quality(Scope.of_dataset(dataset))
    assert [row.worker.pk for row in rows] == [fast.pk, many.pk, few.pk, same.pk]
    assert [flag.kind for flag in rows[0].flags] == [flag_rules.TOO_FAST]
    assert flagged_worker_ids(rows) == [fast.pk]
    assert flag_marks([fast.pk, many.pk]) == {fast.pk: ["flagged: too fast"]}
    assert flag_marks([many.pk]) == {}
    assert flag_marks([]) == {}


@pytest.mark.django_db
def test_the_too_fast_options_reach_the_flag_and_the_exact_median(make_worker):
    dataset = make_dataset()
    worker = make_worker()
    for _ in range(5):
        add_label(make_pair(dataset), E, worker=worker, seconds=8.3)
    scope = Scope.of_dataset(dataset)
    (row,) = worker_quality(scope)
    assert row.flags == [] and row.median_seconds == pytest.approx(8.3, rel=0.046)
    (row,) = worker_quality(scope, min_median_seconds=8.5, too_fast_min_items=5)
    assert [flag.kind for flag in row.flags] == [flag_rules.TOO_FAST]
    assert row.median_seconds == pytest.approx(8.3)


# --- the guesser and quality evidence's tallies ------------------------------------------------------------


def tally_of(tallies: dict, worker: int) -> dict:
    return {stratum: (counts.own, counts.reference, counts.agreements) for stratum, counts in tallies[worker].items()}


def catch_answer(worker: Worker, pair, label: str, expected: str) -> None:
    CatchTrialAnswer.objects.create(
        worker=worker,
        pair=pair,
        batch="00000000-0000-0000-0000-000000000001",
        label=label,
        expected=expected,
        matched=label == expected,
    )


def written_and_catch_corpus(make_worker):
    three = make_dataset()
    two = factories.dataset("recast", label_scheme=TWO_WAY_SCHEME)
    worker = make_worker()
    add_label(make_pair(three, label=E), E, worker=worker, seconds=2.0)
    add_label(make_pair(three, label=N), E, worker=worker, seconds=4.0)
    add_label(make_pair(two, label=E), N, worker=worker, seconds=9.0)
    catch_answer(worker, make_pair(three), E, E)
    catch_answer(worker, make_pair(two), N, E)
    return worker


@pytest.mark.django_db
def test_each_answer_is_tallied_against_its_written_label_or_catch_answer_by_scheme(make_worker):
    worker = written_and_catch_corpus(make_worker)
    assert tally_of(_tallies_by_worker([worker.pk, worker.pk]), worker.pk) == {
        ("written", "three"): ({E: 2}, {E: 1, N: 1}, 1),
        ("written", "two"): ({N: 1}, {E: 1}, 0),
        ("catch", "three"): ({E: 1}, {E: 1}, 1),
        ("catch", "two"): ({N: 1}, {E: 1}, 0),
    }
    # The catch-only flag asks about the other labels: the catch trials are left out.
    assert set(_tallies_by_worker([worker.pk], catch_trials=False)[worker.pk]) == {
        ("written", "three"),
        ("written", "two"),
    }


@pytest.mark.django_db
def test_no_workers_have_no_tallies_and_a_worker_without_answers_an_empty_one(make_worker):
    idle = make_worker()
    assert _tallies_by_worker([]) == {}
    assert _tallies_by_worker([idle.pk]) == {idle.pk: {}}
    assert guesser_evidence_by_worker([]) == {}


@pytest.mark.django_db
def test_grammaticality_judgments_are_tallied_against_the_other_judges_unless_held(make_worker):
    dataset = make_dataset()
    worker, a, b, held = (make_worker() for _ in range(4))
    study = make_study(dataset)
    session = StudySession.objects.create(study=study, worker=held, external_session_id="held")
    CodeHold.objects.create(session=session, kind="guesser", text="At chance.")
    judged = {
        "agreeing": {worker: "major", a: "none", b: "none"},
        "one other": {worker: "minor", a: "minor"},
        "tie": {worker: "none", a: "none", b: "major"},
        "held": {worker: "none", a: "none", held: "major"},
    }
    for answers in judged.values():
        pair = make_pair(dataset)
        for judge, judgment in answers.items():
            GrammaticalityJudgment.objects.create(pair=pair, worker=judge, judgment=judgment)
    assert tally_of(_tallies_by_worker([worker.pk]), worker.pk) == {
        ("grammaticality", "agreeing"): ({"major": 1}, {"none": 1}, 0),
        ("grammaticality", "one other"): ({"minor": 1, "none": 1}, {"minor": 1, "none": 1}, 2),
    }


@pytest.mark.django_db
def test_the_guesser_evidence_weighs_each_stratum_with_its_kappa(make_worker):
    dataset = make_dataset()
    worker, a, b = (make_worker() for _ in range(3))
    add_label(make_pair(dataset, label=E), N, worker=worker)
    for answers in ({worker: "major", a: "none", b: "none"}, {worker: "minor", a: "minor"}):
        pair = make_pair(dataset)
        for judge, judgment in answers.items():
            GrammaticalityJudgment.objects.create(pair=pair, worker=judge, judgment=judgment)
    expected = sequential.combined_sequential_test(
        [
            sequential.Stratum(own={N: 1}, reference={E: 1}, agreements=0, kappa=sequential.ORDINARY_KAPPA),
            sequential.Stratum(
                own={"major": 1}, reference={"none": 1}, agreements=0, kappa=sequential.AGREEING_OTHERS_KAPPA
            ),
            sequential.Stratum(own={"minor": 1}, reference={"minor": 1}, agreements=1, kappa=sequential.OTHERS_KAPPA),
        ]
    )
    assert guesser_evidence_by_worker([worker.pk]) == {worker.pk: expected}


@pytest.mark.django_db
def test_the_quality_evidence_weighs_each_reference_by_its_accuracy_and_reads_the_speed(make_worker):
    worker = written_and_catch_corpus(make_worker)
    accuracy = sequential.REFERENCE_ACCURACY
    strata = [
        sequential.QualityStratum(
            own={E: 2}, reference={E: 1, N: 1}, agreements=1, reference_accuracy=accuracy["written"]
        ),
        sequential.QualityStratum(
            own={N: 1}, reference={E: 1}, agreements=0, reference_accuracy=accuracy["written"], labels=2
        ),
        sequential.QualityStratum(own={E: 1}, reference={E: 1}, agreements=1, reference_accuracy=accuracy["catch"]),
        sequential.QualityStratum(
            own={N: 1}, reference={E: 1}, agreements=0, reference_accuracy=accuracy["catch"], labels=2
        ),
    ]
    more = sequential.QualityStratum(own={E: 1}, reference={E: 1}, agreements=1, reference_accuracy=0.9)
    expected = sequential.sequential_quality_test(
        [*strata, more], poor=0.5, acceptable=0.8, timed_items=3, median_seconds=4.0
    )
    assert quality_evidence(worker, poor=0.5, acceptable=0.8, more=[more]) == expected
    assert expected.median_seconds == 4.0
    plain = sequential.sequential_quality_test(strata, timed_items=3, median_seconds=4.0)
    assert quality_evidence_by_worker([worker.pk]) == {worker.pk: plain}


def unwritten_pair(dataset) -> Pair:
    """An item built from captions: no author, no written label; its first judgment is position 1."""
    return Pair.objects.create(
        dataset=dataset,
        premise=factories.premise(dataset),
        pair_id=f"scene-{Pair.objects.count()}",
        hypothesis="A person moves in the scene.",
        author_label="",
        gold_label="-",
    )


@pytest.mark.django_db
def test_an_unwritten_item_is_tallied_against_a_researchers_label_else_the_counted_other_judges(make_worker):
    dataset = make_dataset()
    worker, a, b, excluded = (make_worker() for _ in range(4))
    referenced = unwritten_pair(dataset)
    ReferenceLabel.objects.create(pair=referenced, label=N)
    add_label(referenced, E, worker=worker)
    add_label(referenced, E, worker=a)
    agreeing = unwritten_pair(dataset)
    for judge in (worker, a, b):
        add_label(agreeing, C, worker=judge)
    one_other = unwritten_pair(dataset)
    for judge, label in ((worker, E), (a, N), (excluded, E)):
        add_label(one_other, label, worker=judge)
    factories.exclude(excluded)  # an excluded worker's answer is no reference: a's N is the one other

    assert tally_of(_tallies_by_worker([worker.pk]), worker.pk) == {
        ("reference", "three"): ({E: 1}, {N: 1}, 0),
        ("others", "agreeing"): ({C: 1}, {C: 1}, 1),
        ("others", "one other"): ({E: 1}, {N: 1}, 0),
    }
    accuracy = sequential.REFERENCE_ACCURACY
    expected = sequential.sequential_quality_test(
        [
            sequential.QualityStratum(
                own={E: 1}, reference={N: 1}, agreements=0, reference_accuracy=accuracy["reference"]
            ),
            sequential.QualityStratum(
                own={C: 1}, reference={C: 1}, agreements=1, reference_accuracy=accuracy["agreeing"]
            ),
            sequential.QualityStratum(
                own={E: 1}, reference={N: 1}, agreements=0, reference_accuracy=accuracy["one other"]
            ),
        ],
        timed_items=0,
        median_seconds=None,
    )
    assert quality_evidence_by_worker([worker.pk]) == {worker.pk: expected}


@pytest.mark.django_db
def test_qualification_answers_of_every_try_are_tallied_against_the_researchers_labels(make_worker):
    dataset = make_dataset()
    worker = make_worker()
    test = QualificationTest.objects.create(study=make_study(dataset))
    references = [ReferenceLabel.objects.create(pair=make_pair(dataset), label=label) for label in (E, N)]
    for number, (label, passed) in enumerate(((C, False), (N, True)), start=1):
        attempt = QualificationAttempt.objects.create(
            test=test, worker=worker, number=number, correct=1, total=2, score=0.5, passed=passed
        )
        for reference, given in zip(references, (E, label), strict=True):
            QualificationAnswer.objects.create(
                attempt=attempt, reference=reference, label=given, is_correct=given == reference.label
            )
    assert tally_of(_tallies_by_worker([worker.pk]), worker.pk) == {
        ("qualification", "three"): ({E: 2, C: 1, N: 1}, {E: 2, N: 2}, 3),
    }
    assert _tallies_by_worker([worker.pk], catch_trials=False) == {worker.pk: {}}


# --- the rows of worker_quality: every figure, from every source -------------------------------------------


def catch_answers(worker: Worker, dataset, answers: list[tuple[str, str]]) -> None:
    for label, expected in answers:
        catch_answer(worker, make_pair(dataset), label, expected)


def written_pair(dataset, author: Worker, written: str, labellers: list[Worker], votes: list[str]) -> Pair:
    pair = make_pair(dataset, author=author, label=written)
    for worker, label in zip(labellers, votes, strict=True):
        add_label(pair, label, worker=worker)
    return pair


@pytest.mark.django_db
def test_a_row_carries_each_figure_of_the_labels_catch_trials_and_written_pairs(make_worker):
    three = make_dataset()
    two = factories.dataset("recast", label_scheme=TWO_WAY_SCHEME)
    me, a, b, c, d = (make_worker() for _ in range(5))
    # The labels of test_label_figures_count_each_figure_of_a_workers_labels, and one two-way label.
    for written, mine, seconds, others in (
        (E, E, 3.0, (E, E, N)),
        (N, C, None, (N, N, C)),
        (E, C, 5.0, (N, C, C)),
    ):
        pair = make_pair(three, label=written)
        add_label(pair, mine, worker=me, seconds=seconds)
        for worker, label in zip((a, b, c), others, strict=True):
            add_label(pair, label, worker=worker)
    add_label(make_pair(two, label=E), N, worker=me)
    catch_answers(me, three, [(E, E), (N, N), (C, E)])
    written_pair(three, me, E, [a, b, c, d], [E, E, N, C])  # gold E: as written
    written_pair(three, me, E, [a, b, c, d], [C, C, C, N])  # gold C: differs
    written_pair(three, me, N, [a, b, c, d], [N, E, C, E])  # five labels, no gold: differs too

    rows = {row.worker.pk: row for row in worker_quality()}
    row = rows[me.pk]

    assert row.labels_given == 4
    assert row.label_counts == {E: 1, N: 1, C: 2}
    assert row.three_way_counts == {E: 1, C: 2}
    assert (row.loo_items, row.loo_agreements) == (2, 1)
    assert row.loo_own_label_counts == {E: 1, C: 1}
    assert row.loo_gold_counts == {E: 1, N: 1}
    assert row.timed_items == 2
    assert row.median_seconds == pytest.approx(4.0, rel=0.046)
    assert (row.catch_seen, row.catch_matched) == (3, 2)
    assert (row.pairs_written, row.written_gold_differs) == (3, 2)
    # A labeller who neither answered catch trials nor wrote has none of either.
    assert (rows[d.pk].catch_seen, rows[d.pk].catch_matched) == (0, 0)
    assert (rows[d.pk].pairs_written, rows[d.pk].written_gold_differs) == (0, 0)


@pytest.mark.django_db
def test_a_worker_with_only_catch_trials_or_only_written_pairs_has_a_row_of_those(make_worker):
    dataset = make_dataset()
    catcher, writer, unfinished_writer = (make_worker() for _ in range(3))
    labellers = [make_worker() for _ in range(4)]
    catch_answers(catcher, dataset, [(E, E), (N, C)])
    written_pair(dataset, writer, E, labellers, [E, E, E, N])
    written_pair(dataset, writer, N, labellers, [E, E, E, E])
    written_pair(dataset, unfinished_writer, E, labellers[:3], [E, E, E])  # four labels: not counted

    rows = {row.worker.pk: row for row in worker_quality(Scope.of_dataset(dataset))}

    assert set(rows) == {catcher.pk, writer.pk, *(worker.pk for worker in labellers)}
    caught, wrote = rows[catcher.pk], rows[writer.pk]
    for row in (caught, wrote):
        assert (row.labels_given, row.label_counts, row.three_way_counts) == (0, {}, {})
        assert (row.loo_items, row.loo_agreements, row.timed_items, row.median_seconds) == (0, 0, 0, None)
        assert row.flags == []
    assert (caught.catch_seen, caught.catch_matched, caught.pairs_written) == (2, 1, 0)
    assert (wrote.catch_seen, wrote.pairs_written, wrote.written_gold_differs) == (0, 2, 1)


@pytest.mark.django_db
def test_the_rows_workers_come_with_their_user_names_read(make_worker, django_assert_num_queries):
    dataset = make_dataset()
    worker = make_worker(username="reader")
    add_label(make_pair(dataset), E, worker=worker)
    (row,) = worker_quality(Scope.of_dataset(dataset))
    with django_assert_num_queries(0):
        assert row.worker.user is not None and row.worker.user.username == "reader"


@pytest.mark.django_db
def test_a_workers_exact_median_is_read_from_the_scopes_labels_only(make_worker):
    here, elsewhere = make_dataset(), factories.dataset("elsewhere")
    worker = make_worker()
    for _ in range(10):
        add_label(make_pair(here), E, worker=worker, seconds=4.1)
        add_label(make_pair(elsewhere), E, worker=worker, seconds=2.0)
    (row,) = worker_quality(Scope.of_dataset(here))
    assert row.median_seconds == pytest.approx(4.1)


# --- the flags a row gets beside the label flags ------------------------------------------------------------


@pytest.mark.django_db
def test_catch_trials_right_beside_ordinary_labels_at_chance_are_flagged_catch_only(make_worker):
    dataset = make_dataset()
    cheat, honest = make_worker(), make_worker()
    # Three ordinary labels, each against its written label: the cheat's at chance, the honest's not.
    for written, shifted in ((E, N), (N, C), (C, E)):
        pair = make_pair(dataset, label=written)
        add_label(pair, shifted, worker=cheat)
        add_label(pair, written, worker=honest)
    # Catch trials all right, of every label: weighed beside the others they would lift the cheat.
    for worker in (cheat, honest):
        catch_answers(worker, dataset, [(E, E), (N, N), (C, C), (E, E)])

    rows = {row.worker.pk: row for row in worker_quality(Scope.of_dataset(dataset))}

    (flag,) = rows[cheat.pk].flags
    evidence = guesser_evidence_by_worker([cheat.pk], catch_trials=False)[cheat.pk]
    assert flag == sequential.catch_only_flag(cheat.pk, 4, 4, evidence)
    assert (flag.worker, flag.kind) == (cheat.pk, sequential.CATCH_ONLY)
    assert flag.figures["catch_seen"] == 4 and flag.figures["catch_matched"] == 4
    assert (flag.figures["ordinary_items"], flag.figures["ordinary_agreements"]) == (3, 0)
    assert rows[honest.pk].flags == []
    assert flagged_worker_ids(list(rows.values())) == [cheat.pk]


@pytest.mark.django_db
def test_ids_seen_in_one_browser_are_flagged_with_the_others_of_the_scope_only(make_worker):
    dataset = make_dataset()
    one, two, lone = (make_worker() for _ in range(3))
    outside, outside_too = make_worker(), make_worker()  # nothing on this dataset
    for worker in (one, two, lone):
        add_label(make_pair(dataset), E, worker=worker, seconds=12.0)
    for device, workers in (
        ("shared", (one, two, outside)),
        ("lone's", (lone, outside)),
        ("out", (outside_too, outside)),
    ):
        for worker in workers:
            DeviceSighting.objects.create(device=device, worker=worker)

    rows = {row.worker.pk: row for row in worker_quality(Scope.of_dataset(dataset))}

    assert set(rows) == {one.pk, two.pk, lone.pk}
    for worker, other in ((one, two), (two, one)):
        assert rows[worker.pk].flags == [flag_rules.many_ids_flag(worker.pk, {other.pk})]
        assert rows[worker.pk].flags[0].figures == {"linked_ids": 1}
    assert rows[lone.pk].flags == []


# --- the histogram's medians: which workers are read exactly -----------------------------------------------


def test_a_worker_without_timed_labels_does_not_stop_the_medians_of_the_next():
    sums: dict[int, dict[str, int | None]] = {
        3: {"timed": 0, "lower_middle": None, "upper_middle": None},
        7: {"timed": 30, "lower_middle": 16, "upper_middle": 16},
    }
    assert histogram_medians(sums) == {7: middle(16)}


def ten_timed_labels(worker: Worker, dataset, seconds: float) -> None:
    for _ in range(10):
        add_label(make_pair(dataset), E, worker=worker, seconds=seconds)


@pytest.mark.django_db
def test_a_bucket_ending_on_the_threshold_within_the_slack_decides_the_median(make_worker):
    worker = make_worker()
    ten_timed_labels(worker, make_dataset(), 8.3)
    bucket = 8  # [8 s, 8.72 s)
    low, high = bucket_bounds(bucket)
    sums = {worker.pk: {"timed": 10, "lower_middle": bucket, "upper_middle": bucket}}
    # The bucket's upper bound plus the slack reaches the threshold: below it, decided, nothing read.
    assert histogram_medians(sums, threshold=high + _BOUND_SLACK) == {worker.pk: middle(bucket)}
    # Its lower bound less the slack reaches it: above it, decided too.
    assert histogram_medians(sums, threshold=low - _BOUND_SLACK) == {worker.pk: middle(bucket)}
    # Just inside either: open, read exactly.
    assert histogram_medians(sums, threshold=high) == {worker.pk: pytest.approx(8.3)}
    assert histogram_medians(sums, threshold=low) == {worker.pk: pytest.approx(8.3)}


@pytest.mark.django_db
def test_only_the_open_workers_medians_are_read_exactly(make_worker):
    dataset = make_dataset()
    near, far = make_worker(), make_worker()
    ten_timed_labels(near, dataset, 4.1)
    ten_timed_labels(far, dataset, 8.3)
    sums = {
        near.pk: {"timed": 10, "lower_middle": 0, "upper_middle": 0},
        far.pk: {"timed": 10, "lower_middle": 8, "upper_middle": 8},
    }
    assert histogram_medians(sums, Scope.of_dataset(dataset)) == {near.pk: pytest.approx(4.1), far.pk: middle(8)}


@pytest.mark.django_db
def test_the_exact_read_takes_the_timed_labels_only(make_worker):
    # Open in the histogram given, but with no timed label in the scope read: the histogram's median stays.
    worker = make_worker()
    dataset = make_dataset()
    for _ in range(10):
        add_label(make_pair(dataset), E, worker=worker)
    sums = {worker.pk: {"timed": 10, "lower_middle": 0, "upper_middle": 0}}
    assert histogram_medians(sums, Scope.of_dataset(dataset)) == {worker.pk: middle(0)}


# --- written pairs ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_unwritten_pair_with_five_labels_is_no_writers(make_worker):
    dataset = make_dataset()
    pair = unwritten_pair(dataset)
    for _ in range(5):
        add_label(pair, E, worker=make_worker())
    pair.refresh_from_db()
    assert pair.label_count == 5
    assert writer_figures(Scope.of_dataset(dataset)) == {}


# --- the next pair to label and the guesser evidence of one worker ---------------------------------------------


@pytest.mark.django_db
def test_the_next_pair_to_label_comes_with_its_premise_and_genre_read(django_assert_num_queries):
    dataset = make_dataset()
    make_pair(dataset)
    pair = next_pair_to_label(Scope.of_dataset(dataset))
    assert pair is not None
    with django_assert_num_queries(0):
        assert pair.premise.genre.slug == "fiction"


@pytest.mark.django_db
def test_a_workers_sequential_evidence_is_their_guesser_evidence(make_worker):
    worker = written_and_catch_corpus(make_worker)
    other = make_worker()
    add_label(make_pair(make_dataset("other")), E, worker=other)
    evidence = sequential_evidence(worker)
    assert evidence == guesser_evidence_by_worker([worker.pk])[worker.pk]
    assert evidence.items == 5
    assert sequential_evidence(other) == guesser_evidence_by_worker([other.pk])[other.pk]
