"""The gold-label rule (MultiNLI §2.1, SNLI §2.2): the label chosen by at least 3 of the 5 labels, else '-'.

The one place the rule is written: as plain Python over vote counts (`majority`, and through it
`gold_from_votes` for counters moved one label at a time and `gold_label` for plain label lists,
as the Django-free statistics in quality and importers read them), and as a SQL expression, for
set-based recomputes and statistics. Both read the same three vote counts.

An imported pair may carry its file's gold (`Pair.imported_gold`: DNC's label, MPE's gold, the one
label of an SNLI/MultiNLI train pair): where the votes have no 3-of-5 majority, that is the gold
label, until validation gives the pair a majority, which then decides. Without an imported gold
(every pair written here) the rule is exactly the crowd's. A researcher's adjudication
(`corpus.adjudication`) overrides both. `gold_source` says which of the three a gold label is.

Free of the models (Django's expressions need no settings), so that code without a database
(quality.flags, quality.aggregation, importers.mpe) counts with this rule too.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from django.db.models import Case, F, Q, TextChoices, Value, When
from django.db.models.expressions import Combinable
from django.db.models.functions import Coalesce, NullIf
from django.db.models.lookups import GreaterThanOrEqual

from .labels import CONTRADICTION, ENTAILMENT, GOLD_MAJORITY, LABELS, NO_GOLD

# label -> the Pair field counting its votes
VOTE_FIELD = {label: f"{label}_votes" for label in LABELS}
# A pair's counters, in the order the writers and the recompute read and write them.
COUNTERS = ("label_count", *VOTE_FIELD.values(), "gold_label")


class GoldSource(TextChoices):
    """Where a pair's gold label comes from (`gold_source`); none for '-'."""

    CROWD = "crowd", "crowd: 3 of 5 labels"
    IMPORTED = "imported", "imported: the source file's gold"
    ADJUDICATED = "adjudicated", "adjudicated"
    NONE = "none", "no gold label"


def majority(votes: Mapping[str, int], min_votes: int = GOLD_MAJORITY) -> str | None:
    """The label with at least `min_votes` votes (3 of 5 in the papers), else None."""
    for label, count in votes.items():
        if count >= min_votes:
            return label
    return None


def gold_from_votes(entailment: int, neutral: int, contradiction: int, imported_gold: str = "") -> str:
    """The 3-of-5 label; else the imported gold when there is one; else '-'."""
    votes = dict(zip(LABELS, (entailment, neutral, contradiction), strict=True))
    return majority(votes) or imported_gold or NO_GOLD


def gold_label(labels: Sequence[str], min_votes: int = GOLD_MAJORITY) -> str:
    """The label given at least `min_votes` times among plain `labels`, else NO_GOLD.

    `min_votes` is an absolute count, not a share: 3 of 5 in the papers, and the same 3 of the
    remaining 4 when one label is left out. With min_votes > len(labels) / 2 at most one label
    can reach it, so the answer never depends on the order of `labels`.
    """
    if min_votes <= len(labels) / 2:
        raise ValueError(
            f"min_votes={min_votes} is no majority of {len(labels)} labels: two labels could both reach it"
        )
    return majority(Counter(labels), min_votes) or NO_GOLD


def gold_source(gold_label: str, adjudicated_label: str, entailment: int, neutral: int, contradiction: int) -> str:
    """Which rule gave `gold_label`: adjudicated, crowd (a 3-of-5 majority), imported or none."""
    if adjudicated_label:
        return GoldSource.ADJUDICATED.value
    if gold_label == NO_GOLD:
        return GoldSource.NONE.value
    if majority(dict(zip(LABELS, (entailment, neutral, contradiction), strict=True))) is not None:
        return GoldSource.CROWD.value
    return GoldSource.IMPORTED.value


def counters_from_labels(labels: Sequence[str]) -> dict[str, int | str]:
    """A pair's counters (label_count, *_votes, gold_label) for its labels, as Pair field values."""
    votes = Counter(labels)
    counters: dict[str, int | str] = {field: votes[label] for label, field in VOTE_FIELD.items()}
    counters["label_count"] = len(labels)
    entailment, neutral, contradiction = (votes[label] for label in VOTE_FIELD)
    counters["gold_label"] = gold_from_votes(entailment, neutral, contradiction)
    return counters


