"""Adjudication for every dataset: the queues of pairs a researcher should settle, and their decisions.

A queue is the pairs of a scope (dataset, split) that match one filter, oldest first, without those
a researcher has already decided (unless asked). A decision is a gold label, "retire the pair" (it
leaves snapshots and releases) or "withdraw" (back to the rule's gold); each one is an `Adjudication`
row with its reason and researcher (`corpus.adjudication.adjudicate`, the one writer).
"""

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.postgres.expressions import ArraySubquery
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery

from audit import services as audit
from base.long_tasks import JobStatus
from base.subquery import EqualsAny
from corpus import tallies
from corpus.adjudication import adjudicate
from corpus.agreement import before_and_after_adjudication
from corpus.gold import TWO_TWO_ONE, VOTE_FIELD, adjudication_case, gold_from_votes
from corpus.labels import GOLD_MAJORITY, LABELS, LABELS_PER_PAIR, NO_GOLD
from corpus.models import (
    RETIRED_LABEL,
    Adjudication,
    AdjudicationAction,
    AdjudicationSource,
    Dataset,
    ItemKind,
    Pair,
    ValidationLabel,
)
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import awaiting_decision, pairs_in
from corpus.services import LabelRefused
from quality.flag_rows import pairs_labelled_by
from quality.models import AggregatedLabel, AggregationRun, GroupDecidedPair
from quality.selectors import flagged_worker_ids, worker_quality

from . import signals
from .models import AdjudicationRequest

AGGREGATION_METHOD = "dawid_skene"


SENT_FILTER = "sent"


@dataclass(frozen=True)
class QueueFilter:
    slug: str
    title: str  # shown on the page, and the decision's default reason


FILTERS = (
    QueueFilter("no_gold", "no gold label: every label in, no 3 agree"),
    QueueFilter("gold_ne_author", "gold label ≠ author's label"),
    QueueFilter("aggregation_ne_majority", "Dawid–Skene label ≠ majority gold (latest aggregation run)"),
    QueueFilter("flagged", "labelled by a worker the quality checks flag"),
    QueueFilter("correlated", "gold rests on a correlated group's votes (latest aggregation run)"),
    QueueFilter("two_two_one", TWO_TWO_ONE),
    QueueFilter("mpe", "MPE: 2-2-1 or a 3-2 split between entailment and contradiction"),
    QueueFilter(SENT_FILTER, "sent here by a researcher from the pair browser"),
)
FILTER_BY_SLUG = {queue.slug: queue for queue in FILTERS}
DEFAULT_FILTER = "no_gold"
# What a researcher may decide: one of the labels, retire the pair, or withdraw (the rule's gold again).
RETIRE, WITHDRAW = AdjudicationAction.RETIRE.value, AdjudicationAction.WITHDRAW.value
DECISIONS = (*LABELS, RETIRE, WITHDRAW)


def latest_runs(scope: Scope) -> list[int]:
    """The latest finished aggregation run of each dataset in scope."""
    runs = scope.filter(AggregationRun.objects.filter(status=JobStatus.DONE))
    latest = {dataset_id: run_id for run_id, dataset_id in runs.order_by("pk").values_list("pk", "dataset_id")}
    return sorted(latest.values())


def flagged_workers(scope: Scope = EVERYTHING) -> list[int]:
    """Workers the quality checks flag on the labels of `scope`. Worker quality is read from every
    label, so a page asks once and hands the list to every queue it counts or shows."""
    return flagged_worker_ids(worker_quality(scope))


# The queues whose rule reads only a pair's counters, flags and gold label: counted from the pair
# tally, not from the pairs. The others are sets of pairs kept elsewhere.
VOTE_QUEUES = ("no_gold", "gold_ne_author", "two_two_one", "mpe")


def _vote_condition(slug: str) -> Q:
    """The rule of a queue of VOTE_QUEUES as a condition on the pairs (the queue's list);
    `_in_vote_queue` is the same rule over a pair tally row's key (the queue's count)."""
    settled = Q(label_count__gte=LABELS_PER_PAIR) | Q(stopped_early=True)  # no label is coming that could change it
    if slug == "no_gold":
        return settled & Q(gold_label=NO_GOLD, adjudicated_label="")
    if slug == "gold_ne_author":
        return Q(label_count__gte=2) & ~Q(gold_label=NO_GOLD) & ~Q(gold_label=F("author_label"))
    two_two_one, torn = adjudication_case()
    if slug == "two_two_one":
        return two_two_one & Q(label_count=LABELS_PER_PAIR)
    if slug == "mpe":
        return (two_two_one | torn) & Q(label_count=LABELS_PER_PAIR)
    raise ValueError(f"{slug!r} is not a queue of the pairs' counters")


