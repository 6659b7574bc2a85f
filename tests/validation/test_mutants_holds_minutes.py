"""The claim period of this app's batch pages, as their holds read it: one page's claims last their
study's own claim minutes; whether a worker's next batch waits its turn looks back over their
study's claim minutes, not the server's, and never waits outside a study; the grammaticality page
holds only the worker's own open claims on its pairs."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from corpus.models import Label, Worker
from crowd.models import ClaimStatus, Study
from validation import batch_claims, holds
from validation.models import GrammaticalityClaim, ValidationClaim

from .test_mutants_batch_claims import a_study, visit
from .validation_factories import make_pair

pytestmark = pytest.mark.django_db

SERVER_MINUTES = 10
STUDY_MINUTES = 60


@pytest.fixture
def study(dataset: Any, settings: Any) -> Study:
    """A study whose claims last longer than the server's."""
    settings.NLI = {**settings.NLI, batch_claims.VALIDATION_CLAIMS.minutes_setting: SERVER_MINUTES}
    study = a_study(dataset, "long-holds")
    study.claim_minutes = STUDY_MINUTES
    study.save(update_fields=["claim_minutes"])
    return study


def test_a_pages_claims_last_their_studys_own_minutes(study: Study, dataset: Any, make_worker: Any) -> None:
    worker = make_worker()
    claim = ValidationClaim.objects.create(
        pair=make_pair(dataset, label=Label.NEUTRAL),
        worker=worker,
        study_session=visit(study, worker),
        expires_at=timezone.now() + timedelta(minutes=STUDY_MINUTES),
    )
    assert holds.claims_minutes([claim]) == STUDY_MINUTES


def test_a_lapse_within_the_studys_claim_minutes_makes_the_next_batch_wait(
    study: Study, dataset: Any, make_worker: Any
) -> None:
    # The batch ran out 30 minutes ago: outside the server's 10-minute period, inside the study's 60.
    worker, waiting = make_worker(), make_worker()
    session = visit(study, worker)
    ago = timezone.now() - timedelta(minutes=30)
    ValidationClaim.objects.create(
        pair=make_pair(dataset, label=Label.NEUTRAL),
        worker=worker,
        study_session=session,
        status=ClaimStatus.EXPIRED,
        expires_at=ago,
    )
    other = visit(study, waiting)
    other.no_task_at = ago
    other.save(update_fields=["no_task_at"])
    assert holds.waits_its_turn_for(worker, session, batch_claims.VALIDATION_CLAIMS)


def test_a_worker_outside_a_study_never_waits_their_turn(make_worker: Any) -> None:
    assert not holds.waits_its_turn_for(make_worker(), None, batch_claims.VALIDATION_CLAIMS)


def grammaticality_claim(worker: Worker, pair: Any, **fields: Any) -> GrammaticalityClaim:
    return GrammaticalityClaim.objects.create(
        worker=worker, pair=pair, expires_at=timezone.now() + timedelta(minutes=10), **fields
    )


def test_the_grammaticality_page_holds_only_the_workers_own_open_claims_on_its_pairs(
    dataset: Any, make_worker: Any
) -> None:
    worker, other = make_worker(), make_worker()
    page, elsewhere, sent = (make_pair(dataset, label=Label.NEUTRAL) for _ in range(3))
    own = grammaticality_claim(worker, page)
    grammaticality_claim(other, page)  # another judge's claim on the same pair
    grammaticality_claim(worker, elsewhere)  # the worker's, on a pair of another page
    grammaticality_claim(worker, sent, status=ClaimStatus.SUBMITTED)
    assert holds.grammaticality_page_claims(worker, [page.pk, sent.pk]) == [own]
