"""Catch trials (MultiNLI §2.1): researcher-labelled pairs mixed, unmarked, into validation batches.

The validation app asks for them and reports the answers through `crowd.signals` (the two apps
may not import each other); the receivers here are connected in `QualityConfig.ready`.

The rules:
- a catch trial is a pair with a `ReferenceLabel` marked `is_catch_trial`, in the batch's dataset,
  that the worker did not write, did not label and was never served before;
- the worker's label on it is stored as a `CatchTrialAnswer`, scored against the reference label
  at submit time, and never added to the pair's labels: the pair's counters and gold stay as they are;
- a match inside a study session earns the study's `bonus_per_catch_match` in its currency, as one
  `earned` row of the bonus ledger (`quality.bonuses`), in the submit's own transaction.
"""

from django.db.models import Q

from corpus.models import ValidationLabel

from .bonuses import record_catch_bonuses
from .models import CatchTrialAnswer, ReferenceLabel


def catch_trial_candidates(worker, dataset=None, seen=None):
    """Catch-trial pairs this worker may be served."""
    references = ReferenceLabel.objects.filter(is_catch_trial=True)
    if dataset is not None:
        references = references.filter(pair__dataset=dataset)
    references = references.exclude(Q(pair__author=worker))
    references = references.exclude(pair_id__in=ValidationLabel.objects.filter(worker=worker).values("pair_id"))
    references = references.exclude(pair_id__in=CatchTrialAnswer.objects.filter(worker=worker).values("pair_id"))
    if seen is not None:
        references = references.exclude(pair_id__in=seen)
    return references


def pick_catch_trials(
    sender=None, worker=None, study_session=None, dataset=None, count=0, seen=None, taken=(), **kwargs
):
    """Receiver of `catch_trials_wanted`: up to `count` random catch-trial pair pks for the worker."""
    if count <= 0:
        return []
    candidates = catch_trial_candidates(worker, dataset, seen).exclude(pair_id__in=list(taken))
    # Random order over the catch trials only (a researcher-labelled handful, not the corpus).
    return list(candidates.order_by("?").values_list("pair_id", flat=True)[:count])


def score_catch_trials(
    sender=None, worker=None, study_session=None, batch=None, catch_labels=None, seconds=None, **kwargs
):
    """Receiver of `validation_batch_submitted`: score the batch's catch trials and record bonuses.

    Runs in the submit's transaction. Returns the CatchTrialAnswer rows written.
    """
    if not catch_labels:
        return []
    expected = dict(ReferenceLabel.objects.filter(pair_id__in=list(catch_labels)).values_list("pair_id", "label"))
    answers = [
        CatchTrialAnswer(
            worker=worker,
            pair_id=pair_pk,
            study_session=study_session,
            batch=batch,
            label=label,
            expected=expected[pair_pk],
            matched=label == expected[pair_pk],
            seconds=seconds,
        )
        # A reference label removed since the batch was served leaves nothing to score against.
        for pair_pk, label in sorted(catch_labels.items())
        if pair_pk in expected
    ]
    CatchTrialAnswer.objects.bulk_create(answers)
    record_catch_bonuses(worker, study_session, [answer for answer in answers if answer.matched])
    return answers
