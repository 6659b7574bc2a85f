"""Which claim a validated pair's outcome is credited to, maintained (issue 28: the cost page).

The cost page credits each validated pair (its gold label, the labels its stopping saved) to the
study of its latest label: the pair's latest submitted, ordinary (not catch-trial) claim in a
study session, latest by `submitted_at`, then `id`. Finding that claim at read time is a subquery
per validated pair (0.3-0.5 s cold at 433k pairs). Here it is kept as a flag on the claim,
`ValidationClaim.credited`, written by the validation submit (`services.submit_validation_batch`)
in the UPDATE that marks its claims submitted (`submitted`: no statement of its own), which also
clears the flag on the pair's earlier claims. The pair's own figures (gold, label count, stopped
early) are read live through the join, so exclusions, stopping and gold recomputes need nothing.

Anything else that changes which claim is the latest (a study session deleted, so its claims name
no session; a worker deleted, with their claims; claims written around the submit, e.g. bench/costs_page.py's bulk load; two submits
on one pair whose clocks disagree) is repaired by `rebuild` (`manage.py rebuild_validation_credits`),
which compares the flags with a fresh computation (`fresh_credited_ids`).
"""

from collections.abc import Collection
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Case, Exists, F, OuterRef, Q, QuerySet, Subquery, Value, When

from corpus.models import Dataset, Pair
from crowd.models import ClaimStatus

from .models import ValidationClaim


def countable(dataset: Dataset | None = None) -> QuerySet[ValidationClaim]:
    """Submitted claims of study sessions that added a label (catch trials add none)."""
    claims = ValidationClaim.objects.filter(
        status=ClaimStatus.SUBMITTED, is_catch_trial=False, study_session__isnull=False
    )
    return claims.filter(pair__dataset=dataset) if dataset is not None else claims


def submitted(claims: Collection[ValidationClaim], now: datetime) -> int:
    """Mark a batch's claims submitted at `now`, moving the credit of their pairs to the batch's
    ordinary claims when it is in a study session: one UPDATE (the submit's own), in the caller's
    transaction, after the pairs are locked (so submits on one pair take turns)."""
    batch = [claim.pk for claim in claims]
    credit = [claim for claim in claims if not claim.is_catch_trial and claim.study_session_id is not None]
    if not credit:
        return ValidationClaim.objects.filter(pk__in=batch).update(status=ClaimStatus.SUBMITTED, submitted_at=now)
    in_batch = Q(pk__in=batch)
    updated: int = ValidationClaim.objects.filter(
        in_batch | Q(pair_id__in=[claim.pair_id for claim in credit], credited=True)
    ).update(
        status=Case(When(in_batch, then=Value(ClaimStatus.SUBMITTED)), default=F("status")),
        submitted_at=Case(When(in_batch, then=Value(now)), default=F("submitted_at")),
        credited=Case(When(pk__in=[claim.pk for claim in credit], then=Value(True)), default=Value(False)),
    )
    return updated


def fresh_credited_ids(dataset: Dataset | None = None) -> QuerySet[Pair, Any]:
    """The id of each validated pair's latest countable claim (what the cost page used to compute
    per pair): a values() queryset of one column, usable as a subquery."""
    claims = countable().filter(pair=OuterRef("pk"))
    validated = Pair.objects.filter(Exists(claims))
    if dataset is not None:
        validated = validated.filter(dataset=dataset)
    return validated.annotate(latest=Subquery(claims.order_by("-submitted_at", "-id").values("id")[:1])).values(
        "latest"
    )


def rebuild(dataset: Dataset | None = None) -> int:
    """Set the flags (of a dataset's claims, or all) from a fresh computation; returns how many
    claims changed. Two UPDATEs in one transaction."""
    scope = ValidationClaim.objects.all() if dataset is None else ValidationClaim.objects.filter(pair__dataset=dataset)
    with transaction.atomic():
        truth = fresh_credited_ids(dataset)
        cleared: int = scope.filter(credited=True).exclude(pk__in=truth).update(credited=False)
        set_: int = scope.filter(credited=False, pk__in=truth).update(credited=True)
    return cleared + set_
