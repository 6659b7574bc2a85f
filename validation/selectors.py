"""Reads for the validation task: which pairs a validator may be offered, and their own batches."""

import uuid
from datetime import datetime

from django.db.models import Count, F, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from corpus.models import LABELS_PER_PAIR, Dataset, ItemKind, Pair, PremiseStatus, Worker
from crowd.claiming import claim_key
from crowd.models import ClaimStatus
from crowd.selectors import device_linked_ids

from .models import ValidationClaim

# Pairs come in batches of five (MultiNLI §2.1).
BATCH_SIZE = 5


def live_claims(now: datetime) -> QuerySet[ValidationClaim]:
    """Claims that still hold a place on their pair: open and not yet expired (a catch trial holds none)."""
    return ValidationClaim.objects.filter(status=ClaimStatus.OPEN, expires_at__gt=now, is_catch_trial=False)


def open_claims_subquery(now: datetime) -> Coalesce:
    counted = live_claims(now).filter(pair=OuterRef("pk")).order_by().values("pair").annotate(n=Count("id")).values("n")
    # A correlated subquery, not a JOIN + GROUP BY: PostgreSQL refuses FOR UPDATE with GROUP BY.
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def _of_kind(pairs: QuerySet[Pair], item_kind: str) -> QuerySet[Pair]:
    """Pairs of datasets of this item kind: a hashed subplan over the few multi-premise datasets, in
    the same statement (measured: the claim's execution time is unchanged, bench/mpe_claims.py)."""
    multi = Dataset.objects.filter(item_kind=ItemKind.MULTI_PREMISE).values("pk")
    if item_kind == ItemKind.MULTI_PREMISE:
        return pairs.filter(dataset_id__in=multi)
    return pairs.exclude(dataset_id__in=multi)


def claimable_pairs(
    worker: Worker,
    now: datetime,
    *,
    dataset: Dataset | None = None,
    item_kind: str = ItemKind.SINGLE_PREMISE,
    fresh_premises: bool = False,
) -> QuerySet[Pair]:
    """Pairs this worker may be offered, closest to complete first.

    Items of one kind only: the MultiNLI validation batches take single-premise pairs, the MPE
    judgment task multi-premise items (five judgments each, the same target as a pair's five labels).

    Steps of the policy, top to bottom: the pair needs validation; its labels plus the places
    held by live claims are under the target; the worker (or an id seen on one of their devices) did
    not write it, the worker did not label it or hold a claim on it before; its premise is not held
    for a researcher; a trusted-only dataset is offered to trusted workers only. With
    `fresh_premises`, only pairs of premises the worker was never served (the claim's first look: a
    premise seen again in a later batch told ordinary pairs from catch trials, and hinted at the
    label, issue 39).
    """
    # The claim indexes' own condition, so the walk reads `pair_claim_queue_free(_all)`: pairs
    # that labels and live claims fill (as last counted) are not in them, so a claim does not walk
    # past them however many claims are live (issue 28). The live claims are counted below anyway.
    pairs = Pair.objects.filter(needs_validation=True, label_count__lt=LABELS_PER_PAIR - F("held_places"))
    if dataset is not None:
        pairs = pairs.filter(dataset=dataset)
    pairs = _of_kind(pairs, item_kind)
    pairs = pairs.exclude(author=worker)
    # Nor what ids seen on one of their devices wrote: one person does not validate their own writing.
    pairs = pairs.exclude(author_id__in=device_linked_ids(worker.pk))
    pairs = pairs.exclude(pk__in=worker.labels.values("pair_id"))
    served = ValidationClaim.objects.filter(worker=worker)
    if fresh_premises:
        pairs = pairs.exclude(premise_id__in=served.values("pair__premise_id"))
    else:
        pairs = pairs.exclude(pk__in=served.values("pair_id"))
    pairs = pairs.exclude(premise__status=PremiseStatus.HELD)
    if not worker.is_trusted:
        pairs = pairs.exclude(dataset__validation_policy__trusted_only=True)
    pairs = pairs.alias(open_claims=open_claims_subquery(now)).filter(
        label_count__lt=LABELS_PER_PAIR - F("open_claims")
    )
    return pairs.order_by("-label_count", "id")


def worker_open_batch(worker: Worker, now: datetime, *, item_kind: str = ItemKind.SINGLE_PREMISE) -> uuid.UUID | None:
    """The batch id of the worker's live claims of this item kind, catch trials included, if they have
    one (a reload gets it back)."""
    batch: uuid.UUID | None = (
        ValidationClaim.objects.filter(
            status=ClaimStatus.OPEN, expires_at__gt=now, worker=worker, pair__dataset__item_kind=item_kind
        )
        .order_by("created_at", "id")
        .values_list("batch", flat=True)
        .first()
    )
    return batch


def batch_claims(worker: Worker, batch: uuid.UUID | str) -> list[ValidationClaim]:
    """A worker's claims in one batch, with the pairs to show. Another worker's batch is empty."""
    batch_id = claim_key(batch)
    if batch_id is None:
        return []
    return list(
        ValidationClaim.objects.filter(worker=worker, batch=batch_id)
        .select_related("pair", "pair__dataset", "pair__premise", "pair__premise__genre", "study_session__study")
        .order_by("id")
    )