def _has_majority(votes: Combinable) -> Q:
    return Q(GreaterThanOrEqual(votes, GOLD_MAJORITY))


def gold_expression(
    entailment: Combinable = F("entailment_votes"),
    neutral: Combinable = F("neutral_votes"),
    contradiction: Combinable = F("contradiction_votes"),
    imported_gold: Combinable | None = None,
) -> Case:
    """The rule of `gold_from_votes` as a SQL CASE, for annotate() and update(); `imported_gold`
    (an expression of the pair's imported_gold column) is the fallback where there is no majority."""
    fallback: Combinable = Value(NO_GOLD)
    if imported_gold is not None:
        fallback = Coalesce(NullIf(imported_gold, Value("")), Value(NO_GOLD))
    return Case(
        *(
            When(_has_majority(votes), then=Value(label))
            for label, votes in zip(LABELS, (entailment, neutral, contradiction), strict=True)
        ),
        default=fallback,
    )


def majority_expression() -> Q:
    """A pair whose stored votes have a 3-of-5 majority, as a filter."""
    has_one = Q()
    for name in VOTE_FIELD.values():
        has_one |= _has_majority(F(name))
    return has_one


def gold_source_expression() -> Case:
    """`gold_source` of a pair as a SQL CASE over its stored columns, for statistics and pages."""
    return Case(
        When(~Q(adjudicated_label=""), then=Value(GoldSource.ADJUDICATED.value)),
        When(gold_label=NO_GOLD, then=Value(GoldSource.NONE.value)),
        When(majority_expression(), then=Value(GoldSource.CROWD.value)),
        default=Value(GoldSource.IMPORTED.value),
    )


# --- where a researcher decides instead (MPE §4.2), and an item set's gold figures -------------

TWO_TWO_ONE = "2-2-1 split"
ENTAILMENT_CONTRADICTION_3_2 = "3-2 split between entailment and contradiction"


def adjudication_reason(votes: Mapping[str, int]) -> str | None:
    """Why a researcher must decide an item's label, or None when the majority stands: no 3-of-5
    majority (2-2-1), or a 3-2 split between entailment and contradiction (the crowd torn between
    opposite answers). `adjudication_case` is the same as SQL."""
    if majority(votes) is None:
        return TWO_TWO_ONE
    if {votes.get(ENTAILMENT, 0), votes.get(CONTRADICTION, 0)} == {3, 2}:
        return ENTAILMENT_CONTRADICTION_3_2
    return None


def adjudication_case() -> tuple[Q, Q]:
    """`adjudication_reason` over a pair's stored votes: (Q of 2-2-1, Q of the 3-2 torn split)."""
    two_two_one = ~majority_expression()
    torn = Q(entailment_votes=3, contradiction_votes=2) | Q(entailment_votes=2, contradiction_votes=3)
    return two_two_one, torn


@dataclass(frozen=True)
class ItemSetStatistics:
    """MPE's figures of a set of judged items, from a file (importers.mpe) or the database (corpus.selectors)."""

    items: int
    label_counts: dict[str, int]  # gold label -> items (a label with none counts 0)
    unanimous: int  # all five judgments agree
    with_majority: int  # at least three of five agree
    gold_equals_majority: int  # ... and the gold label is that majority
    adjudicated: int = 0  # database: gold decided by a researcher or taken from the file against the majority
    pending: int = 0  # database: in the adjudication queue, not yet decided by a researcher
    splits: dict[tuple[int, ...], int] = field(default_factory=dict)  # file: vote shape, e.g. (3, 2, 0) -> items
    to_adjudicate: dict[str, int] = field(default_factory=dict)  # file: adjudication reason -> items

    @property
    def unanimous_share(self) -> float:
        return self.unanimous / self.items if self.items else 0.0

    @property
    def gold_equals_majority_share(self) -> float:
        """Over the items that have a majority (as ../shared/data/README.md states MPE's figure)."""
        return self.gold_equals_majority / self.with_majority if self.with_majority else 0.0

    @property
    def label_distribution(self) -> dict[str, float]:
        return {label: count / self.items for label, count in self.label_counts.items()} if self.items else {}
