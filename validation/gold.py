"""The gold-label rule (MultiNLI §2.1, SNLI §2.2): the label chosen by at least 3 of the 5 labels, else '-'.

Written once as a Python function, for counters moved one label at a time, and once as a SQL
expression, for set-based recomputes and statistics. Both read the same three vote counts.
"""
from django.db.models import Case, F, Q, Value, When
from django.db.models.lookups import GreaterThanOrEqual

from collection.models import NO_GOLD, Label

GOLD_MAJORITY = 3


def gold_from_votes(entailment, neutral, contradiction):
    for label, votes in ((Label.ENTAILMENT, entailment), (Label.NEUTRAL, neutral), (Label.CONTRADICTION, contradiction)):
        if votes >= GOLD_MAJORITY:
            return label.value
    return NO_GOLD


def _has_majority(votes):
    return Q(GreaterThanOrEqual(votes, GOLD_MAJORITY))


def gold_expression(entailment=F("entailment_votes"), neutral=F("neutral_votes"), contradiction=F("contradiction_votes")):
    """The rule of `gold_from_votes` as a SQL CASE, for annotate() and update()."""
    return Case(
        When(_has_majority(entailment), then=Value(Label.ENTAILMENT.value)),
        When(_has_majority(neutral), then=Value(Label.NEUTRAL.value)),
        When(_has_majority(contradiction), then=Value(Label.CONTRADICTION.value)),
        default=Value(NO_GOLD),
    )
