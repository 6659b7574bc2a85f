"""The maintained tag tally (`TagTally`): tagged pairs per dataset × split × genre × gold label ×
tag, so that the corpus page's tag figures sum a few hundred rows instead of joining every tag to
its pair (seconds a render at MultiNLI scale).

Signed deltas, appended as corpus.tallies' are (and folded with them: `TALLY`), by
  - the tagging pass (`artifacts.services.run_tagging_job`): +1 per new tag row under the pair's
    gold label as it stands under the pair's row lock, -1 per row a retag replaces;
  - `gold_moved` (corpus.signals): a pair's gold label changed (labels added, recompute's fix after
    an exclusion, adjudication): its rows move from the old gold label to the new, netted from a
    read of its tags, in the writer's transaction;
  - `pairs_moving_split` (corpus.signals): premises move to another split with their pairs.
`corpus.tallies.check_and_rebuild` (`manage.py rebuild_tallies tag`) compares the tally with a count
of the tags and rebuilds it. Deleting single pairs (the admin) shows as drift there; deleting a dataset drops its
rows with it.
"""

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from corpus import signals, tallies
from corpus.models import Dataset, Pair, PairTally
from corpus.scope import EVERYTHING, Scope

from .models import PairTags, TagTally
from .phenomena import PHENOMENON_NAMES

TAG_KEY = ("dataset_id", "split", "genre_id", "gold_label", "tag")
TAGGED = ""  # the tag of the rows that count tagged pairs, whatever their tags

Key = tuple[Any, ...]


def pair_tag_keys(facts: Key, tags: Iterable[str]) -> list[Key]:
    """The TAG_KEYs one tagged pair counts under, from its (dataset, split, genre, gold label):
    the tagged-pairs row and one per tag it has."""
    return [(*facts, tag) for tag in (TAGGED, *tags)]


def tag_rows(tags: QuerySet[PairTags]) -> dict[Key, int]:
    """{TAG_KEY: pairs} counted from PairTags rows (one grouped read): the truth of the tally."""
    counts = {"n": Count("pk"), **{name: Count("pk", filter=Q(**{name: True})) for name in PHENOMENON_NAMES}}
    grouped = (
        tags.order_by()
        .values_list("pair__dataset_id", "pair__premise__split", "pair__premise__genre_id", "pair__gold_label")
        .annotate(**counts)
    )
    rows: dict[Key, int] = {}
    for dataset_id, split, genre_id, gold, *numbers in grouped:
        for tag, n in zip((TAGGED, *PHENOMENON_NAMES), numbers, strict=True):
            if n:
                rows[(dataset_id, split, genre_id, gold, tag)] = n
    return rows


def tags_counted(rows: Iterable[tuple[Key, Iterable[str]]], sign: int = 1) -> int:
    """Add (or with sign -1 take away) pairs' rows: `rows` are ((dataset, split, genre, gold), tag names)."""
    deltas: Counter[Key] = Counter()
    for facts, tags in rows:
        for key in pair_tag_keys(facts, tags):
            deltas[key] += sign
    return tallies.insert_deltas(TagTally, TAG_KEY, deltas)


# --- receivers of corpus.signals ---------------------------------------------------------------


MOVES_PER_READ = 1_000  # pairs whose tags one read fetches (a bounded statement whatever the move)


def gold_moved(sender: Any, moves: Sequence[tuple[int, str, str]], **kwargs: Any) -> None:
    """Move the tagged ones of these pairs (pk, old gold, new gold) from the old gold label's rows
    to the new one's: one read of their tags per MOVES_PER_READ pairs and one INSERT of the deltas,
    netted per key (nothing for an untagged pair). Runs in the transaction that moved the gold
    labels (corpus.services)."""
    for start in range(0, len(moves), MOVES_PER_READ):
        _move_tagged(moves[start : start + MOVES_PER_READ])


def _move_tagged(moves: Sequence[tuple[int, str, str]]) -> int:
    """The deltas are netted here, from the pairs' tag flags: one INSERT ... SELECT that crossed
    each moved pair with every tag name and tested each flag was slow when every pair moved,
    and an UNION ALL of a SELECT per pair before it slower still to plan."""
    if not moves:
        return 0
    found = PairTags.objects.filter(pair_id__in=[pk for pk, _, _ in moves]).values_list(
        "pair_id", "pair__dataset_id", "pair__premise__split", "pair__premise__genre_id", *PHENOMENON_NAMES
    )
    tagged = {
        pk: ((dataset_id, split, genre_id), [name for name, has in zip(PHENOMENON_NAMES, flags, strict=True) if has])
        for pk, dataset_id, split, genre_id, *flags in found
    }
    deltas: Counter[Key] = Counter()
    for pk, old, new in moves:
        if pk not in tagged:
            continue
        where, tags = tagged[pk]
        for key in pair_tag_keys((*where, old), tags):
            deltas[key] -= 1
        for key in pair_tag_keys((*where, new), tags):
            deltas[key] += 1
    return tallies.insert_deltas(TagTally, TAG_KEY, deltas)


def pairs_moving_split(sender: Any, pairs: QuerySet[Pair], split: str, **kwargs: Any) -> None:
    """Premises move to `split` with these pairs (read before the update): their rows move too."""
    rows = tag_rows(PairTags.objects.filter(pair__in=pairs.values("pk")))
    tallies.insert_deltas(TagTally, TAG_KEY, tallies.split_moved(rows, split))


# --- reading -----------------------------------------------------------------------------------


def tally_pairs(dataset: Dataset | None = None) -> int:
    """Pairs of the dataset (None: of all) as the corpus's pair tally counts them."""
    return tallies.scoped(PairTally, Scope.of_dataset(dataset)).aggregate(n=Sum("n"))["n"] or 0


def untagged_pairs(dataset: Dataset | None = None, *, retag: bool = False) -> int:
    """Pairs of the dataset (None: of all) a tagging job has to tag, from the tallies: the pairs
    less the tagged ones (every pair with `retag`). Two sums of a few hundred tally rows; asking
    the tables is an anti-join of every pair against every tag.
    Drift in a tally (a pair deleted in the admin) can miscount a few: the hourly sweep
    (`artifacts.tag_untagged`) asks the tables."""
    pairs = tally_pairs(dataset)
    if retag:
        return pairs
    tagged = tallies.scoped(TagTally, Scope.of_dataset(dataset)).filter(tag=TAGGED).aggregate(n=Sum("n"))["n"] or 0
    return max(0, pairs - tagged)


def tag_counts(scope: Scope = EVERYTHING) -> list[tallies.Key]:
    """[(genre slug, genre name, gold label, tag, pairs)] summed from the tally (TAGGED: tagged pairs)."""
    return tallies.summed(tallies.scoped(TagTally, scope), ("genre__slug", "genre__name", "gold_label", "tag"))


# --- check and rebuild -------------------------------------------------------------------------


def _counted(dataset: Dataset | None) -> tallies.Truth:
    tags = PairTags.objects.all() if dataset is None else PairTags.objects.filter(pair__dataset=dataset)
    return {TagTally: tag_rows(tags)}


# Folded, checked and rebuilt with the corpus's tallies (registered in artifacts.apps).
TALLY = tallies.Maintained(
    "tag",
    ((TagTally, TAG_KEY),),
    _counted,
    "the phenomenon tags",
    receivers=((signals.gold_moved, gold_moved), (signals.pairs_moving_split, pairs_moving_split)),
)
