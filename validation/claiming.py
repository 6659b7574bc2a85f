"""The one claim rule of this app's batch tasks (validation and MPE judgments, per-premise labels,
grammaticality): lock candidates, count their room again under the lock, claim those with room.

Each task names its claim model and its room rule (`ClaimRule`); the steps are written once:

1. `lock_candidates`: up to `wanted` claimable rows locked in one statement, FOR UPDATE SKIP LOCKED
   on PostgreSQL (SQLite serialises writers), rows another claimer holds skipped, rows this claim
   already `tried` left out;
2. `rule.room`: the locked rows' free places counted in one fresh statement under the locks, so a
   claim committed just before ours is seen (every claimer holds the row's lock while inserting);
3. `choose` and `insert_claims`: the first `size` with room, in candidate order, under the rule's
   grouping, claimed in one bulk insert.

`claim_batch` runs them in a loop: candidates that claims committed meanwhile filled are tried no
more, and the next look goes further down the queue.
"""

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection
from django.db.models import Model, QuerySet

from corpus.models import Worker
from crowd.models import TaskClaim

# A claim looks again when its candidates were taken by claimers that committed meanwhile: each
# look excludes the rows already tried, so a few are enough (issue 28: one claim in ~2,250 said
# "no task" under contention with one look).
CLAIM_LOOKS = 10

RowT = TypeVar("RowT", bound=Model)

FOREIGN_ITEMS_MESSAGE = "Answers were sent for items that are not in your own task; nothing was saved."


def foreign_items(answered: Iterable[int], claimed: Iterable[int]) -> set[int]:
    """The answered items that are not among the judge's own claimed items. Every task that takes
    judgments (validation, MPE, recast, adversarial verification, per-premise labels,
    grammaticality) asks this before it saves anything, and refuses the whole submit with
    `FOREIGN_ITEMS_MESSAGE` when it is not empty: a judgment counts only for an item its judge was
    served (issue 39: `grammar-<pk>=major` was taken for any pair)."""
    return set(answered) - set(claimed)


def lock_rows(queryset: QuerySet[RowT]) -> QuerySet[RowT]:
    """FOR UPDATE SKIP LOCKED where the database has it; SQLite serialises writers instead."""
    if connection.features.has_select_for_update_skip_locked:
        return queryset.select_for_update(skip_locked=True, no_key=True, of=("self",))
    return queryset


def lock_candidates(candidates: QuerySet[Any], wanted: int, *, tried: Sequence[int] = ()) -> list[int]:
    """Lock up to `wanted` of the (ordered) candidates, leaving out those `tried`; their pks, in order.

    One statement: the candidates' ORDER BY ... LIMIT `wanted` stops after `wanted` rows it can
    lock, skipping the ones another claimer holds.
    """
    if tried:
        candidates = candidates.exclude(pk__in=list(tried))
    return list(lock_rows(candidates).values_list("pk", flat=True)[:wanted])


class Grouping(Enum):
    """What a batch asks of its rows' groups (the second value of `ClaimRule.room`)."""

    NONE = "none"  # any rows
    SAME = "same"  # all of the first chosen row's group (validation: one label scheme per page)
    APART = "apart"  # no two of one group (per-premise labels: one caption of an item per page)


# (pk, free places, group) of each locked row, counted in one statement under the locks.
RoomRule = Callable[[list[int], datetime], Iterable[tuple[int, int, object]]]


@dataclass(frozen=True)
class ClaimRule:
    """A batch task's claims: the claim model, the field that names the claimed row, the room rule."""

    model: type[TaskClaim]
    target: str  # the claim's foreign key to the locked row: "pair", "premise_pair"
    room: RoomRule
    grouping: Grouping = Grouping.NONE


def choose(rule: ClaimRule, locked: Sequence[int], now: datetime, *, size: int) -> list[int]:
    """The first `size` locked rows with room, in candidate order, under the rule's grouping."""
    room = {pk: (free, group) for pk, free, group in rule.room(list(locked), now)}
    chosen: list[int] = []
    groups: set[object] = set()
    for pk in locked:
        free, group = room.get(pk, (0, None))
        if free <= 0:
            continue
        if rule.grouping is Grouping.SAME and chosen and group not in groups:
            continue
        if rule.grouping is Grouping.APART and group in groups:
            continue
        chosen.append(pk)
        groups.add(group)
        if len(chosen) == size:
            break
    return chosen


def expiry(now: datetime) -> datetime:
    """When a claim made now runs out (VALIDATION_CLAIM_MINUTES, an int in the settings)."""
    minutes = settings.NLI["VALIDATION_CLAIM_MINUTES"]
    assert isinstance(minutes, int)
    return now + timedelta(minutes=minutes)


def insert_claims(
    rule: ClaimRule,
    worker: Worker,
    now: datetime,
    items: Iterable[tuple[int, dict[str, Any]]],
    **fields: Any,
) -> uuid.UUID:
    """One batch of claims on these rows ((pk, that claim's own fields)), in one statement; its id."""
    batch = uuid.uuid4()
    expires_at = expiry(now)
    common: dict[str, Any] = {"batch": batch, "worker": worker, "expires_at": expires_at, **fields}
    rule.model._default_manager.bulk_create(
        rule.model(**common, **{f"{rule.target}_id": pk}, **own) for pk, own in items
    )
    return batch


# The candidates of a claim: a queryset (locked by `lock_candidates`), or a function that locks up
# to `wanted` of them, leaving out those `tried` (validation's compiled statement).
Candidates = QuerySet[Any] | Callable[[int, Sequence[int]], list[int]]


def claim_batch(
    rule: ClaimRule,
    worker: Worker,
    now: datetime,
    candidates: Candidates,
    *,
    size: int,
    wanted: int,
    claim: Callable[[list[int], list[int]], uuid.UUID | None] | None = None,
    look_again: Callable[[list[int]], bool] | None = None,
    claim_fields: Mapping[str, Any] | None = None,
) -> uuid.UUID | None:
    """Claims on up to `size` of the candidates with room (looking at `wanted` at a time); the batch
    id, or None when none has room. In the caller's transaction.

    `claim(locked, tried)` replaces the plain choose-and-insert (validation's catch trials and its
    one-statement path; it may add to `tried`); `look_again(tried)` is asked when no candidate could
    be locked, and True looks once more (validation recounts stale held places, or waits a moment
    for claimers holding every claimable row). `claim_fields` go on every claim (a study session).
    """
    tried: list[int] = []
    for _ in range(CLAIM_LOOKS):
        if isinstance(candidates, QuerySet):
            locked = lock_candidates(candidates, wanted, tried=tried)
        else:
            locked = candidates(wanted, tried)
        if not locked:
            if look_again is not None and look_again(tried):
                continue
            return None
        if claim is not None:
            batch = claim(locked, tried)
        else:
            chosen = choose(rule, locked, now, size=size)
            fields = claim_fields or {}
            batch = insert_claims(rule, worker, now, ((pk, {}) for pk in chosen), **fields) if chosen else None
        if batch is not None:
            return batch
        # Every candidate was filled by claims committed after our snapshot: look further.
        tried += locked
    return None