def _in_vote_queue(
    slug: str, author: str, label_count: int, votes: tuple[int, int, int], gold: str, stopped: bool
) -> bool:
    """`_vote_condition` over a pair tally row: whether its pairs (none adjudicated) are in the queue."""
    if slug == "no_gold":
        return (label_count >= LABELS_PER_PAIR or stopped) and gold == NO_GOLD
    if slug == "gold_ne_author":
        return label_count >= 2 and gold not in (NO_GOLD, author)
    five = label_count == LABELS_PER_PAIR
    two_two_one = five and max(votes) < GOLD_MAJORITY
    if slug == "two_two_one":
        return two_two_one
    entailment, _, contradiction = votes
    return two_two_one or (five and {entailment, contradiction} == {2, 3})


def _condition(slug: str, scope: Scope, flagged: list[int] | None, latest: list[int] | None) -> Q:
    """The filter of a queue as one condition on the pairs; `flagged` and `latest` are read when not given."""
    if slug in VOTE_QUEUES:
        return _vote_condition(slug)
    return Q(pk__in=_pair_set(slug, scope, flagged, latest))


def _pair_set(slug: str, scope: Scope, flagged: list[int] | None, latest: list[int] | None) -> QuerySet[Any]:
    """The pair ids of a queue that is a set of pairs kept elsewhere (not of VOTE_QUEUES), as a
    one-column queryset: any dataset's; the caller keeps its scope's."""
    if slug in ("aggregation_ne_majority", "correlated"):
        runs = latest_runs(scope) if latest is None else latest
        if slug == "correlated":
            return GroupDecidedPair.objects.filter(run_id__in=runs).values("pair_id")
        differs = AggregatedLabel.objects.filter(run_id__in=runs, method=AGGREGATION_METHOD, differs=True)
        return differs.values("pair_id")
    if slug == "flagged":
        workers = flagged_workers(scope) if flagged is None else flagged
        return ValidationLabel.objects.filter(worker_id__in=workers).values("pair_id")
    if slug == SENT_FILTER:
        return AdjudicationRequest.objects.values("pair_id")
    raise ValueError(f"unknown queue {slug!r}; choose one of {', '.join(FILTER_BY_SLUG)}")


def matching(pairs: QuerySet[Pair], slug: str, scope: Scope) -> QuerySet[Pair]:
    """`pairs` that a queue's rule would put in it (decided ones included): the pair browser's filter."""
    return pairs.filter(_condition(slug, scope, None, None))


def _waiting(pairs: QuerySet[Pair], include_decided: bool) -> QuerySet[Pair]:
    """Without the pairs a researcher decided (unless asked): a researcher's decision stands (a
    withdrawn one puts the pair back in its queue; a gold label taken from an imported file is not
    a decision and leaves the pair in)."""
    if include_decided:
        return pairs
    return pairs.filter(awaiting_decision())  # the one rule of "pending", the MPE page's too


def queue(
    scope: Scope = EVERYTHING,
    slug: str = DEFAULT_FILTER,
    *,
    include_decided: bool = False,
    flagged: list[int] | None = None,
    latest: list[int] | None = None,
) -> QuerySet[Pair]:
    """The pairs of a queue, oldest first, each with `aggregated_label` (the latest run's Dawid–Skene
    label), `correlated_reason` (why the latest run's correlated-error check sent it here) and
    `last_decision` (the latest researcher decision's action). `flagged` (`flagged_workers`) and
    `latest` (`latest_runs`): when the caller has read them."""
    if slug not in FILTER_BY_SLUG:
        raise ValueError(f"unknown queue {slug!r}; choose one of {', '.join(FILTER_BY_SLUG)}")
    latest = latest_runs(scope) if latest is None else latest
    pairs = _waiting(pairs_in(scope).filter(_condition(slug, scope, flagged, latest)), include_decided)
    decided = Adjudication.objects.filter(source=AdjudicationSource.RESEARCHER)
    aggregated = AggregatedLabel.objects.filter(
        pair=OuterRef("pk"), run_id__in=latest, method=AGGREGATION_METHOD
    ).order_by("-run_id")
    last = decided.filter(pair=OuterRef("pk")).order_by("-pk")
    resting = GroupDecidedPair.objects.filter(pair=OuterRef("pk"), run_id__in=latest).order_by("-run_id")
    return (
        pairs.annotate(
            aggregated_label=Subquery(aggregated.values("label")[:1]),
            correlated_reason=Subquery(resting.values("reason")[:1]),
            last_decision=Subquery(last.values("action")[:1]),
            last_reason=Subquery(last.values("reason")[:1]),
            sent_reason=Subquery(AdjudicationRequest.objects.filter(pair=OuterRef("pk")).values("reason")[:1]),
        )
        .select_related("premise", "dataset")
        .order_by("pk")
    )


