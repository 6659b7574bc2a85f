"""Catch trials (MultiNLI §2.1): researcher-labelled pairs mixed, unmarked, into validation batches.

The validation app, a layer above this one, calls `pick_catch_trials` when it claims a batch and
`score_catch_trials` when the batch is submitted (plain calls: quality is on the judgement floor).

The rules:
- a catch trial is a pair with a `ReferenceLabel` marked `is_catch_trial`, in the batch's dataset,
  that the worker did not write, did not label and was never served before;
- a catch pair is served to at most `MAX_SERVINGS` participants, counting every claim on the pair
  (as a catch trial or as an ordinary pair, submitted or not): no more than an ordinary pair's four
  validators, so "seen by more than four" never singles one out (issue 27). When the pool has no
  pair left to serve, the batch carries no catch trial rather than a repeat; the quality page says so
  (`catch_pool_status`). The rule is documented in docs/quality.md;
- the worker's label on it is stored as a `CatchTrialAnswer`, scored against the reference label
  at submit time, and never added to the pair's labels: the pair's counters and gold stay as they are;
- a match inside a study session earns the study's `bonus_per_catch_match` in its currency, as one
  `earned` row of the bonus ledger (`quality.bonuses`), in the submit's own transaction.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import connection
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from corpus.models import AUTHOR_POSITION, LABELS_PER_PAIR, Dataset, Pair, ValidationLabel, Worker
from crowd.models import Study, StudySession

from .bonuses import record_catch_bonuses
from .models import CatchTrialAnswer, ReferenceLabel

# An ordinary pair is labelled by its author and four validators: a catch pair is served to no more.
MAX_SERVINGS = LABELS_PER_PAIR - AUTHOR_POSITION


def servings(claims):
    """How many participants were served each pair: an annotation over `claims` (every validation claim)."""
    counted = claims.filter(pair_id=OuterRef("pair_id")).order_by().values("pair_id").annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def pick_catch_trials(
    *,
    worker: Worker,
    dataset: Dataset | None,
    count: int,
    seen: QuerySet[Any],
    taken: Sequence[int] = (),
    claims: QuerySet[Any] | None = None,
    premise_of: dict[int, int] | None = None,
) -> list[int]:
    """Up to `count` random catch-trial pair pks for the worker's next validation batch, none of
    them in `seen` (a queryset of the pair pks the worker was ever served) nor in `taken` (the
    batch's ordinary pairs), nor written or labelled by the worker, each served to fewer than
    `MAX_SERVINGS` participants so far (`claims`: every validation claim, with `pair_id`), no two of
    one premise and none of a premise the worker was served before (issue 39: a batch shows one
    pair per premise, and ordinary pairs come from premises the worker has not seen while there
    are any; a catch trial whose premise came back stood out). `premise_of`, when given, gets each
    picked pair's premise.

    The reference rows are locked (skipping those another claimer holds) and the servings counted
    again afterwards, in a fresh statement, so two claimers never both take a pair's last serving.
    """
    if count <= 0:
        return []
    candidates = ReferenceLabel.objects.filter(is_catch_trial=True)
    if dataset is not None:
        candidates = candidates.filter(pair__dataset=dataset)
    candidates = candidates.exclude(pair__author=worker)
    candidates = candidates.exclude(pair_id__in=ValidationLabel.objects.filter(worker=worker).values("pair_id"))
    candidates = candidates.exclude(pair_id__in=CatchTrialAnswer.objects.filter(worker=worker).values("pair_id"))
    candidates = candidates.exclude(pair_id__in=seen).exclude(pair_id__in=list(taken))
    candidates = candidates.exclude(pair__premise_id__in=Pair.objects.filter(pk__in=seen).values("premise_id"))
    if claims is not None:
        candidates = candidates.alias(served=servings(claims)).filter(served__lt=MAX_SERVINGS)
    # Random order over the catch trials only (a researcher-labelled pool, not the corpus).
    candidates = candidates.order_by("?")
    if connection.features.has_select_for_update_skip_locked:
        candidates = candidates.select_for_update(skip_locked=True, of=("self",))
    premises = dict(candidates.values_list("pair_id", "pair__premise_id")[: count * 3])
    locked = list(premises)
    if claims is not None and locked:
        served = dict(
            ReferenceLabel.objects.filter(pair_id__in=locked)
            .annotate(served=servings(claims))
            .values_list("pair_id", "served")
        )
        locked = [pk for pk in locked if served.get(pk, MAX_SERVINGS) < MAX_SERVINGS]
    picked: list[int] = []
    for pk in locked:
        if len(picked) < count and premises[pk] not in {premises[other] for other in picked}:
            picked.append(pk)
    if premise_of is not None:
        premise_of.update({pk: premises[pk] for pk in picked})
    return picked


def catch_pool_status(dataset, claims):
    """The catch-trial pool of a dataset, for researchers: pairs in it, servings left under the rule,
    and whether it has run dry (batches then carry no catch trial)."""
    references = ReferenceLabel.objects.filter(is_catch_trial=True, pair__dataset=dataset)
    served = list(references.annotate(served=servings(claims)).values_list("served", flat=True))
    left = sum(max(0, MAX_SERVINGS - n) for n in served)
    return {"pairs": len(served), "servings_left": left, "max_servings": MAX_SERVINGS, "dry": left == 0}


def score_catch_trials(
    *,
    worker: Worker,
    study_session: StudySession | None,
    batch: Any,
    catch_labels: Mapping[int, str],
    seconds: float | None = None,
) -> list[CatchTrialAnswer]:
    """Score a submitted batch's catch trials and record bonuses; `catch_labels` maps each
    catch-trial pair pk to the worker's label (never added to the pair's labels), `seconds` is the
    time per item.

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


def catch_pools(studies: Iterable[Study], claims: QuerySet[Any]) -> list[dict[str, Any]]:
    """Per study that serves catch trials: its dataset's pool (`catch_pool_status`), for the quality pages."""
    return [
        {"study": study, **catch_pool_status(study.dataset, claims)} for study in studies if study.catch_trial_share > 0
    ]
