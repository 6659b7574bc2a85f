"""The one claim rule of every task kind (writing, adversarial writing, validation and MPE judgments,
per-premise labels, grammaticality): lock candidates, count their room again under the lock, claim
those with room.

Each kind names its claim model (a `TaskClaim`), the row a claim holds and its room rule
(`ClaimRule`); the steps are written once:

1. `lock_candidates`: up to `wanted` claimable rows locked in one statement, FOR NO KEY UPDATE SKIP
   LOCKED, rows this claim already `tried` left out;
2. `rule.room`: the locked rows' free places counted in one fresh statement under the locks, so a
   claim committed just before ours is seen (every claimer holds the row's lock while inserting);
3. `choose` and `insert_claims`: the first `size` with room, in candidate order, under the rule's
   grouping, claimed in one bulk insert;
4. `rule.after`: what the kind keeps on the locked rows (a premise's claims made, a pair's held
   places), in the same transaction.

`claim_rows` runs them in a loop: candidates that claims committed meanwhile filled are tried no
more, and the next look goes further down the queue.

The writing and validation claims send their statements written in SQL (`lock_clause`, `marks`,
`db_time` below): built by the ORM, those statements cost a claim more CPU than the database spent
on them (bench/RESULTS-house.md). The other kinds' candidates are querysets. The writing claim takes
these steps, with the study's serving order, in one call of a database function
(`collection.writing_claims._claim_statement`): a claim is one round trip. Its candidate lock is
`lock_clause`'s, its recount the live-claim rule below, and it keeps `WRITING_CLAIMS` for taking an
expired claim back.
"""

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Literal, TypeVar

from django.conf import settings
from django.db import connection
from django.db.models import Count, IntegerField, Model, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from corpus.models import Worker
from corpus.selectors import is_excluded_in

from .models import ClaimStatus, Study, TaskClaim

# A claim looks again when its candidates were taken by claimers that committed meanwhile: each
# look excludes the rows already tried, so a few are enough; with one look, a claim under
# contention could say "no task" while untaken rows remained.
CLAIM_LOOKS = 20

RowT = TypeVar("RowT", bound=Model)

FOREIGN_ITEMS_MESSAGE = "Answers were sent for items that are not in your own task; nothing was saved."


def foreign_items(answered: Iterable[int], claimed: Iterable[int]) -> set[int]:
    """The answered items that are not among the judge's own claimed items. Every task that takes
    judgments asks this before it saves anything, and refuses the whole submit when it is not empty:
    a judgment counts only for an item its judge was served, or a crafted post could label any pair."""
    return set(answered) - set(claimed)