def queue_counts(
    scope: Scope = EVERYTHING,
    *,
    flagged: list[int] | None = None,
    flagged_pairs: int | None = None,
    latest: list[int] | None = None,
    holds_every_dataset: bool | None = None,
) -> dict[str, int]:
    """Pairs waiting in each queue (decided ones left out), whatever the corpus's size: the queues of
    the counters from the pair tally (`_vote_queue_counts`, two statements), each other queue from
    the set of pairs it is (one statement each, over that set's pairs only: as conditional counts of
    one statement, each row was compared with every id of every set). `flagged_pairs` (kept with the
    flags: `quality.flag_rows`), `latest` and `holds_every_dataset`: when the caller knows them."""
    latest = latest_runs(scope) if latest is None else latest
    flagged = flagged_workers(scope) if flagged is None else flagged
    counts = _vote_queue_counts(scope)
    if holds_every_dataset is None:
        holds_every_dataset = _holds_every_dataset(scope)
    if scope.split is None and holds_every_dataset:
        counts["flagged"] = _flagged_everywhere(flagged, flagged_pairs)
    for queue_filter in FILTERS:
        if queue_filter.slug not in counts:
            # Each pair of the set looked up by its key (`id = ANY(ARRAY(...))`): as `id IN (...)`
            # the planner hashed the set and read every pair of the corpus against it.
            pair_set = _pair_set(queue_filter.slug, scope, flagged, latest)
            chosen = pairs_in(scope).filter(EqualsAny(F("pk"), ArraySubquery(pair_set)))
            counts[queue_filter.slug] = _waiting(chosen, include_decided=False).count()
    return {queue_filter.slug: counts[queue_filter.slug] for queue_filter in FILTERS}


def _holds_every_dataset(scope: Scope) -> bool:
    """Whether a scope holds every dataset there is (every dataset, or a team's when its datasets
    are all of them): its pairs are every pair, and no count of it needs to look a pair up."""
    if scope.is_everything:
        return True
    return not Dataset.objects.exclude(pk__in=scope.datasets().values("pk")).exists()


def _flagged_everywhere(flagged: list[int], labelled_pairs: int | None = None) -> int:
    """The flagged queue's length over every pair: the pairs the flagged workers labelled, counted
    from their labels alone (looking each pair up is slow at corpus scale) or as counted when they
    were flagged (`labelled_pairs`), less those a researcher's decision stands on (few)."""
    labelled = ValidationLabel.objects.filter(worker_id__in=flagged)
    pairs = pairs_labelled_by(flagged) if labelled_pairs is None else labelled_pairs
    researched = Adjudication.objects.filter(source=AdjudicationSource.RESEARCHER).values("pair_id")
    decided = (
        Pair.objects.exclude(adjudicated_label="")
        .filter(pk__in=researched)
        .filter(Exists(labelled.filter(pair=OuterRef("pk"))))
        .count()
    )
    return max(pairs - decided, 0)  # a pair labelled and decided since the count is counted out only


TALLY_BY = ("author_label", "label_count", *VOTE_FIELD.values(), "imported_gold", "stopped_early")


def _vote_queue_counts(scope: Scope) -> dict[str, int]:
    """The pairs waiting in each queue of VOTE_QUEUES: the pair tally's rows (a few hundred), as if
    no pair were adjudicated, then the adjudicated pairs (few) set right: out of the queue the rule's
    gold put them in, into the one their decided gold puts them in while no researcher's decision
    stands on them (an imported file's gold)."""
    counts = dict.fromkeys(VOTE_QUEUES, 0)
    for author, label_count, e, nu, c, imported_gold, stopped, n in tallies.pair_counts(scope, by=TALLY_BY):
        gold = gold_from_votes(e, nu, c, imported_gold)
        for slug in VOTE_QUEUES:
            if _in_vote_queue(slug, author, label_count, (e, nu, c), gold, stopped):
                counts[slug] += n
    decided = Adjudication.objects.filter(pair=OuterRef("pk"), source=AdjudicationSource.RESEARCHER)
    adjudicated = (
        pairs_in(scope)
        .exclude(adjudicated_label="")
        .annotate(decided=Exists(decided))
        .values_list(*TALLY_BY, "gold_label", "decided")
        .annotate(n=Count("pk"))
    )
    for author, label_count, e, nu, c, imported_gold, stopped, gold, decided_, n in adjudicated:
        rule_gold = gold_from_votes(e, nu, c, imported_gold)
        for slug in VOTE_QUEUES:
            if _in_vote_queue(slug, author, label_count, (e, nu, c), rule_gold, stopped):
                counts[slug] -= n  # counted by the rule's gold above
            # Waiting still, under its decided gold: no researcher decided it (an imported file's
            # gold, `awaiting_decision`); never in no_gold, whose pairs are not adjudicated.
            if (
                not decided_
                and slug != "no_gold"
                and _in_vote_queue(slug, author, label_count, (e, nu, c), gold, stopped)
            ):
                counts[slug] += n
    return counts


