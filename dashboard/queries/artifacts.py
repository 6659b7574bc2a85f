"""The artifacts page: give-away words, through the figure cache for the page's default listing."""

from typing import Any

from artifacts import listings, selectors
from authorship.selectors import typing_flags_by_worker
from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP
from corpus.models import Genre, Worker
from corpus.scope import EVERYTHING, Scope

from ..figure_cache import cached, refreshable


def giveaway_words(
    scope: Scope = EVERYTHING,
    *,
    genre: Genre | None = None,
    worker: Worker | None = None,
    min_count: int | None = None,
    top: int | None = None,
) -> dict[str, Any]:
    """The listing a researcher asked for, summed from the maintained word tally. The default one,
    which every arrival on the page shows, is kept: a dataset's in the database while its word
    tally stands still (artifacts.listings), any other scope's in the figure cache."""
    counts, shown = min_count or DEFAULT_MIN_COUNT, top or DEFAULT_TOP
    if genre is None and worker is None and (counts, shown) == (DEFAULT_MIN_COUNT, DEFAULT_TOP):
        if scope.one is not None and scope.split is None:  # a dataset's page as it opens
            return listings.default_listing(scope.one)
        return cached("giveaways", scope, lambda: _default_listing(scope))
    return selectors.giveaway_words_for(scope, genre=genre, worker=worker, min_count=counts, top=shown)


@refreshable("giveaways")
def _default_listing(scope: Scope) -> dict[str, Any]:
    return selectors.giveaway_words_for(scope)


def monitor_overview(scope: Scope = EVERYTHING) -> dict[str, Any]:
    """The artifact monitor's latest figures, each flagged writer with the share of their typing
    records flagged ("who writes like a machine"); the figure cache's."""
    return cached("artifact-monitor", scope, lambda: _monitor_overview(scope))


def _monitor_overview(scope: Scope) -> dict[str, Any]:
    monitor = selectors.monitor_overview(scope)
    typing = typing_flags_by_worker(writer["writer"] for writer in monitor["flagged"])
    for writer in monitor["flagged"]:
        record = typing.get(writer["writer"])
        writer["typing"] = record
        writer["typing_flagged_share"] = record["flagged"] / record["written"] if record and record["written"] else None
    return monitor
