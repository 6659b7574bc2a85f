"""A split's stopping rule and the pairs it stops (`corpus.stopping` holds the rules themselves).

The label writers stop a pair in the same UPDATE that moves its counters (`stops_when_decided`);
everything else that stops or reopens pairs is here.
"""

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Q, QuerySet

from . import stopping
from .gold import VOTE_FIELD
from .models import GOLD_MAJORITY, LABELS_PER_PAIR, Dataset, Pair, StoppingPolicy, StoppingRule
from .validation_flags import set_validation_flags


def stopping_rule_for(dataset: Dataset, split: str) -> str:
    """The rule a researcher chose for this split of the dataset (`StoppingPolicy`), else fixed."""
    rule = StoppingPolicy.objects.filter(dataset=dataset, split=split).values_list("rule", flat=True).first()
    return str(rule) if rule else StoppingRule.FIXED


def decided_q() -> Q:
    """`corpus.stopping.gold_is_decided` as a filter on a pair's counters: a label has three votes,
    or none can reach three with the labels left (v + (5 - n) < 3)."""
    reachable = LABELS_PER_PAIR - GOLD_MAJORITY
    majority, hopeless = Q(), Q()
    for name in VOTE_FIELD.values():
        majority |= Q(**{f"{name}__gte": GOLD_MAJORITY})
        hopeless &= Q(**{f"{name}__lt": F("label_count") - reachable})
    return majority | hopeless


def stops_when_decided(row: Pair) -> bool:
    """Whether a pair whose counters just moved stops now under the decided rule (in memory)."""
    return (
        row.stopping_rule == StoppingRule.DECIDED
        and row.needs_validation
        and not row.stopped_early
        and stopping.decided_stop(row.entailment_votes, row.neutral_votes, row.contradiction_votes, row.label_count)
    )


class PolicyRefused(ValidationError):
    """A stopping policy that cannot be set; the message names the field."""


def set_stopping_policy(
    dataset: Dataset, split: str, rule: str, *, threshold: float | None = None, max_labels: int | None = None
) -> tuple[StoppingPolicy, int, int]:
    """Choose the split's stopping rule and apply it (`apply_stopping_policy`), in one transaction.
    Returns (policy, pairs whose rule changed, stopped)."""
    policy = StoppingPolicy.objects.filter(dataset=dataset, split=split).first() or StoppingPolicy(
        dataset=dataset, split=split
    )
    policy.rule = rule
    if threshold is not None:
        policy.threshold = threshold
    if max_labels is not None:
        policy.max_labels = max_labels
    try:
        policy.full_clean(validate_unique=False)
    except ValidationError as invalid:
        raise PolicyRefused(invalid.message_dict) from invalid
    with transaction.atomic():
        policy.save()
        changed, stopped = apply_stopping_policy(dataset, split)
    return policy, changed, stopped


@transaction.atomic
def apply_stopping_policy(dataset: Dataset, split: str) -> tuple[int, int]:
    """Record the split's rule on its pairs still taking labels (fewer than five, not stopped),
    and stop those the decided rule says are settled already. Pairs that stopped keep their rule,
    except under the fixed rule (five labels a pair), which reopens them: they take labels again.
    Returns (pairs whose rule changed, pairs stopped now)."""
    rule = stopping_rule_for(dataset, split)
    if rule == StoppingRule.FIXED:
        reopening = Pair.objects.filter(
            dataset=dataset, premise__split=split, stopped_early=True, label_count__lt=LABELS_PER_PAIR
        )
        set_validation_flags(reopening, needs_validation=True, stopped_early=False)
    open_pairs = Pair.objects.filter(
        dataset=dataset, premise__split=split, stopped_early=False, label_count__lt=LABELS_PER_PAIR
    )
    changed = open_pairs.exclude(stopping_rule=rule).update(stopping_rule=rule)
    stopped = 0
    if rule == StoppingRule.DECIDED:
        stopped = stop_pairs(open_pairs.filter(needs_validation=True).filter(decided_q()))
    return changed, stopped


@transaction.atomic
def record_stopping_rules(pairs: QuerySet[Pair]) -> int:
    """Copy each pair's split rule (`StoppingPolicy`, else fixed) onto these pairs still taking
    labels, and stop those the decided rule says are settled; returns pairs stopped."""
    pairs = Pair.objects.filter(pk__in=pairs.values("pk"), stopped_early=False, label_count__lt=LABELS_PER_PAIR)
    chosen = Q()
    for dataset_id, split, rule in StoppingPolicy.objects.values_list("dataset_id", "split", "rule"):
        where = Q(dataset_id=dataset_id, premise__split=split)
        pairs.filter(where).exclude(stopping_rule=rule).update(stopping_rule=rule)
        chosen |= where
    unchosen = pairs.exclude(chosen) if chosen else pairs
    unchosen.exclude(stopping_rule=StoppingRule.FIXED).update(stopping_rule=StoppingRule.FIXED)
    return stop_pairs(pairs.filter(stopping_rule=StoppingRule.DECIDED, needs_validation=True).filter(decided_q()))


def stop_pairs(pairs: QuerySet[Pair]) -> int:
    """Stop these pairs taking labels before five: they leave the claim indexes. Live claims others
    hold on them stay good (a pair never exceeds five labels). Returns how many stopped."""
    open_pairs = Pair.objects.filter(pk__in=pairs.values("pk")).filter(
        needs_validation=True, stopped_early=False, label_count__lt=LABELS_PER_PAIR
    )
    return set_validation_flags(open_pairs, needs_validation=False, stopped_early=True)


def requeue_undecided_stopped(among: Sequence[int] | None = None) -> list[int]:
    """Pairs stopped under the decided rule whose gold is no longer decided take labels again: of
    `among` (pks), or of every pair. Returns their pks."""
    pairs = Pair.objects.all() if among is None else Pair.objects.filter(pk__in=list(among))
    with transaction.atomic():
        pks = list(
            pairs.select_for_update(no_key=True)
            .filter(stopped_early=True, stopping_rule=StoppingRule.DECIDED, label_count__lt=LABELS_PER_PAIR)
            .exclude(decided_q())
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        set_validation_flags(Pair.objects.filter(pk__in=pks), needs_validation=True, stopped_early=False)
    return pks
