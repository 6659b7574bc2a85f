"""The artifacts page: give-away words, through the figure cache for the page's default listing."""

from typing import Any

from artifacts import listings, selectors
from authorship.selectors import typing_flags_by_worker
from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP
from corpus.models import Dataset, Genre, Worker
from corpus.selectors import TeamDatasets

from ..figure_cache import cached, refreshable


def giveaway_words(
    dataset: Dataset | TeamDatasets | None = None,
    split: str | None = None,
    *,
    genre: Genre | None = None,
    worker: Worker | None = None,
    min_count: int | None = None,
    top: int | None = None,
) -> dict[str, Any]:
    """The listing a researcher asked for, summed from the maintained word tally (a writer's
    listing tokenises that writer's hypotheses). The default one (no genre, no writer, default
    counts), which every arrival on the page shows, is kept once: a dataset's (all splits) in the
    database while its word tally stands still (artifacts.listings), any other scope's in the
    figure cache."""
    counts, shown = min_count or DEFAULT_MIN_COUNT, top or DEFAULT_TOP
    if genre is None and worker is None and (counts, shown) == (DEFAULT_MIN_COUNT, DEFAULT_TOP):
        if isinstance(dataset, Dataset) and split is None:  # a dataset's page as it opens
            return listings.default_listing(dataset)
        return cached("giveaways", dataset, split, lambda: _default_listing(dataset, split))
    return selectors.giveaway_words_for(dataset, split, genre=genre, worker=worker, min_count=counts, top=shown)


@refreshable("giveaways")
def _default_listing(dataset: Dataset | TeamDatasets | None, split: str | None) -> dict[str, Any]:
    return selectors.giveaway_words_for(dataset, split)


def monitor_overview(dataset: Dataset | TeamDatasets | None = None) -> dict[str, Any]:
    """The artifact monitor's latest figures (artifacts.selectors.monitor_overview), each flagged
    writer given the share of their hypotheses whose typing record is flagged, so one
    table answers "who writes like a machine": one grouped read for all of them."""
    monitor = selectors.monitor_overview(dataset)
    typing = typing_flags_by_worker(writer["writer"] for writer in monitor["flagged"])
    for writer in monitor["flagged"]:
        record = typing.get(writer["writer"])
        writer["typing"] = record
        writer["typing_flagged_share"] = record["flagged"] / record["written"] if record and record["written"] else None
    return monitor
