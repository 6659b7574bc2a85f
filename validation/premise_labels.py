"""Writes for MPE's per-premise labels (Lai et al. 2017 §5.2): marking items, claiming batches of
premise-hypothesis pairs, and saving a worker's labels.

Each premise sentence of a marked item, with the item's hypothesis, is a `PremisePair` that wants
three single-premise judgments. Three things keep it at three under concurrency, as in validation:
a claim locks the premise pairs it counts (FOR UPDATE SKIP LOCKED) and counts them again under the
lock; a submit locks its premise pairs (in pk order) and re-checks their counts before it writes;
and the check and unique constraints refuse whatever slips past both.

A batch holds at most one premise of an item: a judgment is about one caption alone, and the
other captions of the same scene on the same page would tell the worker more than that caption.
"""

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from corpus.labels import CONTRADICTION, ENTAILMENT, LABELS, NEUTRAL
from corpus.models import Dataset, ItemKind, Pair, Worker
from corpus.selectors import datasets_excluding, is_excluded_in
from crowd.claiming import FOREIGN_ITEMS_MESSAGE, ClaimRule, Grouping, claim_batch, foreign_items
from crowd.models import ClaimStatus, StudySession
from crowd.services import record_task_done

from .batch_claims import BatchIncomplete, NotAllowedToValidate, ValidationRefused, claims_to_submit
from .models import PREMISE_LABELS_PER_PAIR, PremiseLabel, PremiseLabelClaim, PremisePair
from .premise_table import consensus

BATCH_SIZE = 5
CANDIDATES_PER_PLACE = 8  # over-fetch: full pairs and second premises of an item are skipped


class PremiseLabelRefused(ValidationRefused):
    """A per-premise write that was refused; its message is fit to show the worker."""


# Also the batch tasks' refusal of a claim (services), so the shared pages (views.BatchTask) answer it alike.
class NotAllowedToLabelPremises(PremiseLabelRefused, NotAllowedToValidate):
    pass


# --- which items want per-premise labels --------------------------------------------------------


def mark_for_premise_labels(dataset: Dataset | str, *, split: str | None = None) -> dict[str, int]:
    """Ask for three per-premise labels on every premise of this multi-premise dataset's items (of
    one split). Marking twice adds nothing. Returns {"items": n in scope, "premise_pairs": n marked}."""
    if isinstance(dataset, str):
        found = Dataset.objects.filter(slug=dataset).first()
        if found is None:
            raise PremiseLabelRefused("No such dataset.")
        dataset = found
    if dataset.item_kind != ItemKind.MULTI_PREMISE:
        raise PremiseLabelRefused(
            f"{dataset.slug} holds single-premise pairs; per-premise labels are for multi-premise (MPE) items."
        )
    items = Pair.objects.filter(dataset=dataset).select_related("premise").order_by("pk")
    if split:
        items = items.filter(premise__split=split)
    wanted = []
    count = 0
    for item in items.iterator(chunk_size=2000):
        count += 1
        wanted += [PremisePair(item=item, index=index) for index in range(len(item.premise.premise_sentences))]
    with transaction.atomic():
        before = PremisePair.objects.filter(item__dataset=dataset).count()
        PremisePair.objects.bulk_create(wanted, ignore_conflicts=True, batch_size=2000)
        after = PremisePair.objects.filter(item__dataset=dataset).count()
    return {"items": count, "premise_pairs": after - before}


# --- claims --------------------------------------------------------------------------------------


def _room(locked: list[int], now: datetime) -> list[tuple[int, int, object]]:
    """Each locked premise pair's free places (three less labels and live claims) and its item."""
    fresh = (
        PremisePair.objects.filter(pk__in=locked)
        .annotate(held=PREMISE_CLAIMS.held(now))
        .values_list("pk", "item_id", "label_count", "held")
    )
    return [(pk, PREMISE_LABELS_PER_PAIR - count - held, item) for pk, item, count, held in fresh]


