"""validation/batch_claims.py's catch trials kept by the study's own count: a study that was served
more catch trials than its share owes opens no new catch premise, whatever the fixed chance would
draw."""

import pytest

from corpus.models import Label
from crowd.models import Study, StudySession, TaskKind
from quality.catch_trials import catch_trials_per_batch
from quality.services import set_reference_label
from tests import factories
from tests.present import present
from validation import batch_claims, selectors
from validation.models import SessionServed, ValidationClaim

from .test_batch_order import write_premises

pytestmark = pytest.mark.django_db


def full_share_study(dataset, slug):
    """A validation study serving every place it may as a catch trial: four of a five-pair batch."""
    return Study.objects.create(
        slug=slug,
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=5,
        completion_code=slug.upper(),
        catch_trial_share=1.0,
    )


def one_pair_catch_premises(dataset, count):
    """Catch premises of one marked pair each, their validation done."""
    for _ in range(count):
        pair = factories.pair(dataset, factories.premise(dataset), [Label.ENTAILMENT], needs_validation=False)
        set_reference_label(pair, pair.author_label, is_catch_trial=True)


def catch_trials_of_one_claim(study, worker):
    session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{worker.pk}")
    batch = present(batch_claims.claim_validation_batch(worker, study_session=session))
    return ValidationClaim.objects.filter(batch=batch, is_catch_trial=True).count()


def test_a_study_served_more_catch_trials_than_its_share_owes_opens_no_new_catch_premise(dataset, make_worker):
    """Fails if a claim opens catch premises at the fixed chance instead of the study's own count:
    a study already over its share would get still more catch trials."""
    write_premises(dataset, 3)
    one_pair_catch_premises(dataset, 4)
    assert catch_trials_per_batch(1.0, selectors.BATCH_SIZE) == selectors.BATCH_SIZE - 1
    # At this share the fixed chance opens one one-pair premise a batch for certain; the study's
    # count owes none (four catch trials for each of its 21 batches with this one, less 200 served).
    over = full_share_study(dataset, "over-served")
    arrival = make_worker()
    SessionServed.objects.create(
        study_session=StudySession.objects.create(study=over, worker=arrival, external_session_id="earlier"),
        batches=20,
        catch_trials=200,
    )
    assert catch_trials_of_one_claim(over, make_worker()) == 0
    # A study at the same share that was served nothing owes four: it opens one premise for certain.
    fresh = full_share_study(dataset, "nothing-served")
    assert catch_trials_of_one_claim(fresh, make_worker()) == 1
