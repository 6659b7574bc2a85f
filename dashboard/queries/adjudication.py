"""The adjudication page's figures: each queue's length and the statistics before and after the
decisions, kept a few seconds per scope (the figure cache), out of date at once when a decision,
an exclusion or a recompute moves gold labels, or when pairs are sent to the "sent" queue or taken
back out of it."""

from typing import Any

from corpus.scope import Scope
from validation import adjudication

from ..figure_cache import cached

QUEUE_FIGURES = "adjudication-queues"


def queue_figures(
    within: Scope,
    teams_within: Scope,
    *,
    flagged: list[int],
    flagged_pairs: int,
    latest: list[int],
    holds_every_dataset: bool,
) -> tuple[dict[str, int], dict[str, Any]]:
    """(pairs waiting in each queue, the before-and-after statistics) of `within`. Kept apart per
    team group too (`teams_within`): the flagged queue counts the pairs of the teams' flagged workers."""

    def compute() -> tuple[dict[str, int], dict[str, Any]]:
        counts = adjudication.queue_counts(
            within, flagged=flagged, flagged_pairs=flagged_pairs, latest=latest, holds_every_dataset=holds_every_dataset
        )
        return counts, adjudication.before_and_after(within)

    return cached(QUEUE_FIGURES, within, compute, part=teams_within.key)
