"""What the catch-trial pool tells researchers and what a submit scores, to the figure and the word
(docs/checks.md, "library mutants"): each pool counted from its own dataset's marks and pairs, its
state named from them, a study's shortfall in its exact sentence, and a scored answer kept with its
session and time."""

import threading
import uuid

import pytest
from django.db import connection, transaction
from django.utils import timezone

from corpus.models import Label, Pair
from quality import catch_trials
from quality.catch_trials import MAX_SERVINGS, PoolState, catch_pool_statuses, catch_pools, score_catch_trials
from quality.models import CatchTrialAnswer
from quality.services import set_reference_label
from tests import factories
from tests.quality.test_catch_premises import finished_premise
from tests.quality.test_catch_trials import make_study, session_for
from tests.validation.validation_factories import make_dataset
from validation.models import ValidationClaim
from validation.selectors import study_catch_shortfall

pytestmark = pytest.mark.django_db

E, N = Label.ENTAILMENT, Label.NEUTRAL


def lone_catch_premise(dataset):
    """A premise with one finished pair, marked as a catch trial: one pair in the catch role."""
    pair = factories.pair(dataset, factories.premise(dataset), [E] * 5, needs_validation=False)
    set_reference_label(pair, E, is_catch_trial=True)
    return pair


def waiting_catch_pair(dataset):
    """A marked pair whose premise has a sibling still in the validation queue."""
    premise = factories.premise(dataset)
    pair = factories.pair(dataset, premise, [E] * 5, needs_validation=False)
    factories.pair(dataset, premise, [N], needs_validation=True)
    set_reference_label(pair, E, is_catch_trial=True)
    return pair


def pick(worker, dataset, *, most=1, per_batch=1.0, seen=None, keep=lambda: 0.0, draw=0.0):
    """The catch trials of the worker's next batch, a new premise opened as `draw` falls (0: it
    opens), an open one kept as `keep` draws; `seen`: the pairs of the worker's claims unless given."""
    return catch_trials.pick_catch_trials(
        worker=worker,
        dataset=dataset,
        most=most,
        per_batch=per_batch,
        seen=ValidationClaim.objects.filter(worker=worker).values("pair_id") if seen is None else seen,
        claims=ValidationClaim.objects.all(),
        draw=lambda: draw,
        keep_draw=keep,
    )


def served_as_catch_trial(pair, worker):
    ValidationClaim.objects.create(
        worker=worker, pair=pair, batch=uuid.uuid4(), is_catch_trial=True, expires_at=timezone.now()
    )


def test_a_batch_takes_catch_trials_of_its_own_dataset_and_without_one_of_any(make_worker):
    here, there = make_dataset("here"), make_dataset("there")
    (open_there,), _ = finished_premise(there)
    served_as_catch_trial(open_there, make_worker())  # an open premise: the first a pick would take
    finished_premise(here)
    worker = make_worker()
    picked = pick(worker, here)
    assert len(picked) == 1 and Pair.objects.get(pk=picked[0]).dataset_id == here.pk
    assert pick(worker, None) == [open_there.pk]


def test_a_premise_the_worker_answered_as_a_catch_trial_is_never_theirs_again(make_worker):
    dataset = make_dataset()
    (marked,), _ = finished_premise(dataset)
    answered, other = make_worker(), make_worker()
    CatchTrialAnswer.objects.create(worker=answered, pair=marked, batch=uuid.uuid4(), label=E, expected=E, matched=True)
    no_claims = ValidationClaim.objects.none().values("pair_id")
    assert pick(answered, dataset, seen=no_claims) == []
    assert len(pick(other, dataset, seen=no_claims)) == 1


def test_a_share_of_zero_or_no_place_serves_no_catch_trial_even_of_an_open_premise(make_worker):
    dataset = make_dataset()
    (marked,), _ = finished_premise(dataset)
    served_as_catch_trial(marked, make_worker())
    worker = make_worker()
    assert len(pick(worker, dataset, most=1)) == 1
    assert pick(worker, dataset, per_batch=0.0) == []
    assert pick(worker, dataset, most=0) == []


def open_premise(dataset, servings, make_worker):
    """A catch premise of three pairs whose first `servings` pairs were each served once: [its pairs]."""
    (marked,), siblings = finished_premise(dataset)
    pairs = [marked, *siblings]
    for pair in pairs[:servings]:
        served_as_catch_trial(pair, make_worker())
    return pairs


def test_a_batch_takes_one_pair_of_each_open_premise_past_the_others_pairs(make_worker):
    dataset = make_dataset()
    first = open_premise(dataset, 2, make_worker)  # its three rows come first
    second = open_premise(dataset, 1, make_worker)
    picked = pick(make_worker(), dataset, most=2)
    assert len(picked) == 2
    assert picked[0] in {pair.pk for pair in first[:2]} and picked[1] == second[0].pk


