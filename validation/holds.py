""" "More time" and "Get these items back" for this app's batch pages: `crowd.holds` decides; this
locks what each task's claim locks and counts the items' room with the task's own rule.

One transaction: the worker's row (it serialises their claims, submits and renewals, so a double
click renews once), the batch's claims, then the items in pk order, as every writer of them locks.
"""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from corpus.models import Pair, Worker
from crowd.claiming import ClaimRule, excluded_from_claim
from crowd.holds import HoldRenewal, others_waiting, renew_hold, study_of, waits_its_turn
from crowd.models import ClaimStatus, Study, StudySession, TaskClaim

from . import selectors
from .batch_claims import VALIDATION_CLAIMS  # every batch rule of this app reads its setting
from .models import GrammaticalityClaim, ValidationClaim


@dataclass(frozen=True)
class Renewed:
    outcome: HoldRenewal
    expires_at: datetime | None  # the hold's end after the renewal (None: the worker holds nothing)


def claim_minutes(study: Study | None = None) -> float:
    """A batch's hold, as the claim rule of this app's batches gives it to a claim of the study: its
    own claim minutes when set, else the server's."""
    now = timezone.now()
    return (VALIDATION_CLAIMS.expiry(now, study) - now).total_seconds() / 60


def claims_minutes(claims: Sequence[TaskClaim]) -> float:
    """The hold of these claims (one page's): their study's claim minutes (`claim_minutes`)."""
    return claim_minutes(study_of(claims))


def renew_batch(worker: Worker, batch: uuid.UUID | str, rule: ClaimRule) -> Renewed | None:
    """Renew the hold of the worker's batch of `rule`'s claims; None when the batch is not theirs."""
    now = timezone.now()
    model: Any = rule.model  # a concrete claim model (the rule names the abstract TaskClaim)
    with transaction.atomic():
        locked_worker = Worker.objects.select_for_update(no_key=True).filter(pk=worker.pk).first()
        claims = list(model._default_manager.select_for_update(of=("self",)).filter(worker=worker, batch=batch))
        if locked_worker is None or not claims:
            return None
        pks = [claim.pk for claim in claims]
        minutes = claims_minutes(claims)
        if excluded_from_claim(locked_worker, claims[0]):
            return Renewed(HoldRenewal.GONE, None)
        items = sorted({getattr(claim, f"{rule.target}_id") for claim in claims if not _is_catch_trial(claim)})

        def busy() -> bool:
            return rule.live(now).filter(worker=worker).exclude(pk__in=pks).exists()

        def items_free() -> bool:
            item_model = model._meta.get_field(rule.target).related_model
            locked = list(
                item_model._default_manager.select_for_update(no_key=True)
                .filter(pk__in=items)
                .order_by("pk")
                .values_list("pk", flat=True)
            )
            room = {pk: free for pk, free, _ in rule.room(locked, now)}
            return len(locked) == len(items) and all(room.get(pk, 0) >= 1 for pk in items)

        def others_wait() -> bool:
            if model is GrammaticalityClaim:
                return False  # offered beside a study's batches, never answered "no task": nobody waits for it
            return others_waiting(claims, worker.pk, now, minutes=minutes, live=rule.live(now))

        outcome = renew_hold(
            model, claims, now, minutes=minutes, items_free=items_free, busy=busy, others_wait=others_wait
        )
        if outcome is HoldRenewal.TAKEN_BACK and model is ValidationClaim:
            # The pairs' count of held places (the claim index's hint) sees the claims again.
            held = Coalesce(selectors.open_claims_subquery(now), Value(0))
            Pair.objects.filter(pk__in=items).update(held_places=held)
        expires_at = model._default_manager.filter(pk__in=pks).order_by("expires_at")[0].expires_at
    return Renewed(outcome, expires_at)


def waits_its_turn_for(worker: Worker, study_session: StudySession | None, rule: ClaimRule) -> bool:
    """Whether the worker's next batch of `rule`'s task waits while others wait for work
    (`crowd.holds.waits_its_turn`: a batch of theirs ran out unsent lately)."""
    now = timezone.now()
    minutes = claim_minutes(study_session.study if study_session is not None else None)
    return waits_its_turn(worker.pk, study_session, now, minutes=minutes, live=rule.live(now))


def _is_catch_trial(claim: object) -> bool:
    """A catch trial takes no place on its pair, so its room is not asked."""
    return bool(getattr(claim, "is_catch_trial", False))


def grammaticality_page_claims(worker: Worker, pair_pks: list[int]) -> list[GrammaticalityClaim]:
    """The worker's open claims on the pairs of their grammaticality page (its batch and its hold)."""
    claims = GrammaticalityClaim.objects.filter(worker=worker, pair_id__in=pair_pks, status=ClaimStatus.OPEN)
    return list(claims.order_by("id"))
