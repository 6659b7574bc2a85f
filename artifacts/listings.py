"""The give-away listing a dataset's artifacts page opens on, kept (artifacts.models.GiveawayListing).

Summed from the word tally it reads every (split, genre, label, word) row of the dataset: at
MultiNLI scale more than a page can wait for, and the same answer until the tally moves. So the
listing is kept with the highest word tally row id it saw; a reader takes it while no row of the
dataset is newer, and recomputes it otherwise. A fold rewrites the folded keys' rows under new
ids, so after each fold (corpus.signals.tallies_folded) the listings of the datasets it touched
are recomputed there, off the request path: a page after a quiet spell, or after an import and
the fold that follows it, reads one row.
"""

from typing import Any

from django.db import connection
from django.db.models import Max
from django.utils import timezone

from corpus.models import Dataset, WordTally
from corpus.scope import Scope

from .models import GiveawayListing
from .selectors import giveaway_words_for


def _changed_since(dataset: Dataset, mark: int) -> bool:
    # The first row after (dataset, mark) in `word_tally_newer` (dataset, id): one index entry, the
    # dataset's own when it has a newer row. A row comparison only that index can answer, in its
    # order, so the plan cannot change with the statistics. Asked as "a row of the dataset above the
    # mark" (LIMIT 1), the planner walked the primary key or the whole table whenever the rows above
    # the mark were many (another dataset's) and it guessed one was the dataset's: every newer row
    # read to find none, a scan of the tally table on the artifacts page.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT dataset_id FROM {WordTally._meta.db_table} WHERE (dataset_id, id) > (%s, %s)"
            " ORDER BY dataset_id, id LIMIT 1",
            [dataset.pk, mark],
        )
        row = cursor.fetchone()
    return row is not None and row[0] == dataset.pk


def default_listing(dataset: Dataset) -> dict[str, Any]:
    """giveaway_words_for(dataset) with its defaults: the kept one while current, else computed and kept."""
    kept = GiveawayListing.objects.filter(dataset=dataset).first()
    # Asked even without a kept listing: the page's statements are the same whichever it finds.
    changed = _changed_since(dataset, kept.tally_mark if kept is not None else 0)
    if kept is not None and not changed:
        listing: dict[str, Any] = kept.listing
        return listing
    return store(dataset)


def store(dataset: Dataset) -> dict[str, Any]:
    # The mark first: a delta written while the sum runs is newer than it, so the next reader
    # recomputes rather than keeping a listing that may lack it.
    mark = WordTally.objects.aggregate(highest=Max("pk"))["highest"] or 0
    listing = giveaway_words_for(Scope.of_dataset(dataset))
    # One upsert (INSERT ... ON CONFLICT UPDATE): two readers storing at once both succeed.
    GiveawayListing.objects.bulk_create(
        [GiveawayListing(dataset=dataset, listing=listing, tally_mark=mark, computed_at=timezone.now())],
        update_conflicts=True,
        unique_fields=["dataset"],
        update_fields=["listing", "tally_mark", "computed_at"],
    )
    return listing


def tallies_folded(**_: Any) -> None:
    """After a fold: recompute the listing of every dataset whose word tally has rows newer than it."""
    marks = dict(GiveawayListing.objects.values_list("dataset_id", "tally_mark"))
    for dataset in Dataset.objects.order_by("pk"):
        if _changed_since(dataset, marks.get(dataset.pk, 0)):
            store(dataset)
