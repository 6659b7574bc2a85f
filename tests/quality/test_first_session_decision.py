"""A quality test with power in the first session: a worker who reads a third of the items and
answers the rest by a rule (about 62% right) was paid after a 30-label first session, the study's
levels (poor 55%, acceptable 75%) leaving them undecided. A first session is now paid only on
evidence of a validator's accuracy (quality.guessers.FIRST_SESSION_LEVELS); else its code is
deferred to a second batch, which the study's own levels decide, and a paid later session gives
the deferred code."""

import itertools

import pytest

from corpus.labels import LABELS
from crowd.models import Study, StudySession, TaskKind
from quality.guessers import DEFERRED
from tests.present import present
from tests.validation.validation_factories import make_dataset, make_pair
from validation.models import ValidationClaim


def study_of(slug: str) -> Study:
    dataset = make_dataset(slug)
    for number in range(90):
        make_pair(dataset, label=LABELS[number % 3])
    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=6,
        completion_code=slug.upper(),
        catch_trial_share=0,
        hold_code_at_chance=True,
    )


def session_of(study: Study, worker, agrees, number: int = 1) -> StudySession:
    """Six batches of five at a reading pace, the k-th answer agreeing with the written label when `agrees(k)`."""
    from validation.batch_claims import claim_validation_batch
    from validation.services import submit_validation_batch

    session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{worker.pk}-{number}")
    turn = itertools.count()
    for _ in range(study.tasks_per_batch):
        batch = present(claim_validation_batch(worker, study_session=session))
        labels = {}
        for claim in ValidationClaim.objects.filter(batch=batch).select_related("pair"):
            written = LABELS.index(claim.pair.author_label)
            labels[claim.pair_id] = LABELS[written if agrees(next(turn)) else (written + 1) % 3]
        submit_validation_batch(worker, batch, labels, seconds=40)
    session.refresh_from_db()
    assert session.is_complete
    return session


# 19 of 30 agree (63%): what a worker reading a third of the items gets; the study's levels leave it undecided.
READS_A_THIRD = lambda k: k % 10 < 6 or k % 30 == 29  # noqa: E731
HONEST = lambda k: k % 10 != 0  # noqa: E731  27 of 30


@pytest.mark.django_db
def test_a_first_session_that_reads_a_third_is_deferred_and_a_paid_second_gives_its_code(make_worker):
    study = study_of("first-session")
    worker = make_worker(username="reader")
    first = session_of(study, worker, READS_A_THIRD)
    (deferred,) = first.code_holds.all()
    assert first.completion_code == "" and deferred.kind == DEFERRED and not deferred.decision
    assert "19 of 30 answers" in deferred.text
    second = session_of(study, worker, lambda k: True, number=2)
    assert second.completion_code == second.expected_completion_code() and second.code_held_reason == ""
    first.refresh_from_db()
    # The deferred hold is lifted (no record left), not decided by anyone.
    assert first.completion_code == first.expected_completion_code() and not first.code_holds.exists()
    assert first.code_held_reason == ""


@pytest.mark.django_db
def test_an_honest_validators_first_session_is_paid_at_once(make_worker):
    session = session_of(study_of("first-honest"), make_worker(username="honest"), HONEST)
    assert session.completion_code == session.expected_completion_code() and session.code_held_reason == ""
