"""Adjudication for every dataset (issue 42.2): the queues of pairs a researcher should settle, and
their decisions.

A queue is the pairs of a scope (dataset, split) that match one filter, oldest first, without those
a researcher has already decided (unless asked). A decision is a gold label, "retire the pair" (it
leaves snapshots and releases) or "withdraw" (back to the rule's gold); each one is an
`Adjudication` row with its reason and researcher (`corpus.adjudication.adjudicate`, the one writer),
and the gold label it sets is the pair's gold everywhere gold is shown. MPE's 2-2-1 and torn splits
are the `mpe` queue.
"""

from dataclasses import dataclass
from typing import Any

from django.db.models import F, OuterRef, Q, QuerySet, Subquery

from annotation_site.long_tasks import JobStatus
from corpus.adjudication import adjudicate
from corpus.agreement import agreement_stats
from corpus.gold import TWO_TWO_ONE, adjudication_case
from corpus.labels import LABELS, LABELS_PER_PAIR, NO_GOLD
from corpus.models import (
    Adjudication,
    AdjudicationAction,
    AdjudicationSource,
    Dataset,
    Pair,
    ValidationLabel,
    Worker,
)
from corpus.selectors import pairs_in, resolve_dataset
from corpus.services import LabelRefused
from quality.models import AggregatedLabel, AggregationRun, GroupDecidedPair
from quality.selectors import flag_marks

AGGREGATION_METHOD = "dawid_skene"


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
)
FILTER_BY_SLUG = {queue.slug: queue for queue in FILTERS}
DEFAULT_FILTER = "no_gold"
# What a researcher may decide: one of the labels, retire the pair, or withdraw (the rule's gold again).
RETIRE, WITHDRAW = AdjudicationAction.RETIRE.value, AdjudicationAction.WITHDRAW.value
DECISIONS = (*LABELS, RETIRE, WITHDRAW)


def _latest_runs(dataset: Dataset | None) -> list[int]:
    """The latest finished aggregation run of each dataset in scope."""
    runs = AggregationRun.objects.filter(status=JobStatus.DONE)
    if dataset is not None:
        runs = runs.filter(dataset=dataset)
    latest: dict[int, int] = {}
    for run_id, dataset_id in runs.order_by("pk").values_list("pk", "dataset_id"):
        latest[dataset_id] = run_id
    return sorted(latest.values())


def _flagged_workers() -> list[int]:
    """Workers the quality checks flag (the workers page's flags)."""
    return sorted(flag_marks(Worker.objects.filter(labels__isnull=False).values_list("pk", flat=True).distinct()))


def _matching(pairs: QuerySet[Pair], slug: str, dataset: Dataset | None) -> QuerySet[Pair]:
    settled = Q(label_count__gte=LABELS_PER_PAIR) | Q(stopped_early=True)  # no label is coming that could change it
    if slug == "no_gold":
        return pairs.filter(settled, gold_label=NO_GOLD, adjudicated_label="")
    if slug == "gold_ne_author":
        return pairs.filter(label_count__gte=2).exclude(gold_label=NO_GOLD).exclude(gold_label=F("author_label"))
    if slug == "aggregation_ne_majority":
        differs = AggregatedLabel.objects.filter(
            run_id__in=_latest_runs(dataset), method=AGGREGATION_METHOD, differs=True
        ).values("pair_id")
        return pairs.filter(pk__in=differs)
    if slug == "flagged":
        by_flagged = ValidationLabel.objects.filter(worker_id__in=_flagged_workers()).values("pair_id")
        return pairs.filter(pk__in=by_flagged)
    if slug == "correlated":
        resting = GroupDecidedPair.objects.filter(run_id__in=_latest_runs(dataset)).values("pair_id")
        return pairs.filter(pk__in=resting)
    two_two_one, torn = adjudication_case()
    if slug == "two_two_one":
        return pairs.filter(two_two_one, label_count=LABELS_PER_PAIR)
    if slug == "mpe":
        return pairs.filter(two_two_one | torn, label_count=LABELS_PER_PAIR)
    raise ValueError(f"unknown queue {slug!r}; choose one of {', '.join(FILTER_BY_SLUG)}")


def queue(
    dataset: Dataset | str | None = None,
    split: str | None = None,
    slug: str = DEFAULT_FILTER,
    *,
    include_decided: bool = False,
) -> QuerySet[Pair]:
    """The pairs of a queue, oldest first, each with `aggregated_label` (the latest run's Dawid–Skene
    label, '' without one), `correlated_reason` (why the latest run's correlated-error check sent it
    here, if it did) and `last_decision` (the latest researcher decision's action, if any)."""
    dataset = resolve_dataset(dataset)
    pairs = _matching(pairs_in(dataset, split), slug, dataset)
    decided = Adjudication.objects.filter(source=AdjudicationSource.RESEARCHER)
    if not include_decided:
        # Decided: a researcher's decision stands (a withdrawn one puts the pair back in its queue;
        # a gold label taken from an imported file is not a decision and leaves the pair in).
        pairs = pairs.exclude(Q(pk__in=decided.values("pair_id")) & ~Q(adjudicated_label=""))
    latest = _latest_runs(dataset)
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
        )
        .select_related("premise", "dataset")
        .order_by("pk")
    )


def queue_counts(dataset: Dataset | str | None = None, split: str | None = None) -> dict[str, int]:
    """Pairs waiting in each queue (decided ones left out)."""
    return {queue_filter.slug: queue(dataset, split, queue_filter.slug).count() for queue_filter in FILTERS}


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


def before_and_after(dataset: Dataset | str | None = None, split: str | None = None) -> dict[str, Any]:
    """The statistics as the rule gives them (before any decision) and as they stand (after), side
    by side: gold counts and the Table 2 rows that depend on the gold label."""
    before = agreement_stats(dataset, split, adjudicated=False)
    after = agreement_stats(dataset, split)
    rows = [(key, before[key], after[key]) for key in BEFORE_AFTER_KEYS]
    labels = list(after["gold_counts"])
    counts = [(label, before["gold_counts"].get(label, 0), after["gold_counts"].get(label, 0)) for label in labels]
    return {
        "rows": rows,
        "gold_counts": counts,
        "adjudicated": after["gold_sources"].get("adjudicated", 0),
        "pairs": after["pairs"],
    }
