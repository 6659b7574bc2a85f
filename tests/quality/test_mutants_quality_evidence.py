"""The guesser and quality evidence (quality/selectors.py) at the edges its other tests leave open:
the other judges' answers that may be a reference (counted, not waiting for a market's word, not
held, by a worker) and only of the items asked about, no reference where the others split three
ways, a worker whose own answers do not count tallied against nothing, the speed evidence read from
the timed labels after the author's and counted when too fast to read, and the chance test without
the catch trials."""

import pytest

from corpus.models import Label, Pair, ValidationLabel, Worker
from corpus.pair_record_models import GrammaticalityJudgment
from corpus.services import add_label
from crowd.models import CodeHold, StudySession
from quality import sequential
from quality.flags import TOO_FAST_MIN_ITEMS
from quality.models import CatchTrialAnswer
from quality.selectors import (
    _most_common_of_others,
    _others_answers,
    _tallies_by_worker,
    _timing_by_worker,
    guesser_evidence_by_worker,
    quality_evidence_by_worker,
)
from tests import factories
from tests.collection.writing_helpers import make_study
from tests.validation.validation_factories import make_dataset, make_pair

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


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


def hold_code_of(worker: Worker, dataset) -> None:
    """A completion code of this worker held for guessing."""
    session = StudySession.objects.create(
        study=make_study(dataset), worker=worker, external_session_id=f"held-{worker.pk}"
    )
    CodeHold.objects.create(session=session, kind="guesser", text="At chance.")


# --- the other judges' most common answer ------------------------------------------------------------


def test_three_others_who_each_answer_differently_are_no_reference():
    assert _most_common_of_others([(2, E), (3, N), (4, C)], 1) is None
    # A tie at the top stays a tie whatever a third answer's count.
    assert _most_common_of_others([(2, E), (3, E), (4, N), (5, N), (6, C)], 1) is None


def test_a_leader_among_three_answers_is_the_reference():
    assert _most_common_of_others([(2, E), (3, E), (4, N), (5, C)], 1) == (E, "agreeing")


# --- the answers that may be a reference -------------------------------------------------------------


@pytest.mark.django_db
def test_only_counted_labels_by_a_worker_of_the_pairs_asked_are_references(make_worker):
    dataset = make_dataset()
    a, b, waiting, held, imported, excluded = (make_worker() for _ in range(6))
    asked, also_asked, other = (unwritten_pair(dataset) for _ in range(3))
    for judge, label in ((a, E), (waiting, C), (held, C), (imported, C), (excluded, C)):
        add_label(asked, label, worker=judge)
    add_label(also_asked, N, worker=b)
    add_label(other, E, worker=a)
    ValidationLabel.objects.filter(pair=asked, worker=waiting).update(awaiting_market_session=7)
    ValidationLabel.objects.filter(pair=asked, worker=imported).update(worker=None)
    hold_code_of(held, dataset)
    factories.exclude(excluded)

    found = _others_answers(ValidationLabel.objects.all(), [asked.pk, also_asked.pk, asked.pk], "label")

    assert found == {asked.pk: [(a.pk, E)], also_asked.pk: [(b.pk, N)]}
    assert _others_answers(ValidationLabel.objects.all(), [], "label") == {}


@pytest.mark.django_db
def test_only_judgments_by_a_counted_worker_not_held_are_references(make_worker):
    dataset = make_dataset()
    a, held, excluded = (make_worker() for _ in range(3))
    asked, other = make_pair(dataset), make_pair(dataset)
    GrammaticalityJudgment.objects.create(pair=asked, worker=a, judgment="minor")
    GrammaticalityJudgment.objects.create(pair=asked, worker=None, judgment="major")
    GrammaticalityJudgment.objects.create(pair=asked, worker=held, judgment="major")
    GrammaticalityJudgment.objects.create(pair=asked, worker=excluded, judgment="major")
    GrammaticalityJudgment.objects.create(pair=other, worker=a, judgment="none")
    hold_code_of(held, dataset)
    factories.exclude(excluded)

    found = _others_answers(GrammaticalityJudgment.objects.all(), [asked.pk], "judgment")

    assert found == {asked.pk: [(a.pk, "minor")]}


