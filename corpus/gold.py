"""The gold-label rule (MultiNLI §2.1, SNLI §2.2): the label chosen by at least 3 of the 5 labels, else '-'.

Written once as a Python function, for counters moved one label at a time, and once as a SQL
expression, for set-based recomputes and statistics. Both read the same three vote counts.
"""

from collections import Counter
from collections.abc import Sequence

from django.db.models import Case, F, Q, Value, When
from django.db.models.expressions import Combinable
from django.db.models.lookups import GreaterThanOrEqual

from .models import GOLD_MAJORITY, NO_GOLD, THREE_WAY, Label

# label -> the Pair field counting its votes
VOTE_FIELD = {label.value: f"{label.value}_votes" for label in THREE_WAY}


def gold_from_votes(entailment: int, neutral: int, contradiction: int) -> str:
    for label, votes in (
        (Label.ENTAILMENT, entailment),
        (Label.NEUTRAL, neutral),
        (Label.CONTRADICTION, contradiction),
    ):
        if votes >= GOLD_MAJORITY:
            return label.value
    return NO_GOLD


def counters_from_labels(labels: Sequence[str]) -> dict[str, int | str]:
    """A pair's counters (label_count, *_votes, gold_label) for its labels, as Pair field values."""
    votes = Counter(labels)
    counters: dict[str, int | str] = {field: votes[label] for label, field in VOTE_FIELD.items()}
    counters["label_count"] = len(labels)
    counters["gold_label"] = gold_from_votes(*(votes[label] for label in VOTE_FIELD))
    return counters


def _has_majority(votes: Combinable) -> Q:
    return Q(GreaterThanOrEqual(votes, GOLD_MAJORITY))


def gold_expression(
    entailment: Combinable = F("entailment_votes"),
    neutral: Combinable = F("neutral_votes"),
    contradiction: Combinable = F("contradiction_votes"),
) -> Case:
    """The rule of `gold_from_votes` as a SQL CASE, for annotate() and update()."""
    return Case(
        When(_has_majority(entailment), then=Value(Label.ENTAILMENT.value)),
        When(_has_majority(neutral), then=Value(Label.NEUTRAL.value)),
        When(_has_majority(contradiction), then=Value(Label.CONTRADICTION.value)),
        default=Value(NO_GOLD),
    )