def claim_key(value: uuid.UUID | str) -> uuid.UUID | None:
    """A claim's batch id or token as a uuid, or None when the text is no uuid: the caller answers it
    as an unknown claim, never as a server error."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def lock_rows(queryset: QuerySet[RowT]) -> QuerySet[RowT]:
    """FOR NO KEY UPDATE SKIP LOCKED. NO KEY: rows that reference the locked one (a premise's pairs)
    can still be inserted meanwhile."""
    return queryset.select_for_update(skip_locked=True, no_key=True, of=("self",))


def lock_clause(table: str, *, wait: bool = False) -> str:
    """What `lock_rows` adds to a queryset, for a claim statement written in SQL."""
    return f" FOR NO KEY UPDATE OF {table}" + ("" if wait else " SKIP LOCKED")


def marks(values: Sequence[object]) -> str:
    """The placeholders of an IN list of these values (never empty: callers ask only with values)."""
    return ", ".join(["%s"] * len(values))


def db_time(moment: datetime) -> Any:
    """A time as a statement written in SQL takes it: what the ORM sends for a DateTimeField."""
    return connection.ops.adapt_datetimefield_value(moment)


# --- the live-claim rule: a claim holds its place while it is open and its time has not run out ---


def excluded_from_claim(worker: Worker, claim: TaskClaim) -> bool:
    """Whether the team of the claim's dataset excluded the worker (the claim's task ends for them)."""
    model = type(claim)
    team_id = (
        model._default_manager.filter(pk=claim.pk).values_list(f"{model.DATASET_PATH}__team_id", flat=True).first()
    )
    return is_excluded_in(worker, team_id)


def live_claims(now: datetime) -> Q:
    """The claims that still hold their place at `now`, as a filter on any claim model."""
    return Q(status=ClaimStatus.OPEN, expires_at__gt=now)


def is_live(claim: TaskClaim, now: datetime) -> bool:
    """Whether this claim still holds its place at `now` (`live_claims`, for a claim in hand)."""
    return claim.status == ClaimStatus.OPEN and claim.expires_at > now


# The rule on a claim table aliased `c`, in SQL; its parameters are `live_params(now)`.
LIVE_SQL = "c.status = %s AND c.expires_at > %s"


def live_claims_sql(table: str, target: str, row: str, *, also: str = "") -> str:
    """How many live claims of `table` name the row `row` in their column `target`, as a SQL
    subquery taking `live_params(now)`; `also`, a further condition on the claim `c`."""
    return f"(SELECT COUNT(*) FROM {table} c WHERE c.{target} = {row} AND {LIVE_SQL}{also})"


def live_params(now: datetime) -> list[Any]:
    """The parameters of `LIVE_SQL` (and so of `live_claims_sql`), in order."""
    return [ClaimStatus.OPEN, db_time(now)]


def lock_candidates(candidates: QuerySet[Any], wanted: int, *, tried: Sequence[int] = ()) -> list[int]:
    """Lock up to `wanted` of the (ordered) candidates, leaving out those `tried`: their pks, in order,
    in one statement (ORDER BY ... LIMIT stops after `wanted` rows it can lock)."""
    if tried:
        candidates = candidates.exclude(pk__in=list(tried))
    return list(lock_rows(candidates).values_list("pk", flat=True)[:wanted])


class Grouping(Enum):
    """What a batch asks of its rows' groups (the third value of `ClaimRule.room`)."""

    NONE = "none"  # any rows
    SAME = "same"  # all of the first chosen row's group (validation: one label scheme per page)
    APART = "apart"  # no two of one group (per-premise labels: one caption of an item per page)


# (pk, free places, group) of each locked row, counted in one statement under the locks.
RoomRule = Callable[[list[int], datetime], Iterable[tuple[int, int, object]]]
# What a kind keeps on its rows once a look has locked them: (locked pks, claimed pks, now).
AfterRule = Callable[[list[int], list[int], datetime], object]


@dataclass(frozen=True)
class ClaimRule:
    """A task kind's claims; `batched`: its claims share a batch id (a writing claim has a token of its own)."""

    model: type[TaskClaim]
    target: str  # the claim's foreign key to the locked row: "pair", "premise_pair", "premise"
    room: RoomRule
    grouping: Grouping = Grouping.NONE
    after: AfterRule | None = None
    minutes_setting: Literal["VALIDATION_CLAIM_MINUTES", "WRITING_CLAIM_MINUTES"] = "VALIDATION_CLAIM_MINUTES"
    batched: bool = True

    def expiry(self, now: datetime, study: Study | None = None) -> datetime:
        """When a claim made now runs out: the study's own claim minutes, else the rule's setting."""
        minutes = (
            study.claim_minutes if study is not None and study.claim_minutes else settings.NLI[self.minutes_setting]
        )
        assert isinstance(minutes, int)
        return now + timedelta(minutes=minutes)

    def live(self, now: datetime) -> QuerySet[Any]:
        return self.model._default_manager.filter(live_claims(now))

    def held(self, now: datetime, *, exclude_worker: Worker | None = None) -> Coalesce:
        """The live claims on each row of a queryset of this kind's rows (0 for none), for `room`,
        the candidates and a submit's recount; `exclude_worker`'s own left out."""
        claims = self.live(now).filter(**{self.target: OuterRef("pk")})
        if exclude_worker is not None:
            claims = claims.exclude(worker=exclude_worker)
        counted = claims.order_by().values(self.target).annotate(n=Count("id")).values("n")
        return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))

    def release_expired(self, now: datetime | None = None) -> int:
        """Mark every open claim past its expiry as expired (the beat's), so the status says what happened."""
        expired = self.model._default_manager.filter(status=ClaimStatus.OPEN, expires_at__lte=now or timezone.now())
        released: int = expired.update(status=ClaimStatus.EXPIRED)
        return released


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


