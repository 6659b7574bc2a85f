"""What follows when a pair's counted labels or gold label move, in the writer's transaction.

Every writer of counters (`corpus.services`, `corpus.recompute`, `corpus.adjudication`) reports
its moves here: the word tally and the receivers of `signals.gold_moved` follow them, and a
change the maintained figures cannot follow is said to the receivers of `signals.gold_recounted`.
"""

from collections.abc import Sequence

from . import signals, tallies
from .models import Pair


def move(pair: Pair, old_gold: str, old_count: int) -> tallies.LabelMove:
    """The move of a locked pair (loaded with its premise) from (old_gold, old_count) to its fields now."""
    facts = (pair.dataset_id, pair.premise.split, pair.premise.genre_id, pair.author_label, pair.hypothesis)
    return tallies.LabelMove(pair.pk, *facts, old_gold, old_count, pair.gold_label, pair.label_count)


def labels_moved(moves: Sequence[tallies.LabelMove]) -> None:
    """Everything kept per gold label follows these pairs, in the writer's transaction: the word
    tally (one INSERT when a counted label moved) and, for pairs whose gold changed, the
    receivers of `signals.gold_moved` (the artifacts app's tag tally), whose answers nobody reads."""
    tallies.words_moved(moves)
    golds = [(move.pair_id, move.old_gold, move.new_gold) for move in moves if move.old_gold != move.new_gold]
    if golds:
        signals.gold_moved.send(sender=Pair, moves=golds)


def gold_recounted() -> None:
    """Say that gold labels or counters moved in a way the maintained figures cannot follow (an
    exclusion, a repairing recompute, an adjudication): the receivers of `signals.gold_recounted`
    (the dashboard's figure cache) take their figures from before as out of date."""
    signals.gold_recounted.send(sender=Pair)