@pytest.mark.django_db
def test_an_answer_no_other_judge_counts_beside_is_tallied_against_nothing(make_worker):
    # A held worker's own answers are no reference either: their items have no counted answer at all.
    dataset = make_dataset()
    held = make_worker()
    hold_code_of(held, dataset)
    add_label(unwritten_pair(dataset), E, worker=held)
    GrammaticalityJudgment.objects.create(pair=make_pair(dataset), worker=held, judgment="none")

    assert _tallies_by_worker([held.pk]) == {held.pk: {}}


@pytest.mark.django_db
def test_an_imported_label_is_no_reference_for_the_judge_beside_it(make_worker):
    dataset = make_dataset()
    worker, a, imported = (make_worker() for _ in range(3))
    pair = unwritten_pair(dataset)
    for judge, label in ((worker, E), (a, N), (imported, N)):
        add_label(pair, label, worker=judge)
    ValidationLabel.objects.filter(pair=pair, worker=imported).update(worker=None)

    (stratum,) = _tallies_by_worker([worker.pk])[worker.pk].items()

    assert stratum[0] == ("others", "one other")
    assert (stratum[1].own, stratum[1].reference, stratum[1].agreements) == ({E: 1}, {N: 1}, 0)


# --- the speed evidence ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_speed_is_read_from_the_timed_labels_after_the_authors(make_worker):
    dataset = make_dataset()
    worker, idle = make_worker(), make_worker()
    written = make_pair(dataset, author=worker)
    ValidationLabel.objects.filter(pair=written, position=1).update(seconds=1.0)
    for seconds in (6.0, 8.0, 30.0):
        add_label(make_pair(dataset), E, worker=worker, seconds=seconds)
    add_label(make_pair(dataset), E, worker=worker)
    add_label(make_pair(dataset), E, worker=make_worker(), seconds=5.0)  # not asked about

    assert _timing_by_worker([worker.pk, idle.pk]) == {worker.pk: (3, 8.0)}
    assert _timing_by_worker([]) == {}


# --- the chance test without the catch trials ----------------------------------------------------------


@pytest.mark.django_db
def test_the_guesser_evidence_without_catch_trials_weighs_the_other_answers_only(make_worker):
    dataset = make_dataset()
    worker = make_worker()
    add_label(make_pair(dataset, label=E), N, worker=worker)
    CatchTrialAnswer.objects.create(
        worker=worker,
        pair=make_pair(dataset),
        batch="00000000-0000-0000-0000-000000000001",
        label=E,
        expected=E,
        matched=True,
    )
    written = sequential.Stratum(own={N: 1}, reference={E: 1}, agreements=0, kappa=sequential.ORDINARY_KAPPA)
    caught = sequential.Stratum(own={E: 1}, reference={E: 1}, agreements=1, kappa=sequential.ORDINARY_KAPPA)

    assert guesser_evidence_by_worker([worker.pk], catch_trials=False) == {
        worker.pk: sequential.combined_sequential_test([written])
    }
    assert guesser_evidence_by_worker([worker.pk]) == {
        worker.pk: sequential.combined_sequential_test([written, caught])
    }


@pytest.mark.django_db
def test_the_quality_evidence_counts_a_pace_too_fast_to_read(make_worker):
    dataset = make_dataset()
    worker = make_worker()
    for _ in range(TOO_FAST_MIN_ITEMS):
        add_label(make_pair(dataset, label=E), E, worker=worker, seconds=1.0)
    written = sequential.QualityStratum(
        own={E: TOO_FAST_MIN_ITEMS},
        reference={E: TOO_FAST_MIN_ITEMS},
        agreements=TOO_FAST_MIN_ITEMS,
        reference_accuracy=sequential.REFERENCE_ACCURACY["written"],
    )
    expected = sequential.sequential_quality_test([written], timed_items=TOO_FAST_MIN_ITEMS, median_seconds=1.0)

    assert expected.speed_log_ratio > 0
    assert quality_evidence_by_worker([worker.pk]) == {worker.pk: expected}


@pytest.mark.django_db
def test_the_same_catch_answer_given_twice_is_tallied_twice(make_worker):
    dataset = make_dataset()
    worker = make_worker()
    for _ in range(2):
        CatchTrialAnswer.objects.create(
            worker=worker,
            pair=make_pair(dataset),
            batch="00000000-0000-0000-0000-000000000001",
            label=N,
            expected=E,
            matched=False,
        )
    (stratum,) = _tallies_by_worker([worker.pk])[worker.pk].items()

    assert stratum[0] == ("catch", "three")
    assert (stratum[1].own, stratum[1].reference, stratum[1].agreements) == ({N: 2}, {E: 2}, 0)
