"""Backup claims: work for an arrival while every open pair of the study is held.

Hoarding ids with spare ids kept a study's last pairs held: a refused take-back came back as a fresh
claim by another of the ids. Refusing ids does not close the tail (there are always more); not
letting a claim keep an arrival from a pair for long does:

- A live claim **holds its place against an arrival** only while it is younger than one claim
  period (from its claim: More time and a take-back keep the claim's `created_at`) and its worker
  has not let a claim of the study run out unsent (expired, or taken back). Every other live claim
  (`stale`) still lets its worker send, but no longer closes the pair.
- When the ordinary claim finds no pair with a free place, `pick_backup_pairs` picks pairs of the
  study that still need labels and whose places, with `BACKUP_PLACES` (one) more, are not all held
  that way: closest to complete first, then those whose oldest live claim is oldest, one pair a
  premise, up to a batch. So an arrival always finds work beside one fresh claim, and beside any
  number of stale ones: a few ids that claim first do not close the tail.
- **First sends count.** A pair never takes a sixth label: a send on a pair that has its five by
  then stores nothing for that pair and keeps the rest of the batch, which counts as done (its
  worker did the work and is paid for it).

The backup is asked only when the ordinary claim gives nothing; a backup claim is an ordinary
`ValidationClaim` in the arrival's study session.
"""

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Exists, F, IntegerField, Min, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from corpus.models import LABELS_PER_PAIR, Pair, ValidationLabel, Worker
from crowd.claiming import lock_rows
from crowd.models import ClaimStatus, StudySession

from .models import ValidationClaim

# How many backup claims a pair takes beyond the places its holding claims fill: one arrival may
# work beside a fresh claim, so a few ids cannot close the tail by claiming first (twenty ids hold
# a hundred places: with one more place a pair, the last seventy pairs have a hundred and forty).
BACKUP_PLACES = 1


def claim_period(now: datetime) -> timedelta:
    return timedelta(minutes=int(settings.NLI["VALIDATION_CLAIM_MINUTES"]))


def lapsed_workers(study_id: int, now: datetime) -> QuerySet[Any]:
    """The workers (a `worker_id` values queryset) who let a claim of this study run out unsent:
    expired (marked or not yet) or taken back after it ran out."""
    return (
        ValidationClaim.objects.filter(study_session__study_id=study_id)
        .filter(Q(status=ClaimStatus.EXPIRED) | Q(take_backs__gt=0) | Q(status=ClaimStatus.OPEN, expires_at__lte=now))
        .values("worker_id")
    )


def places_held_against_arrivals(study_id: int, now: datetime) -> Coalesce:
    """Per pair (the outer row), its live ordinary claims that hold their place against an arrival:
    younger than one claim period, by a worker who never let a claim of the study run out."""
    holding = (
        ValidationClaim.objects.filter(
            pair_id=OuterRef("pk"),
            status=ClaimStatus.OPEN,
            expires_at__gt=now,
            is_catch_trial=False,
            created_at__gt=now - claim_period(now),
        )
        .exclude(worker_id__in=lapsed_workers(study_id, now))
        .order_by()
        .values("pair_id")
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(holding, output_field=IntegerField()), Value(0))


def backup_candidates(worker: Worker, study_session: StudySession, now: datetime) -> QuerySet[Pair]:
    """The study's pairs an arrival may take as backups, in the order they are taken: pairs with a
    live ordinary claim of the study (so within its pool), still needing labels, with a place not
    held against arrivals, never the worker's own (written, labelled, claimed before)."""
    study_id = study_session.study_id
    live_of_study = ValidationClaim.objects.filter(
        pair_id=OuterRef("pk"),
        study_session__study_id=study_id,
        status=ClaimStatus.OPEN,
        expires_at__gt=now,
        is_catch_trial=False,
    )
    oldest = (
        ValidationClaim.objects.filter(
            pair_id=OuterRef("pk"), status=ClaimStatus.OPEN, expires_at__gt=now, is_catch_trial=False
        )
        .order_by()
        .values("pair_id")
        .annotate(first=Min("created_at"))
        .values("first")
    )
    return (
        Pair.objects.filter(Exists(live_of_study), needs_validation=True, label_count__lt=LABELS_PER_PAIR)
        .exclude(author=worker)
        .exclude(pk__in=ValidationClaim.objects.filter(worker=worker).values("pair_id"))
        .exclude(pk__in=ValidationLabel.objects.filter(worker=worker).values("pair_id"))
        .alias(holding=places_held_against_arrivals(study_id, now), oldest=Subquery(oldest))
        .filter(label_count__lt=LABELS_PER_PAIR + BACKUP_PLACES - F("holding"))
        .order_by("-label_count", "oldest", "pk")
    )


def pick_backup_pairs(
    worker: Worker, study_session: StudySession, now: datetime, *, size: int
) -> tuple[dict[int, int], list[int]]:
    """The pairs of a backup batch ({pk: premise}, up to `size`, one a premise) and every pair
    locked to choose them (asked again under the locks), in the caller's transaction; the caller
    claims them and recounts the locked pairs' held places."""
    candidates = backup_candidates(worker, study_session, now)
    locked = list(lock_rows(candidates).values_list("pk", "premise_id")[: size * 3])
    if not locked:
        return {}, []
    pks = [pk for pk, _ in locked]
    still = set(backup_candidates(worker, study_session, now).filter(pk__in=pks).values_list("pk", flat=True))
    chosen: dict[int, int] = {}
    for pk, premise in locked:
        if pk in still and premise not in chosen.values():
            chosen[pk] = premise
        if len(chosen) == size:
            break
    return chosen, pks
