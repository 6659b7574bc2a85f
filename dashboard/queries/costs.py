"""The cost page: money spent, labels bought, labels saved by stopping and the cost of a gold
label, per study and per split and genre, with what the rest of the validation pool will cost at
the current rate. What each figure counts: docs/dashboard.md, *Costs*.

Seven GROUP BY statements, whatever the corpus holds, the counts summed from maintained tallies
(bench/RESULTS-costs.md). The grouped counts (statements 3 to 7) go through the figure cache; the
studies and the bonus ledger (1 and 2) are read on every request, so a payment edit or a new bonus
shows at once, priced over the cached counts.
"""

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Count, DecimalField, F, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from collection.models import HypothesisTally
from corpus.gold import gold_from_votes
from corpus.models import AUTHOR_POSITION, LABELS_PER_PAIR, NO_GOLD, Pair, PairTally
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import genre_names
from corpus.tallies import scoped, summed
from crowd.holds import hold_waits, money_may_go
from crowd.models import Study, TaskKind
from quality.bonuses import payable
from quality.models import BonusTally
from validation import cost_tally, credits
from validation.models import BoughtLabelTally, CreditedPairTally

from ..figure_cache import cached, refreshable

CENT = Decimal("0.01")
VALIDATION_KINDS = (TaskKind.VALIDATION, TaskKind.MPE_JUDGMENT)
# Validation labels a pair takes under the fixed rule (five labels, the author's is free).
FIXED_VALIDATION_LABELS = LABELS_PER_PAIR - AUTHOR_POSITION
# One grouped row (a values() dict; the cache stores them as they are).
Row = Mapping[str, Any]


@dataclass
class Money:
    """An amount in one or more currencies (studies may pay in different ones: never summed across)."""

    amounts: dict[str, Decimal] = field(default_factory=dict)

    @classmethod
    def of(cls, amount: Decimal | int | None, currency: str) -> "Money":
        return cls({currency: Decimal(amount or 0)})

    def __add__(self, other: "Money") -> "Money":
        total = dict(self.amounts)
        for currency, amount in other.amounts.items():
            total[currency] = total.get(currency, Decimal("0")) + amount
        return Money(total)

    def times(self, factor: float | Decimal) -> "Money":
        factor = Decimal(str(factor))
        return Money({c: a * factor for c, a in self.amounts.items()})

    def per(self, count: int) -> "Money | None":
        """The amount per one of `count` things; None when there is nothing to divide by."""
        return Money({c: a / count for c, a in self.amounts.items()}) if count else None

    @property
    def _nonzero(self) -> dict[str, Decimal]:
        return {c: a for c, a in self.amounts.items() if a.quantize(CENT)}

    @property
    def is_zero(self) -> bool:
        return not self._nonzero

    def __str__(self) -> str:
        """'2.00 GBP + 1.50 USD'; nothing: '0.00' in its currency where it has one."""
        shown = self._nonzero
        if not shown:
            return f"0.00 {next(iter(self.amounts))}" if len(self.amounts) == 1 else "0.00"
        return " + ".join(f"{shown[c].quantize(CENT)} {c}" for c in sorted(shown))

    @property
    def value(self) -> str:
        """The figure for data-value: the number when one currency (or none), else the text."""
        shown = self._nonzero
        if len(shown) > 1:
            return str(self)
        return f"{next(iter(shown.values()), Decimal('0')).quantize(CENT)}"


@dataclass
class StudyCost:
    """One study's money. Tasks and bonuses of sessions whose completion code is held and not
    decided are apart (`held_*`): not spent, not owed, until a researcher releases the hold; those
    of a refused hold are in no figure (crowd.holds)."""

    study: Study
    tasks: int
    task_money: Money
    bonuses_paid: Money
    bonuses_owed: Money
    held_tasks: int = 0
    held_task_money: Money = field(default_factory=Money)
    bonuses_held: Money = field(default_factory=Money)
    labels_bought: int = 0
    gold: int = 0
    saved: int = 0

    @property
    def is_validation(self) -> bool:
        return self.study.task_kind in VALIDATION_KINDS

    @property
    def is_writing(self) -> bool:
        return self.study.task_kind == TaskKind.WRITING

    @property
    def label_kind(self) -> str:
        if self.is_validation:
            return "validation labels"
        if self.is_writing:
            return "hypotheses"
        return ""

    @property
    def spent(self) -> Money:
        return self.task_money + self.bonuses_paid

    @property
    def held(self) -> Money:
        """What the study would pay if its held codes were released: their tasks and bonuses."""
        return self.held_task_money + self.bonuses_held

    @property
    def cost_per_label(self) -> Money | None:
        return self.spent.per(self.labels_bought)

    @property
    def cost_per_gold(self) -> Money | None:
        return self.spent.per(self.gold) if self.is_validation else None