def insert_claims(
    rule: ClaimRule, worker: Worker, now: datetime, items: Iterable[tuple[int, dict[str, Any]]], **fields: Any
) -> list[TaskClaim]:
    """Claims on these rows ((pk, that claim's own fields)), one batch where the rule has batches,
    in one statement, in the order given (a page shows claim id order); the claims, with their pks."""
    session = fields.get("study_session")
    study = session.study if session is not None else None
    common: dict[str, Any] = {"worker": worker, "expires_at": rule.expiry(now, study), **fields}
    if rule.batched:
        common["batch"] = uuid.uuid4()
    created: list[TaskClaim] = rule.model._default_manager.bulk_create(
        [rule.model(**common, **{f"{rule.target}_id": pk}, **own) for pk, own in items]
    )
    return created


# The candidates of a claim: a queryset (locked by `lock_candidates`), or a function that locks up
# to `wanted` of them, leaving out those `tried` (validation reads more of each row than its pk).
Candidates = QuerySet[Any] | Callable[[int, Sequence[int]], list[int]]
# A kind's own taking of the locked rows (validation: catch trials, page order): the claims made.
Take = Callable[[list[int], list[int]], list[TaskClaim]]


def claim_rows(
    rule: ClaimRule,
    worker: Worker,
    now: datetime,
    candidates: Candidates,
    *,
    size: int,
    wanted: int,
    looks: int = CLAIM_LOOKS,
    take: Take | None = None,
    look_again: Callable[[list[int]], bool] | None = None,
    claim_fields: Mapping[str, Any] | None = None,
) -> list[TaskClaim]:
    """Claims on up to `size` of the candidates with room (locking `wanted` at a time); none when
    none has room. In the caller's transaction. `take(locked, tried)` replaces the plain
    choose-and-insert (it may add to `tried`); `look_again(tried)` is asked when no candidate could
    be locked, and True looks once more. `claim_fields` go on every claim (a study session)."""
    tried: list[int] = []
    for _ in range(looks):
        if isinstance(candidates, QuerySet):
            locked = lock_candidates(candidates, wanted, tried=tried)
        else:
            locked = candidates(wanted, tried)
        if not locked:
            if look_again is not None and look_again(tried):
                continue
            return []
        if take is not None:
            claims = take(locked, tried)
        else:
            chosen = choose(rule, locked, now, size=size)
            items: list[tuple[int, dict[str, Any]]] = [(pk, {}) for pk in chosen]
            claims = insert_claims(rule, worker, now, items, **(claim_fields or {})) if chosen else []
        if rule.after is not None:
            rule.after(locked, [getattr(claim, f"{rule.target}_id") for claim in claims], now)
        if claims:
            return claims
        # Every candidate was filled by claims committed after our snapshot: look further.
        tried += locked
    return []


def claim_batch(
    rule: ClaimRule,
    worker: Worker,
    now: datetime,
    candidates: Candidates,
    *,
    size: int,
    wanted: int,
    open_batch: Callable[[], uuid.UUID | None] | None = None,
    **options: Any,
) -> uuid.UUID | None:
    """`claim_rows` for a kind whose claims come in batches: the worker's open batch (`open_batch`,
    or the batch of their live claims of the kind), else a new batch's id, or None when none has
    room. The worker's row is locked first: a double click never opens two batches."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM collection_worker WHERE id = %s" + lock_clause("collection_worker", wait=True), [worker.pk]
        )
    if open_batch is None:
        current = rule.live(now).filter(worker=worker).order_by("created_at", "id").first()
        batch: uuid.UUID | None = current.batch if current is not None else None
    else:
        batch = open_batch()
    if batch is None:
        claims = claim_rows(rule, worker, now, candidates, size=size, wanted=wanted, **options)
        batch = getattr(claims[0], "batch") if claims else None  # noqa: B009 (not on TaskClaim)
    return batch