# One premise of an item per batch (the module's docstring says why).
PREMISE_CLAIMS = ClaimRule(model=PremiseLabelClaim, target="premise_pair", room=_room, grouping=Grouping.APART)


def claimable_premise_pairs(worker: Worker, now: datetime, *, dataset: Dataset | None = None) -> QuerySet[PremisePair]:
    """Premise pairs this worker may be offered, closest to three judgments first: they have room,
    and the worker neither wrote the item's hypothesis nor labelled or claimed the pair before."""
    pairs = PremisePair.objects.filter(label_count__lt=PREMISE_LABELS_PER_PAIR)
    if dataset is not None:
        pairs = pairs.filter(item__dataset=dataset)
    pairs = pairs.exclude(item__dataset__in=datasets_excluding(worker))
    pairs = pairs.exclude(item__author=worker)
    pairs = pairs.exclude(pk__in=PremiseLabelClaim.objects.filter(worker=worker).values("premise_pair_id"))
    pairs = pairs.exclude(pk__in=PremiseLabel.objects.filter(worker=worker).values("premise_pair_id"))
    pairs = pairs.alias(held=PREMISE_CLAIMS.held(now)).filter(label_count__lt=PREMISE_LABELS_PER_PAIR - F("held"))
    return pairs.order_by("-label_count", "id")


def claim_premise_batch(
    worker: Worker, *, dataset: Dataset | None = None, study_session: StudySession | None = None, size: int = BATCH_SIZE
) -> uuid.UUID | None:
    """A batch of up to `size` premise-hypothesis pairs for this worker, or None when there is no work.

    Inside a per-premise study (`study_session`), only that study's dataset, and the claims carry the
    session. A worker with a live batch gets it back; else claims on the locked candidates with room,
    one premise per item (`crowd.claiming.claim_batch`).
    """
    if dataset is None and study_session is not None:
        dataset = study_session.study.dataset
    if dataset is not None and is_excluded_in(worker, dataset.team_id):
        raise NotAllowedToLabelPremises(
            "Your account is not taking part in this task at the moment. "
            "If you think this is a mistake, please contact the researchers."
        )
    now = timezone.now()
    with transaction.atomic():
        return claim_batch(
            PREMISE_CLAIMS,
            worker,
            now,
            claimable_premise_pairs(worker, now, dataset=dataset),
            size=size,
            wanted=size * CANDIDATES_PER_PLACE,
            claim_fields={"study_session": study_session},
        )


# --- labels --------------------------------------------------------------------------------------

_VOTE_FIELDS = {ENTAILMENT: "entailment_votes", NEUTRAL: "neutral_votes", CONTRADICTION: "contradiction_votes"}