@dataclass
class GroupCost:
    """One split and genre."""

    split: str
    genre: str
    genre_name: str = ""  # as pages show it (`corpus.selectors.genre_names`)
    validation_labels: int = 0
    hypotheses: int = 0
    money: Money = field(default_factory=Money)
    gold: int = 0
    saved: int = 0
    finished: int = 0
    finished_labels: int = 0
    remaining_pairs: int = 0
    # label_count -> pairs still needing validation with that many labels
    remaining_by_count: dict[int, int] = field(default_factory=dict)
    projected_labels: float = 0.0
    projected_cost: Money | None = None

    @property
    def cost_per_gold(self) -> Money | None:
        return self.money.per(self.gold)


def sum_of_amounts(which: Q) -> Coalesce:
    zero = Value(Decimal("0"), output_field=DecimalField(max_digits=14, decimal_places=2))
    return Coalesce(Sum("amount", filter=which), zero)


def _studies(scope: Scope) -> dict[int, StudyCost]:
    """Statements 1 and 2: each study with its tasks done (paid or payable apart from held), and the
    ledger's bonuses by study and currency (paid, owed, held)."""
    studies = Study.objects.select_related("dataset").annotate(
        tasks=Coalesce(Sum("sessions__tasks_done", filter=money_may_go("sessions__")), 0),
        held_tasks=Coalesce(Sum("sessions__tasks_done", filter=hold_waits("sessions__")), 0),
    )
    studies = scope.filter(studies)
    # From the ledger's tally: a row per session, cause and currency, not one per bonus.
    tallies = scope.filter(BonusTally.objects.all(), via="study__dataset")
    unpaid = F("earned_amount") - F("paid_amount")
    # A sum over no row is NULL, which Money reads as nothing.
    bonuses = (
        tallies.values("study_id", "currency")
        .annotate(
            paid=Sum("paid_amount"),
            owed=Sum(unpaid, filter=payable()),
            held=Sum(unpaid, filter=hold_waits("study_session__")),
        )
        .order_by()
    )
    paid: defaultdict[int, Money] = defaultdict(Money)
    owed: defaultdict[int, Money] = defaultdict(Money)
    held: defaultdict[int, Money] = defaultdict(Money)
    for row in bonuses:
        paid[row["study_id"]] += Money.of(row["paid"], row["currency"])
        owed[row["study_id"]] += Money.of(row["owed"], row["currency"])
        held[row["study_id"]] += Money.of(row["held"], row["currency"])
    return {
        study.pk: StudyCost(
            study=study,
            tasks=study.tasks,
            task_money=Money.of(study.tasks * study.payment_per_task, study.bonus_currency),
            bonuses_paid=paid[study.pk],
            bonuses_owed=owed[study.pk],
            held_tasks=study.held_tasks,
            held_task_money=Money.of(study.held_tasks * study.payment_per_task, study.bonus_currency),
            bonuses_held=held[study.pk],
        )
        for study in studies.order_by("slug")
    }


@refreshable("costs-rows")
def _grouped_rows(scope: Scope) -> dict[str, list[Row]]:
    """Statements 3 to 7: the grouped counts the page prices (independent of any study's payment)."""
    # Statement 3: validation labels bought (catch trials add none), as validation.cost_tally counts them.
    keys = ("study_session__study_id", "pair__premise__split", "pair__premise__genre__slug", "n")
    bought: list[Row] = [
        dict(zip(keys, row, strict=True))
        for row in summed(scoped(BoughtLabelTally, scope), ("study_id", "split", "genre__slug"))
    ]
    # Statement 4: hypotheses written in a study (collection.hypothesis_tally).
    keys = ("study_id", "split", "genre__slug", "n")
    written: list[Row] = [
        dict(zip(keys, row, strict=True)) for row in summed(scoped(HypothesisTally, scope), keys[:-1])
    ]
    outcomes, pool = _outcome_rows(scope), _pool_rows(scope)
    return {"bought": bought, "written": written, "outcomes": outcomes, "pool": pool}


