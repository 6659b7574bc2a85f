"""The credit of a validated pair to the study of its latest label (validation/credits.py), at the
edges mutmut found unguarded.

Only submitted, ordinary (not catch-trial) claims of study sessions count, and a scope keeps only
its datasets' claims. A submit marks its batch's claims submitted at its time and moves each of
its pairs' credit to its ordinary claims in a study session, clearing the earlier credited claim
of those pairs only; a batch outside any session, and a catch trial, moves no credit; the submit
hands back the study each of its pairs was credited to before. The fresh computation picks each
validated pair's latest countable claim (by time, then by id), of one dataset when asked; a
rebuild sets the flags from it, of that dataset only, and says how many claims it changed.
"""

from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from corpus.models import Dataset, Pair, Worker
from corpus.scope import Scope
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from tests.validation.validation_factories import make_dataset, make_pair
from validation import credits
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db

MakeWorker = Callable[..., Worker]
SUBMITTED = ClaimStatus.SUBMITTED


def study_of(dataset: Dataset, slug: str) -> Study:
    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code=slug.upper(),
        payment_per_task=Decimal("0.50"),
    )


def session_in(study: Study, worker: Worker) -> StudySession:
    return StudySession.objects.create(study=study, worker=worker, external_session_id=f"{study.slug}-{worker.pk}")


def claim(
    pair: Pair,
    worker: Worker,
    session: StudySession | None = None,
    *,
    catch: bool = False,
    status: str = ClaimStatus.OPEN,
    at: datetime | None = None,
    credited: bool = False,
) -> ValidationClaim:
    return ValidationClaim.objects.create(
        pair=pair,
        worker=worker,
        study_session=session,
        is_catch_trial=catch,
        status=status,
        submitted_at=at,
        credited=credited,
        expires_at=timezone.now() + timedelta(hours=1),
    )


def credited_ids() -> set[int]:
    return set(ValidationClaim.objects.filter(credited=True).values_list("pk", flat=True))


def fresh(dataset: Dataset | None = None) -> set[int]:
    return {row["latest"] for row in credits.fresh_credited_ids(dataset)}


def test_only_submitted_ordinary_claims_of_study_sessions_count(dataset: Dataset, make_worker: MakeWorker) -> None:
    pair = make_pair(dataset)
    study = study_of(dataset, "counting")
    workers = [make_worker() for _ in range(4)]
    counted = claim(pair, workers[0], session_in(study, workers[0]), status=SUBMITTED, at=timezone.now())
    claim(pair, workers[1], session_in(study, workers[1]))  # still open
    claim(pair, workers[2], session_in(study, workers[2]), catch=True, status=SUBMITTED, at=timezone.now())
    claim(pair, workers[3], None, status=SUBMITTED, at=timezone.now())  # outside any study
    other = make_dataset("other-data")

    assert list(credits.countable()) == [counted]
    assert list(credits.countable(Scope.of_dataset(dataset))) == [counted]
    assert not credits.countable(Scope.of_dataset(other)).exists()


def test_a_submit_in_a_session_moves_its_pairs_credit_and_says_where_it_was(
    dataset: Dataset, make_worker: MakeWorker
) -> None:
    one, two = study_of(dataset, "one"), study_of(dataset, "two")
    kept_pair, moved_pair, fresh_pair, catch_pair = (make_pair(dataset) for _ in range(4))
    earlier_worker, worker = make_worker(), make_worker()
    earlier_session = session_in(one, earlier_worker)
    before = timezone.now() - timedelta(minutes=5)
    earlier_moved = claim(moved_pair, earlier_worker, earlier_session, status=SUBMITTED, at=before, credited=True)
    earlier_kept = claim(kept_pair, earlier_worker, earlier_session, status=SUBMITTED, at=before, credited=True)
    earlier_catch = claim(catch_pair, earlier_worker, earlier_session, status=SUBMITTED, at=before, credited=True)
    session = session_in(two, worker)
    batch = [
        claim(moved_pair, worker, session),
        claim(fresh_pair, worker, session),
        claim(catch_pair, worker, session, catch=True),
    ]
    now = timezone.now()

    earlier = credits.submitted(batch, now)

    # The pairs of the batch that had a credited claim: the study it was credited to.
    assert earlier == {moved_pair.pk: one.pk, catch_pair.pk: one.pk}
    for done in ValidationClaim.objects.filter(pk__in=[c.pk for c in batch]):
        assert (done.status, done.submitted_at) == (SUBMITTED, now)
    # The ordinary claims take their pairs' credit; a catch trial takes none and leaves its pair's.
    assert credited_ids() == {batch[0].pk, batch[1].pk, earlier_kept.pk, earlier_catch.pk}
    assert earlier_moved.pk not in credited_ids()
    assert credited_ids() == fresh()


