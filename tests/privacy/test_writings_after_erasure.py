"""A deleted person's writings leave their premises' writing counts: the premise is served again."""

import pytest

from collection import services as writing
from collection import writing_claims
from corpus.models import Pair, Worker
from crowd.models import StudySession
from privacy.services import erase_by_market_id
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

pytestmark = pytest.mark.django_db

GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


def writer(make_worker, external_id: str) -> Worker:
    worker = make_worker(username=f"prolific-{external_id}")
    Worker.objects.filter(pk=worker.pk).update(market="prolific", external_id=external_id)
    worker.refresh_from_db()
    return worker


@pytest.mark.parametrize("policy, written_again", [("delete", True), ("keep", False)])
def test_an_erased_writers_premise_can_be_written_again_when_their_pairs_leave(make_worker, policy, written_again):
    dataset, genre = writing_setup(writings_per_premise=1)
    (premise,) = add_premises(dataset, genre, 1)
    study = make_study(dataset, contributions_on_withdrawal=policy)
    person, other = writer(make_worker, "WRITER0001"), writer(make_worker, "WRITER0002")
    session = StudySession.objects.create(study=study, worker=person, external_session_id="SESSION0001")
    claim = writing_claims.claim_next_premise(person, study_session=session)
    assert claim is not None and claim.premise_id == premise.pk
    writing.submit_hypotheses(person, claim.token, **GOOD)
    premise.refresh_from_db()
    assert premise.writings_done == 1
    assert writing_claims.claim_next_premise(other, dataset=dataset) is None  # the premise's one writing is done

    assert dataset.team_id is not None
    record = erase_by_market_id("WRITER0001", team_id=dataset.team_id)
    premise.refresh_from_db()
    assert Pair.objects.filter(premise=premise).exists() is not written_again
    assert premise.writings_done == (0 if written_again else 1)
    assert record.counts.get("contributions.writings", 0) == (1 if written_again else 0)
    again = writing_claims.claim_next_premise(other, dataset=dataset)
    assert (again is not None and again.premise_id == premise.pk) is written_again
