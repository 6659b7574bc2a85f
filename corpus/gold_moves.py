"""What follows when a pair's counted labels or gold label move, in the writer's transaction.

Every writer of counters (`corpus.services`, `corpus.recompute`, `corpus.adjudication`) reports
its moves here: the word tally and the receivers of `signals.gold_moved` follow them, and a
change the maintained figures cannot follow marks the dashboard's cached figures out of date.
"""

import time
from collections.abc import Sequence

from django.core.cache import cache
from django.db import transaction

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


# When labels last changed in a way the maintained figures cannot follow (an exclusion, a repairing
# recompute, an adjudication): figures cached before then are out of date (dashboard/figure_cache.py reads it).
FIGURES_CHANGED_KEY = "corpus:figures-changed-at"


def mark_figures_changed() -> None:
    """Record that cached figures are out of date from now, and again once the change has committed
    (a figure computed in between, from the data before the commit, is then out of date too)."""
    cache.set(FIGURES_CHANGED_KEY, time.time(), None)
    transaction.on_commit(lambda: cache.set(FIGURES_CHANGED_KEY, time.time(), None))


def figures_changed_at() -> float:
    return float(cache.get(FIGURES_CHANGED_KEY) or 0.0)
