"""The artifacts page: give-away words, through the figure cache for the page's default listing."""

from artifacts import selectors
from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP

from ..figure_cache import cached, refreshable


def giveaway_words(dataset=None, split=None, genre=None, worker=None, min_count=None, top=None):
    """The listing a researcher asked for. The default one (no genre, no writer, default counts),
    which every arrival on the page shows, reads every hypothesis in scope: it is a cached figure
    (on a large corpus shown stale while a task recomputes it); a narrowed listing is computed."""
    min_count, top = min_count or DEFAULT_MIN_COUNT, top or DEFAULT_TOP
    if genre is None and worker is None and (min_count, top) == (DEFAULT_MIN_COUNT, DEFAULT_TOP):
        return cached("giveaways", dataset, split, lambda: _default_listing(dataset, split))
    return selectors.giveaway_words_for(dataset, split, genre=genre, worker=worker, min_count=min_count, top=top)


@refreshable("giveaways")
def _default_listing(dataset, split):
    return selectors.giveaway_words_for(dataset, split)