def add_premise_labels(
    worker: Worker, labels: Mapping[int, str], *, seconds: float | None = None, releasing_claims: Iterable[int] = ()
) -> list[PremiseLabel]:
    """Save {premise pair pk: label} for one worker: all or nothing, in the caller's transaction.

    Locks the premise pairs in pk order and refuses, before writing anything, a label that is not
    one of the three, a pair that has its three judgments already (live claims of other workers
    count as taken; `releasing_claims`: this worker's own being submitted), and a second label by
    the same worker."""
    if not labels:
        raise PremiseLabelRefused("No labels were sent; nothing was saved.")
    if any(label not in LABELS for label in labels.values()):
        raise PremiseLabelRefused("Please choose one of the three answers for every pair; nothing was saved.")
    now = timezone.now()
    with transaction.atomic():
        locked = list(
            PremisePair.objects.select_for_update(no_key=True)
            .filter(pk__in=list(labels))
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        # Counted in a statement of its own, once the locks are held: a statement that waited for a
        # lock re-reads the row's new version but not its subqueries, so it would still count the
        # live claim of a submit that committed meanwhile beside that submit's label.
        pairs = {
            pair.pk: pair for pair in PremisePair.objects.filter(pk__in=locked).annotate(held=PREMISE_CLAIMS.held(now))
        }
        if len(pairs) != len(labels):
            raise PremiseLabelRefused("Some of these pairs are not open for per-premise labels; nothing was saved.")
        own = set(releasing_claims)
        if PremiseLabel.objects.filter(worker=worker, premise_pair_id__in=list(labels)).exists():
            raise PremiseLabelRefused(
                "You have already labelled one of these premise-hypothesis pairs; a worker labels each pair "
                "once. Nothing was saved."
            )
        for pk, pair in pairs.items():
            taken = pair.label_count + pair.held - (1 if pk in own else 0)
            if taken >= PREMISE_LABELS_PER_PAIR:
                raise PremiseLabelRefused(
                    "One of these premise-hypothesis pairs already has its three judgments; nothing was saved."
                )
        try:
            with transaction.atomic():
                created = PremiseLabel.objects.bulk_create(
                    PremiseLabel(premise_pair_id=pk, worker=worker, label=label, seconds=seconds)
                    for pk, label in labels.items()
                )
        except IntegrityError:
            raise PremiseLabelRefused(
                "You have already labelled one of these premise-hypothesis pairs; nothing was saved."
            ) from None
        for pk, label in labels.items():
            pair = pairs[pk]
            setattr(pair, _VOTE_FIELDS[label], getattr(pair, _VOTE_FIELDS[label]) + 1)
            pair.label_count += 1
            votes = Counter(
                {name: getattr(pair, field) for name, field in _VOTE_FIELDS.items() if getattr(pair, field)}
            )
            pair.consensus = consensus(votes.elements())
        PremisePair.objects.bulk_update(
            list(pairs.values()),
            ["label_count", "entailment_votes", "neutral_votes", "contradiction_votes", "consensus"],
        )
    return created


@dataclass
class SubmittedPremiseBatch:
    batch: uuid.UUID | str
    labels: list[PremiseLabel]


def submit_premise_batch(
    worker: Worker, batch: uuid.UUID | str, labels: Mapping[Any, str], *, seconds: float | None = None
) -> SubmittedPremiseBatch:
    """Save a worker's labels (premise pair pk -> label) for a whole batch, or nothing. Refused when
    the batch is not the worker's, has expired, was already submitted, or lacks a label."""
    now = timezone.now()
    labels = {int(pk): value for pk, value in labels.items() if value}
    with transaction.atomic():
        worker = Worker.objects.select_for_update(no_key=True).get(pk=worker.pk)
        claims = claims_to_submit(PREMISE_CLAIMS, worker, batch, now, others="workers")
        if PremisePair.objects.filter(
            pk__in=[claim.premise_pair_id for claim in claims], item__dataset__in=datasets_excluding(worker)
        ).exists():
            raise PremiseLabelRefused("Your account is not taking part in this task at the moment.")
        missing = [claim.premise_pair_id for claim in claims if labels.get(claim.premise_pair_id) not in LABELS]
        if missing:
            numbers = [str(n) for n, claim in enumerate(claims, 1) if claim.premise_pair_id in missing]
            raise BatchIncomplete(
                f"Please choose an answer for every pair; missing: pair {', '.join(numbers)}. Nothing was saved yet.",
                missing=missing,
            )
        if foreign_items(labels, [claim.premise_pair_id for claim in claims]):
            raise PremiseLabelRefused(FOREIGN_ITEMS_MESSAGE)
        if seconds is None:
            seconds = (now - min(claim.created_at for claim in claims)).total_seconds()
        saved = add_premise_labels(
            worker, labels, seconds=seconds / len(claims), releasing_claims=[claim.premise_pair_id for claim in claims]
        )
        PremiseLabelClaim.objects.filter(pk__in=[claim.pk for claim in claims]).update(
            status=ClaimStatus.SUBMITTED, submitted_at=now
        )
        # A study's batch counts towards its code; the per-premise labels are the quality test's
        # evidence too, or a clicker here would keep every code.
        record_task_done(claims[0].study_session)
    return SubmittedPremiseBatch(batch=batch, labels=saved)
