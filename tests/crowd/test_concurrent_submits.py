"""Validation and writing submits of one study's participants, all at once (under
a crowd, validation submits answered 500, database deadlocks).

Real PostgreSQL, one connection a thread, every submit released together by a barrier. Every
submit of the study takes its locks in the one order `crowd.services.LOCK_ORDER` writes down
(docs/architecture.md, "Lock order"), so none of them deadlocks, each waits its turn, and every
label and every writing is counted exactly once: on its pair, its premise and its session."""

from collections import Counter
from collections.abc import Callable
from functools import partial

import pytest
from django.db.models import Count

from collection import services as writing
from collection import writing_claims
from collection.models import WritingClaim
from corpus.models import Label, Pair, Premise, ValidationLabel
from crowd.models import ClaimStatus, StudySession, TaskKind
from tests.collection.writing_helpers import add_premises, make_study
from tests.concurrency import at_once
from tests.present import present
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims
from validation import services as validation
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db(transaction=True)

VALIDATORS = 6
WRITERS = 6
ROUNDS = 2
SENTENCES = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


def test_validation_and_writing_submits_of_one_study_at_once_never_deadlock_and_count_once(make_worker):
    dataset = make_dataset("concurrent-submits")
    # Few pairs, so the validators' batches overlap and their submits contend for the same pair rows.
    pairs = [make_pair(dataset, label=Label.NEUTRAL) for _ in range(16)]
    genre = pairs[0].premise.genre
    Premise.objects.filter(dataset=dataset).update(writings_done=dataset.writings_per_premise)  # written
    add_premises(dataset, genre, WRITERS * ROUNDS, start=1000)
    study = make_study(
        dataset, slug="concurrent-submits", tasks_per_batch=ROUNDS, task_kind=TaskKind.VALIDATION, catch_trial_share=0
    )
    validators = [make_worker() for _ in range(VALIDATORS)]
    writers = [make_worker() for _ in range(WRITERS)]
    sessions = {
        worker.pk: StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{worker.pk}")
        for worker in (*validators, *writers)
    }

    for _ in range(ROUNDS):
        calls: list[Callable[[], object]] = []
        for worker in validators:
            batch = present(batch_claims.claim_validation_batch(worker, study_session=sessions[worker.pk]))
            answers = {
                claim.pair_id: Label.ENTAILMENT.value
                for claim in ValidationClaim.objects.filter(worker=worker, batch=batch)
            }
            calls.append(partial(validation.submit_validation_batch, worker, batch, answers))
        for worker in writers:
            claim = present(writing_claims.claim_next_premise(worker, study_session=sessions[worker.pk]))
            calls.append(partial(writing.submit_hypotheses, worker, claim.token, **SENTENCES))
        results = at_once(calls, what="a submit")
        assert [result for result in results if isinstance(result, Exception)] == []

    # Every label counted once: on its pair's counter, once per worker and pair.
    labels = ValidationLabel.objects.filter(pair__in=pairs)
    assert not labels.values("pair", "worker").annotate(n=Count("id")).filter(n__gt=1).exists()
    per_pair = Counter(labels.values_list("pair_id", flat=True))
    for pair in Pair.objects.filter(pk__in=[pair.pk for pair in pairs]):
        assert pair.label_count == per_pair[pair.pk], pair.pk
    # Every writing counted once: three pairs, one writing on its premise, one submitted claim each.
    written = WritingClaim.objects.filter(status=ClaimStatus.SUBMITTED)
    assert written.count() == WRITERS * ROUNDS
    for claim in written:
        assert Pair.objects.filter(premise_id=claim.premise_id, author=claim.worker).count() == 3
        assert Premise.objects.get(pk=claim.premise_id).writings_done == 1
    # Every submit counted once on its session: the batch of ROUNDS tasks complete, with its code.
    for session in StudySession.objects.filter(study=study):
        assert session.tasks_done == ROUNDS, session.worker_id
        assert session.completed_at is not None