def filters_for(scope: Scope = EVERYTHING, *, datasets: Iterable[Dataset] | None = None) -> tuple[QueueFilter, ...]:
    """The queues that apply: the MPE queue only when a dataset of the scope is multi-premise.
    `datasets`: the scope's datasets, when the caller has read them."""
    if datasets is not None:
        has_mpe = any(dataset.item_kind == ItemKind.MULTI_PREMISE for dataset in datasets)
    elif scope.one is not None:
        has_mpe = scope.one.item_kind == ItemKind.MULTI_PREMISE
    else:
        has_mpe = scope.datasets().filter(item_kind=ItemKind.MULTI_PREMISE).exists()
    return tuple(f for f in FILTERS if f.slug != "mpe" or has_mpe)


def recent_decisions(scope: Scope = EVERYTHING, limit: int = 30) -> list[Adjudication]:
    """The scope's latest researcher decisions, newest first, each with `undoable`: it is still the
    latest decision on its pair."""
    decisions = Adjudication.objects.filter(
        source=AdjudicationSource.RESEARCHER, pair__in=pairs_in(scope)
    ).select_related("pair", "researcher")
    later = Adjudication.objects.filter(pair=OuterRef("pair_id"), pk__gt=OuterRef("pk"))
    rows: list[Adjudication] = list(decisions.annotate(superseded=Exists(later)).order_by("-pk")[:limit])
    for row in rows:
        row.undoable = not getattr(row, "superseded")  # type: ignore[attr-defined]  # noqa: B009
    return rows


def last_undoable(decisions: list[Adjudication], pk: int | None) -> Adjudication | None:
    """The decision `pk` among `recent_decisions`, when it can still be undone (the page's undo)."""
    return next((d for d in decisions if d.pk == pk and getattr(d, "undoable", False)), None)


def decision(pk: int) -> Adjudication | None:
    return Adjudication.objects.filter(pk=pk, source=AdjudicationSource.RESEARCHER).select_related("pair").first()


def undo(decision: Adjudication, *, researcher: Any) -> Adjudication:
    """Undo a researcher's decision: the pair goes back to where it stood before it (the decision
    before it re-applied, or the rule's gold), as a new decision of its own, so the history keeps
    both. Refused when a later decision was made on the pair (undo that one first)."""
    if Adjudication.objects.filter(pair_id=decision.pair_id, pk__gt=decision.pk).exists():
        raise LabelRefused("A later decision was made on this pair: undo that one first.")
    before = (
        Adjudication.objects.filter(pair_id=decision.pair_id, pk__lt=decision.pk, source=AdjudicationSource.RESEARCHER)
        .order_by("-pk")
        .first()
    )
    reason = f"undo of decision {decision.pk}"
    if before is None or before.action == AdjudicationAction.WITHDRAW:
        return decide(decision.pair, WITHDRAW, researcher=researcher, reason=reason)
    again = RETIRE if before.action == AdjudicationAction.RETIRE else before.label
    return decide(decision.pair, again, researcher=researcher, reason=reason)


def decide(pair: Pair, decision: str, *, researcher: Any, reason: str, note: str = "") -> Adjudication:
    """Record a researcher's decision on a pair: a label, RETIRE or WITHDRAW. A decision without a
    reason is refused (the history must say why)."""
    reason = (reason or "").strip()
    if not reason:
        raise LabelRefused("Say why (a reason of up to 100 characters): the decision is kept with it.")
    if decision not in DECISIONS:
        raise LabelRefused(f"'{decision}' is not a decision; choose one of {', '.join(DECISIONS)}.")
    action = decision if decision in (RETIRE, WITHDRAW) else AdjudicationAction.LABEL
    return adjudicate(
        pair,
        decision if action == AdjudicationAction.LABEL else "",
        source=AdjudicationSource.RESEARCHER,
        researcher=researcher,
        reason=reason,
        note=note,
        action=action,
    )