def test_a_submit_outside_any_session_moves_no_credit(dataset: Dataset, make_worker: MakeWorker) -> None:
    one = study_of(dataset, "one")
    pair, other_pair = make_pair(dataset), make_pair(dataset)
    earlier_worker, worker = make_worker(), make_worker()
    earlier = claim(
        pair,
        earlier_worker,
        session_in(one, earlier_worker),
        status=SUBMITTED,
        at=timezone.now() - timedelta(minutes=5),
        credited=True,
    )
    batch = [claim(pair, worker), claim(other_pair, worker)]
    now = timezone.now()

    assert credits.submitted(batch, now) == {pair.pk: one.pk}

    for done in ValidationClaim.objects.filter(pk__in=[c.pk for c in batch]):
        assert (done.status, done.submitted_at, done.credited) == (SUBMITTED, now, False)
    assert credited_ids() == {earlier.pk} == fresh()


def test_the_latest_claim_is_the_latest_submitted_then_the_latest_made(
    dataset: Dataset, make_worker: MakeWorker
) -> None:
    study = study_of(dataset, "latest")
    pair, tied_pair = make_pair(dataset), make_pair(dataset)
    workers = [make_worker() for _ in range(3)]
    sessions = [session_in(study, worker) for worker in workers]
    now = timezone.now()
    claim(pair, workers[0], sessions[0], status=SUBMITTED, at=now - timedelta(minutes=1))
    latest = claim(pair, workers[1], sessions[1], status=SUBMITTED, at=now)
    claim(pair, workers[2], sessions[2], status=SUBMITTED, at=now - timedelta(minutes=2))
    claim(tied_pair, workers[0], sessions[0], status=SUBMITTED, at=now)
    tied_latest = claim(tied_pair, workers[1], sessions[1], status=SUBMITTED, at=now)

    assert fresh() == {latest.pk, tied_latest.pk}


def test_a_rebuild_of_a_dataset_sets_its_flags_only_and_counts_the_changes(
    dataset: Dataset, make_worker: MakeWorker
) -> None:
    other = make_dataset("other-data")
    worker, later = make_worker(), make_worker()
    now = timezone.now()
    stale: dict[int, ValidationClaim] = {}
    right: dict[int, ValidationClaim] = {}
    for data in (dataset, other):
        study = study_of(data, f"rebuild-{data.slug}")
        pair = make_pair(data)
        # The older claim flagged and the latest not, as after claims written around the submit.
        stale[data.pk] = claim(
            pair, worker, session_in(study, worker), status=SUBMITTED, at=now - timedelta(minutes=1), credited=True
        )
        right[data.pk] = claim(pair, later, session_in(study, later), status=SUBMITTED, at=now)
    assert fresh(dataset) == {right[dataset.pk].pk}
    assert fresh() == {right[dataset.pk].pk, right[other.pk].pk}

    assert credits.rebuild(dataset) == 2  # one flag cleared, one set
    assert credited_ids() == {right[dataset.pk].pk, stale[other.pk].pk}
    assert credits.rebuild(dataset) == 0

    assert credits.rebuild() == 2
    assert credited_ids() == {right[dataset.pk].pk, right[other.pk].pk}
    assert credits.rebuild() == 0
