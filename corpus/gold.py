"""The gold-label rule (MultiNLI §2.1, SNLI §2.2): the label chosen by at least 3 of the 5 labels, else '-'.

Written once as a Python function, for counters moved one label at a time, and once as a SQL
expression, for set-based recomputes and statistics. Both read the same three vote counts.

An imported pair may carry its file's gold (`Pair.imported_gold`: DNC's label, MPE's gold, the one
label of an SNLI/MultiNLI train pair): where the votes have no 3-of-5 majority, that is the gold
label, until validation gives the pair a majority, which then decides. Without an imported gold
(every pair written here) the rule is exactly the crowd's. A researcher's adjudication (corpus.
counters) overrides both. `gold_source` says which of the three a gold label is.
"""

from collections import Counter
from collections.abc import Sequence

from django.db.models import Case, F, Q, Value, When
from django.db.models.expressions import Combinable
from django.db.models.functions import Coalesce, NullIf
from django.db.models.lookups import GreaterThanOrEqual

from .models import GOLD_MAJORITY, NO_GOLD, THREE_WAY, GoldSource, Label, gold_source  # noqa: F401 (gold_source: here too)

# label -> the Pair field counting its votes
VOTE_FIELD = {label.value: f"{label.value}_votes" for label in THREE_WAY}


def gold_from_votes(entailment: int, neutral: int, contradiction: int, imported_gold: str = "") -> str:
    """The 3-of-5 label; else the imported gold when there is one; else '-'."""
    for label, votes in (
        (Label.ENTAILMENT, entailment),
        (Label.NEUTRAL, neutral),
        (Label.CONTRADICTION, contradiction),
    ):
        if votes >= GOLD_MAJORITY:
            return label.value
    return imported_gold or NO_GOLD


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
        When(_has_majority(entailment), then=Value(Label.ENTAILMENT.value)),
        When(_has_majority(neutral), then=Value(Label.NEUTRAL.value)),
        When(_has_majority(contradiction), then=Value(Label.CONTRADICTION.value)),
        default=fallback,
    )


def gold_source_expression() -> Case:
    """`gold_source` of a pair as a SQL CASE over its stored columns, for statistics and pages."""
    majority = Q()
    for label in THREE_WAY:
        majority |= Q(**{f"{label.value}_votes__gte": GOLD_MAJORITY})
    return Case(
        When(~Q(adjudicated_label=""), then=Value(GoldSource.ADJUDICATED.value)),
        When(gold_label=NO_GOLD, then=Value(GoldSource.NONE.value)),
        When(majority, then=Value(GoldSource.CROWD.value)),
        default=Value(GoldSource.IMPORTED.value),
    )