CREDITED_BY = ("study_id", "split", "genre__slug", *cost_tally.STATE)
OUTCOMES = ("gold", "saved", "finished", "finished_labels")


def _outcome_rows(scope: Scope) -> list[Row]:
    """Statements 5 and 6: pairs validated in a study, credited to the study of their latest label
    (validation.cost_tally), by study, split and genre. The gold follows from the votes by the rule
    (`gold_from_votes`); the few adjudicated pairs count under their decided gold instead."""
    rows: dict[tuple[Any, ...], dict[str, int]] = {}
    for study_id, split, genre, count, e, nu, c, imported, stopped, n in summed(
        scoped(CreditedPairTally, scope), CREDITED_BY
    ):
        row = rows.setdefault((study_id, split, genre), dict.fromkeys(OUTCOMES, 0))
        if gold_from_votes(e, nu, c, imported) != NO_GOLD:
            row["gold"] += n
        if stopped and count < LABELS_PER_PAIR:
            row["saved"] += (LABELS_PER_PAIR - count) * n
        if stopped or count >= LABELS_PER_PAIR:
            row["finished"] += n
            row["finished_labels"] += (count - AUTHOR_POSITION) * n
    for key, moved in _adjudicated_gold(scope).items():
        rows.setdefault(key, dict.fromkeys(OUTCOMES, 0))["gold"] += moved
    # The rows keep the shape the figure cache has always held.
    return [
        {"credited_to": study_id, "premise__split": split, "premise__genre__slug": genre, **figures}
        for (study_id, split, genre), figures in rows.items()
    ]


def _adjudicated_gold(scope: Scope) -> dict[tuple[Any, ...], int]:
    """{(study, split, genre): gold labels a decision gave beyond the rule's (or took, negative)}."""
    credited = (
        credits.countable().filter(credited=True, pair=OuterRef("pk")).order_by().values("study_session__study_id")
    )
    adjudicated = (
        scope.filter(Pair.objects.exclude(adjudicated_label=""))
        .annotate(study_id=Subquery(credited[:1]))
        .filter(study_id__isnull=False)
        .values_list("study_id", "premise__split", "premise__genre__slug", "gold_label", *cost_tally.STATE[1:5])
        .annotate(n=Count("pk"))
        .order_by()
    )
    moved: Counter[tuple[Any, ...]] = Counter()
    for study_id, split, genre, gold, e, nu, c, imported, n in adjudicated:
        has_gold, had_gold = gold != NO_GOLD, gold_from_votes(e, nu, c, imported) != NO_GOLD
        moved[(study_id, split, genre)] += (int(has_gold) - int(had_gold)) * n
    return moved


def _pool_rows(scope: Scope) -> list[Row]:
    """Statement 7: the pool still to validate, by split, genre and labels so far."""
    pool = scoped(PairTally, scope).filter(needs_validation=True, stopped_early=False, label_count__lt=LABELS_PER_PAIR)
    keys = ("premise__split", "premise__genre__slug", "label_count", "n")
    return [dict(zip(keys, row, strict=True)) for row in summed(pool, ("split", "genre__slug", "label_count"))]


