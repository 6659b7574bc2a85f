"""Which claim a validated pair's outcome is credited to, maintained for the cost page.

The cost page credits each validated pair to the study of its latest label: the pair's latest
submitted, ordinary (not catch-trial) claim in a study session, latest by `submitted_at`, then `id`.
Found at read time, that is a subquery per validated pair; here it is a flag on the claim,
`ValidationClaim.credited`, set by the validation submit in the UPDATE that marks its claims
submitted (`submitted`), which also clears it on the pair's earlier claims. The pair's own figures
are read live through the join, so exclusions, stopping and gold recomputes need nothing.

Anything else that changes which claim is the latest (a study session or worker deleted; claims
written around the submit; two submits on one pair whose clocks disagree) is repaired by `rebuild`
(`manage.py rebuild_validation_credits`), against a fresh computation (`fresh_credited_ids`).
"""

from collections.abc import Collection
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from corpus.models import Dataset, Pair
from corpus.scope import EVERYTHING, Scope
from crowd.models import ClaimStatus, StudySession

from .models import ValidationClaim


def countable(scope: Scope = EVERYTHING) -> QuerySet[ValidationClaim]:
    """Submitted claims of study sessions that added a label (catch trials add none)."""
    claims = ValidationClaim.objects.filter(
        status=ClaimStatus.SUBMITTED, is_catch_trial=False, study_session__isnull=False
    )
    return scope.filter(claims, via="pair__dataset")


def submitted(claims: Collection[ValidationClaim], now: datetime) -> dict[int, int]:
    """Mark a batch's claims submitted at `now`, moving the credit of their pairs to the batch's
    ordinary claims when it is in a study session: one statement, in the caller's transaction, after
    the pairs are locked (so submits on one pair take turns). Returns, for each pair of the batch
    that had a credited claim before, the study of that claim (read before its UPDATE, a
    data-modifying WITH). Written as SQL: built by the ORM, it cost a submit more than it ran."""
    batch = [claim.pk for claim in claims]
    credit = [claim for claim in claims if not claim.is_catch_trial and claim.study_session_id is not None]
    quote = connection.ops.quote_name
    table = quote(ValidationClaim._meta.db_table)
    sessions = quote(StudySession._meta.db_table)
    submitted_at = connection.ops.adapt_datetimefield_value(now)
    in_batch = f"id IN ({', '.join(['%s'] * len(batch))})"
    pairs = sorted({claim.pair_id for claim in claims})
    earlier = (
        f"SELECT c.pair_id, s.study_id FROM {table} c JOIN {sessions} s ON s.id = c.study_session_id"
        f" WHERE c.credited AND c.pair_id IN ({', '.join(['%s'] * len(pairs))})"
    )
    if not credit:
        update = f"UPDATE {table} SET status = %s, submitted_at = %s WHERE {in_batch}"
        params = [ClaimStatus.SUBMITTED.value, submitted_at, *batch]
    else:
        credited = ", ".join(["%s"] * len(credit))
        update = (
            f"UPDATE {table} SET status = CASE WHEN {in_batch} THEN %s ELSE status END,"
            f" submitted_at = CASE WHEN {in_batch} THEN %s ELSE submitted_at END,"
            f" credited = id IN ({credited})"
            f" WHERE {in_batch} OR (credited AND pair_id IN ({credited}))"
        )
        params = [
            *batch,
            ClaimStatus.SUBMITTED.value,
            *batch,
            submitted_at,
            *(claim.pk for claim in credit),
            *batch,
            *(claim.pair_id for claim in credit),
        ]
    with connection.cursor() as cursor:
        cursor.execute(f"WITH earlier AS ({earlier}), done AS ({update}) SELECT * FROM earlier", [*pairs, *params])
        return dict(cursor.fetchall())


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