BEFORE_AFTER_KEYS = ("gold_eq_author", "gold_ne_author", "no_gold", "individual_eq_gold")


def before_and_after(scope: Scope = EVERYTHING) -> dict[str, Any]:
    """The statistics as the rule gives them (before any decision) and as they stand (after), side
    by side: gold counts and the Table 2 rows that depend on the gold label."""
    before, after = before_and_after_adjudication(scope)
    rows = [(key, before[key], after[key]) for key in BEFORE_AFTER_KEYS]
    labels = list(after["gold_counts"])
    counts = [(label, before["gold_counts"].get(label, 0), after["gold_counts"].get(label, 0)) for label in labels]
    return {
        "rows": rows,
        "gold_counts": counts,
        "adjudicated": after["gold_sources"].get("adjudicated", 0),
        "pairs": after["pairs"],
    }


# The note a bulk decision carries: its batch's token, so the batch is undone as one.
BULK_NOTE = "bulk {token}"


def retire_pairs(pairs: QuerySet[Pair], *, researcher: Any, reason: str) -> tuple[int, str]:
    """Retire every pair of a selection in one transaction, each an `Adjudication` with the reason,
    tagged with one batch token: (pairs retired, the token `undo_bulk` takes)."""
    reason = (reason or "").strip()
    if not reason:
        raise LabelRefused("Say why (a reason of up to 100 characters): the decisions are kept with it.")
    token = uuid.uuid4().hex[:12]
    retired = 0
    with transaction.atomic():
        for pair in pairs.exclude(adjudicated_label=RETIRED_LABEL).order_by("pk").iterator():
            adjudicate(
                pair,
                "",
                source=AdjudicationSource.RESEARCHER,
                researcher=researcher,
                reason=reason,
                note=BULK_NOTE.format(token=token),
                action=AdjudicationAction.RETIRE,
            )
            retired += 1
    return retired, token


def undo_bulk(token: str, *, researcher: Any) -> int:
    """Undo a bulk decision's batch: each of its decisions still the latest on its pair is undone
    (`undo`), in one transaction; the pairs decided again since keep that later decision. The count."""
    undone = 0
    with transaction.atomic():
        batch = Adjudication.objects.filter(note=BULK_NOTE.format(token=token), source=AdjudicationSource.RESEARCHER)
        for decision in batch.select_related("pair").order_by("pk"):
            if Adjudication.objects.filter(pair_id=decision.pair_id, pk__gt=decision.pk).exists():
                continue
            undo(decision, researcher=researcher)
            undone += 1
    return undone


def send_to_adjudication(pairs: QuerySet[Pair], *, researcher: Any, reason: str) -> tuple[int, int, str]:
    """Send every pair of a selection to the adjudication page's "sent" queue, in one transaction with
    its audit entry: (pairs sent, pairs left as they were, the batch token `unsend` takes). A pair a
    researcher's decision stands on, or one already sent, is left as it is."""
    reason = (reason or "").strip()[:100]
    if not reason:
        raise LabelRefused("Say why (a reason of up to 100 characters): the adjudicator reads it.")
    token = uuid.uuid4().hex[:12]
    with transaction.atomic():
        chosen = pairs.order_by()
        total = chosen.count()
        fresh = chosen.filter(awaiting_decision()).exclude(
            Exists(AdjudicationRequest.objects.filter(pair=OuterRef("pk")))
        )
        ids = list(fresh.values_list("pk", flat=True))
        AdjudicationRequest.objects.bulk_create(
            [AdjudicationRequest(pair_id=pk, token=token, reason=reason, researcher=researcher) for pk in ids]
        )
        audit.record_batch(
            "adjudication.sent", Pair.objects.filter(pk__in=ids), actor=researcher, reason=reason, token=token
        )
        signals.adjudication_requests_changed.send(sender=AdjudicationRequest)
    return len(ids), total - len(ids), token


def unsend(token: str, *, researcher: Any) -> int:
    """Take a batch sent to adjudication back out of the "sent" queue (its pairs decided since keep
    their decision): the count, in one transaction with its audit entry."""
    with transaction.atomic():
        batch = AdjudicationRequest.objects.filter(token=token)
        pairs = Pair.objects.filter(pk__in=list(batch.values_list("pair_id", flat=True)))
        audit.record_batch("adjudication.unsent", pairs, actor=researcher, reason="undo of a bulk send", token=token)
        undone, _ = batch.delete()
        signals.adjudication_requests_changed.send(sender=AdjudicationRequest)
    return undone