def test_an_open_premise_is_missed_at_the_keep_chance_and_the_next_one_still_taken(make_worker):
    dataset = make_dataset()
    first = open_premise(dataset, 2, make_worker)
    second = open_premise(dataset, 1, make_worker)
    draws = iter([catch_trials.KEEP_CHANCE, 0.0])
    assert pick(make_worker(), dataset, keep=lambda: next(draws)) == [second[0].pk]
    assert pick(make_worker(), dataset, keep=lambda: catch_trials.KEEP_CHANCE - 1e-9)[0] in {p.pk for p in first}


@pytest.mark.django_db(transaction=True)
def test_a_last_serving_another_claim_takes_after_the_candidates_were_read_is_not_taken_again(make_worker):
    dataset = make_dataset()
    (marked,), siblings = finished_premise(dataset)
    for _ in range(MAX_SERVINGS - 1):
        served_as_catch_trial(marked, make_worker())  # its premise open, the marked pair first in line
    elsewhere, worker = make_worker(), make_worker()

    def serve_the_last_elsewhere():
        try:
            served_as_catch_trial(marked, elsewhere)  # committed in a connection of its own
        finally:
            connection.close()

    def after_the_lock(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if "FOR NO KEY UPDATE" in sql:
            other = threading.Thread(target=serve_the_last_elsewhere)
            other.start()
            other.join()
        return result

    with transaction.atomic(), connection.execute_wrapper(after_the_lock):
        picked = pick(worker, dataset)
    assert ValidationClaim.objects.filter(pair=marked, is_catch_trial=True).count() == MAX_SERVINGS
    assert len(picked) == 1 and picked[0] in {pair.pk for pair in siblings}


def test_new_catch_premises_open_in_random_order(make_worker):
    dataset = make_dataset()
    for _ in range(12):
        finished_premise(dataset)
    # Thirty-six pairs of new premises, none served: six picks all of one pair would be chance 1 in 36**5.
    assert len({pick(make_worker(), dataset)[0] for _ in range(6)}) > 1


def test_a_new_premise_of_three_pairs_opens_at_a_third_of_the_chance_of_one_pair(make_worker):
    dataset = make_dataset()
    finished_premise(dataset)  # three pairs: twelve servings, opened at 1 / 12 for one catch trial a batch
    chance = 1.0 / (3 * MAX_SERVINGS)
    assert pick(make_worker(), dataset, draw=chance * 1.2) == []
    assert len(pick(make_worker(), dataset, draw=chance * 0.8)) == 1


def test_a_study_owes_its_share_less_what_it_was_served_and_its_open_premises_still_give(make_worker):
    dataset = make_dataset()
    (full,), _ = finished_premise(dataset)  # open: one pair used up (no serving left), two not served
    for _ in range(MAX_SERVINGS):
        served_as_catch_trial(full, make_worker())
    (once,), _ = finished_premise(dataset)  # open: served once
    served_as_catch_trial(once, make_worker())
    finished_premise(dataset)  # not open: owes nothing yet
    left = (0 + 4 + 4) + (3 + 4 + 4)
    role = catch_trials.catch_role_pairs([dataset.pk])
    owed = catch_trials._owed(role, (9, 2), per_batch=0.5, claims=ValidationClaim.objects.all())
    assert owed == pytest.approx(0.5 * (9 + 1) - 2 - left)


def test_the_premises_a_batch_opens_follow_what_the_study_owes():
    # Owed catch trials over the servings of a premise's pairs; nothing owed opens nothing.
    assert catch_trials.opening_mean(8.0, 1) == pytest.approx(8.0 / MAX_SERVINGS)
    assert catch_trials.opening_mean(8.0, 2) == pytest.approx(8.0 / (2 * MAX_SERVINGS))
    assert catch_trials.opening_mean(8.0, 0) == pytest.approx(8.0 / MAX_SERVINGS)
    assert catch_trials.opening_mean(-3.0, 2) == 0.0
    # A whole number with this mean: one more only when the draw falls below the fraction.
    assert catch_trials.whole_draws(1.5, lambda: 0.5) == 1
    assert catch_trials.whole_draws(1.5, lambda: 0.49) == 2
    assert catch_trials.whole_draws(2.0, lambda: 0.0) == 2


def test_a_new_premise_opens_at_the_chance_its_servings_give():
    # One pair gives MAX_SERVINGS catch trials, three pairs three times as many; no pair counts as one.
    assert catch_trials.opening_chance(0.2, 1) == pytest.approx(0.2 / MAX_SERVINGS)
    assert catch_trials.opening_chance(0.2, 0) == pytest.approx(0.2 / MAX_SERVINGS)
    assert catch_trials.opening_chance(0.6, 3) == pytest.approx(0.6 / (3 * MAX_SERVINGS))


def test_each_pool_is_counted_from_its_own_datasets_marks_and_pairs():
    serving, unmarked, other = make_dataset("serving"), make_dataset("unmarked"), make_dataset("other")
    finished_premise(serving, marked=1)  # three pairs in the catch role, one marked
    lone_catch_premise(serving)  # a second premise, one pair
    waiting_catch_pair(serving)  # marked, waiting: its premise is not in the catch role
    factories.pair(unmarked, factories.premise(unmarked), [N], needs_validation=True)
    # A dataset not asked for, with marks and pairs of its own and a pair in the validation queue.
    finished_premise(other, marked=3)
    waiting_catch_pair(other)
    statuses = catch_pool_statuses([serving.pk, unmarked.pk], ValidationClaim.objects.all())
    assert statuses == {
        serving.pk: {
            "marked": 3,
            "waiting": 1,
            "premises": 2,
            "pairs": 4,
            "servings_left": 4 * MAX_SERVINGS,
            "max_servings": MAX_SERVINGS,
            "dry": False,
            "state": PoolState.SERVING,
        },
        unmarked.pk: {
            "marked": 0,
            "waiting": 0,
            "premises": 0,
            "pairs": 0,
            "servings_left": 0,
            "max_servings": MAX_SERVINGS,
            "dry": True,
            "state": PoolState.UNMARKED,
        },
    }


def test_a_pool_of_one_pair_with_servings_left_is_serving():
    dataset = make_dataset()
    lone_catch_premise(dataset)
    status = catch_pool_statuses([dataset.pk], ValidationClaim.objects.all())[dataset.pk]
    assert (status["pairs"], status["servings_left"], status["state"]) == (1, MAX_SERVINGS, PoolState.SERVING)


def test_a_study_with_no_catch_share_lists_no_pool_and_owes_no_sentence():
    dataset = make_dataset()
    none_marked = make_study(dataset, share=0.0)
    assert catch_pools([none_marked], ValidationClaim.objects.all()) == []
    assert study_catch_shortfall(none_marked) is None


def test_a_scored_answer_keeps_its_session_and_time_and_only_marked_pairs_are_scored(make_worker):
    dataset = make_dataset()
    (marked,), (sibling, referenced) = finished_premise(dataset, marked=1)
    # A researcher's reference label without the catch mark: the pair is served in the catch role
    # (its premise is a catch premise) but nothing is scored on it.
    set_reference_label(referenced, referenced.author_label, is_catch_trial=False)
    worker = make_worker()
    study = make_study(dataset, share=1.0, bonus="0.50")
    session = session_for(study, worker)
    batch = uuid.uuid4()
    answers = score_catch_trials(
        worker=worker,
        study_session=session,
        batch=batch,
        catch_labels={marked.pk: marked.author_label, sibling.pk: E, referenced.pk: referenced.author_label},
        seconds=7.5,
    )
    assert [answer.pair_id for answer in answers] == [marked.pk]
    stored = CatchTrialAnswer.objects.get()
    assert (stored.pair_id, stored.study_session_id, stored.batch, stored.seconds, stored.matched) == (
        marked.pk,
        session.pk,
        batch,
        7.5,
        True,
    )


HEAD = "This study serves 20% of its batches' places as catch trials, but "
TAIL = " Its batches carry no catch trial then, and no catch bonus can be earned."


def test_the_shortfall_sentences_word_for_word(make_worker):
    dataset = make_dataset()
    study = make_study(dataset, share=0.2)
    assert study_catch_shortfall(study) == (
        f"{HEAD}no pair of its dataset “{dataset}” is marked as a catch trial.{TAIL} Mark pairs on the Label "
        "pairs page (tick “catch trial”), or set the share to 0."
    )
    first, second = lone_catch_premise(dataset), lone_catch_premise(dataset)
    for pair in (first, second):
        for _ in range(MAX_SERVINGS):
            ValidationClaim.objects.create(
                worker=make_worker(), pair=pair, batch=uuid.uuid4(), is_catch_trial=True, expires_at=timezone.now()
            )
    assert study_catch_shortfall(study) == (
        f"{HEAD}its pool of 2 pairs is used up (each is served to {MAX_SERVINGS} participants).{TAIL}"
    )


def test_the_planned_sessions_shortfall_counts_premises_of_one_pair(make_worker):
    dataset = make_dataset()
    lone_catch_premise(dataset)
    lone_catch_premise(dataset)  # eight servings left, four a premise
    study = make_study(dataset, share=0.2)
    needed = round(3 * study.tasks_per_batch * catch_trials.catch_trials_per_batch(0.2, 5))
    assert needed == 30
    study.planned_sessions = 3
    assert study_catch_shortfall(study) == (
        f"{HEAD}its 3 planned participants × 10 batches need about 30 catch trials and its pool has 8 servings "
        f"left (2 pairs of 2 catch premises, each pair served to at most {MAX_SERVINGS} participants). Batches "
        "past that carry no catch trial. Mark a pair of about 6 more premises as catch trials, or lower the share."
    )


def test_a_pool_with_exactly_the_servings_a_study_needs_is_enough():
    dataset = make_dataset()
    for _ in range(3):
        lone_catch_premise(dataset)  # twelve servings
    study = make_study(dataset, share=0.2, bonus="0")
    study.tasks_per_batch, study.planned_sessions = 3, 4
    assert round(4 * 3 * catch_trials.catch_trials_per_batch(0.2, 5)) == 12
    assert study_catch_shortfall(study) is None