def cost_overview(scope: Scope = EVERYTHING) -> dict[str, Any]:
    """Everything the cost page shows, for one dataset or all, every split (six statements; four cached)."""
    scope = scope.whole()
    studies = _studies(scope)
    groups: dict[tuple[str, str], GroupCost] = {}

    # Read once for every row (the page's genre_name filter asked the cache once a row).
    names = genre_names()

    def group(split: str | None, genre: str | None) -> GroupCost:
        key = (split or "", genre or "")
        if key not in groups:
            groups[key] = GroupCost(split=key[0], genre=key[1], genre_name=names.get(key[1], key[1]))
        return groups[key]

    rows = cached("costs-rows", scope, lambda: _grouped_rows(scope))
    bought, written = rows["bought"], rows["written"]
    for row in bought:
        if row["study_session__study_id"] in studies:
            studies[row["study_session__study_id"]].labels_bought += row["n"]
    for row in written:
        if row["study_id"] in studies:
            studies[row["study_id"]].labels_bought += row["n"]
    # Money follows what it bought, at each study's cost per label.
    for row in bought:
        entry = group(row["pair__premise__split"], row["pair__premise__genre__slug"])
        entry.validation_labels += row["n"]
        cost = studies.get(row["study_session__study_id"])
        if cost and cost.cost_per_label:
            entry.money += cost.cost_per_label.times(row["n"])
    for row in written:
        entry = group(row["split"], row["genre__slug"])
        entry.hypotheses += row["n"]
        cost = studies.get(row["study_id"])
        if cost and cost.cost_per_label:
            entry.money += cost.cost_per_label.times(row["n"])

    for row in rows["outcomes"]:
        entry = group(row["premise__split"], row["premise__genre__slug"])
        entry.gold += row["gold"]
        entry.saved += row["saved"]
        entry.finished += row["finished"]
        entry.finished_labels += row["finished_labels"]
        if row["credited_to"] in studies:
            studies[row["credited_to"]].gold += row["gold"]
            studies[row["credited_to"]].saved += row["saved"]

    for row in rows["pool"]:
        entry = group(row["premise__split"], row["premise__genre__slug"])
        entry.remaining_pairs += row["n"]
        entry.remaining_by_count[row["label_count"]] = entry.remaining_by_count.get(row["label_count"], 0) + row["n"]

    study_rows = list(studies.values())
    finished_pairs = sum(g.finished for g in groups.values())
    rate_measured = finished_pairs > 0
    rate = sum(g.finished_labels for g in groups.values()) / finished_pairs if rate_measured else None
    expected = rate if rate is not None else float(FIXED_VALIDATION_LABELS)
    validation_studies = [s for s in study_rows if s.is_validation]
    validation_spent = sum((s.spent for s in validation_studies), Money())
    validation_labels_bought = sum(s.labels_bought for s in validation_studies)
    cost_per_label = validation_spent.per(validation_labels_bought)
    for entry in groups.values():
        # In label-count order, whatever order the pool's rows came in: the same figures print the
        # same, and their float sum is the same to the last digit.
        entry.remaining_by_count = dict(sorted(entry.remaining_by_count.items()))
        entry.projected_labels = sum(
            n * max(expected - (count - AUTHOR_POSITION), 0.0) for count, n in entry.remaining_by_count.items()
        )
        entry.projected_cost = cost_per_label.times(round(entry.projected_labels, 4)) if cost_per_label else None

    spent = sum((s.spent for s in study_rows), Money())
    gold = sum(s.gold for s in study_rows)
    projected_labels = sum(g.projected_labels for g in groups.values())
    allocated = sum((s.spent for s in study_rows if s.labels_bought), Money())
    return {
        "studies": study_rows,
        "groups": [groups[key] for key in sorted(groups)],
        "totals": {
            "tasks": sum(s.tasks for s in study_rows),
            "task_money": sum((s.task_money for s in study_rows), Money()),
            "bonuses_paid": sum((s.bonuses_paid for s in study_rows), Money()),
            "bonuses_owed": sum((s.bonuses_owed for s in study_rows), Money()),
            "held_tasks": sum(s.held_tasks for s in study_rows),
            "held": sum((s.held for s in study_rows), Money()),
            "spent": spent,
            "validation_labels": sum(g.validation_labels for g in groups.values()),
            "hypotheses": sum(g.hypotheses for g in groups.values()),
            "saved": sum(g.saved for g in groups.values()),
            "gold": gold,
            "cost_per_gold": spent.per(gold),
            "unallocated": spent + allocated.times(-1),
        },
        "projection": {
            "finished_pairs": finished_pairs,
            "rate": rate,
            "rate_measured": rate_measured,
            "expected_labels_per_pair": expected,
            "cost_per_label": cost_per_label,
            "remaining_pairs": sum(g.remaining_pairs for g in groups.values()),
            "labels": projected_labels,
            "cost": cost_per_label.times(round(projected_labels, 4)) if cost_per_label else None,
        },
        "has_figures": bool(
            any(s.tasks or s.held_tasks or not s.bonuses_paid.is_zero or s.labels_bought for s in study_rows) or groups
        ),
    }
