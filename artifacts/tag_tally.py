"""The maintained tag tally (`TagTally`): tagged pairs per dataset × split × genre × gold label ×
tag, so that the corpus page's tag figures sum a few hundred rows instead of joining every tag to
its pair (433k tags: ~3 s a render, issue 28).

Signed deltas, appended as corpus.tallies' are (and folded with them: `FOLDED`), by
  - the tagging pass (`artifacts.services.run_tagging_job`): +1 per new tag row under the pair's
    gold label as it stands under the pair's row lock, -1 per row a retag replaces;
  - `gold_moved` (corpus.signals): a pair's gold label changed (labels added, recompute's fix after
    an exclusion, adjudication): its rows move from the old gold label to the new, in one
    INSERT ... SELECT from its tags, in the writer's transaction;
  - `pairs_moving_split` (corpus.signals): premises move to another split with their pairs.
`check_and_rebuild` (`manage.py rebuild_tag_tally`) compares the tally with a count of the tags and
rebuilds it. Deleting single pairs (the admin) shows as drift there; deleting a dataset drops its
rows with it.
"""

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet, Sum

from corpus import tallies
from corpus.models import Dataset, Pair

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


MOVES_PER_STATEMENT = 1_000  # 6 parameters a move: within SQLite's 32,766 variables


def gold_moved(sender: Any, moves: Sequence[tuple[int, str, str]], **kwargs: Any) -> None:
    """Move the tagged ones of these pairs (pk, old gold, new gold) from the old gold label's rows
    to the new one's: one INSERT ... SELECT from their tags per MOVES_PER_STATEMENT pairs, netted
    per key (nothing for an untagged pair). Runs in the transaction that moved the gold labels
    (corpus.counters)."""
    inserted = 0
    for start in range(0, len(moves), MOVES_PER_STATEMENT):
        inserted += _move_tagged(moves[start : start + MOVES_PER_STATEMENT])
    if inserted:
        transaction.on_commit(tallies._maybe_fold)


def _move_tagged(moves: Sequence[tuple[int, str, str]]) -> int:
    if not moves:
        return 0
    quote = connection.ops.quote_name
    tag_table, pair_table = quote(PairTags._meta.db_table), quote(Pair._meta.db_table)
    premise_table = quote(Pair._meta.get_field("premise").related_model._meta.db_table)
    columns = ", ".join(quote(tallies._column(TagTally, name)) for name in (*TAG_KEY, "n"))
    # m: each pair twice, -1 under its old gold and +1 under its new, as one VALUES list (a UNION
    # ALL of 2,000 SELECTs took PostgreSQL ~5 s to plan: issue 28's fix of every pair); the first
    # row's casts type the columns. t: the tag names.
    moved = ", ".join(
        ["(CAST(%s AS bigint), CAST(%s AS varchar(20)), CAST(%s AS integer))"] + ["(%s, %s, %s)"] * (2 * len(moves) - 1)
    )
    names = " UNION ALL ".join(["SELECT CAST(%s AS varchar(40)) AS tag"] * (1 + len(PHENOMENON_NAMES)))
    has_tag = " OR ".join(["t.tag = %s"] + [f"(t.tag = %s AND tg.{quote(name)})" for name in PHENOMENON_NAMES])
    sql = f"""
        INSERT INTO {quote(TagTally._meta.db_table)} ({columns})
        SELECT p.dataset_id, pr.split, pr.genre_id, m.gold, t.tag, SUM(m.sign)
        FROM (SELECT column1 AS pair_id, column2 AS gold, column3 AS sign FROM (VALUES {moved}) AS v) AS m
        JOIN {tag_table} AS tg ON tg.pair_id = m.pair_id
        JOIN {pair_table} AS p ON p.id = m.pair_id
        JOIN {premise_table} AS pr ON pr.id = p.premise_id
        CROSS JOIN ({names}) AS t
        WHERE {has_tag}
        GROUP BY p.dataset_id, pr.split, pr.genre_id, m.gold, t.tag
        HAVING SUM(m.sign) <> 0
    """
    params: list[Any] = []
    for pk, old, new in moves:
        params += [pk, old, -1, pk, new, 1]
    params += [TAGGED, *PHENOMENON_NAMES, TAGGED, *PHENOMENON_NAMES]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        inserted: int = cursor.rowcount
        return max(inserted, 0)


def pairs_moving_split(sender: Any, pairs: QuerySet[Pair], split: str, **kwargs: Any) -> None:
    """Premises move to `split` with these pairs (read before the update): their rows move too."""
    rows = tag_rows(PairTags.objects.filter(pair__in=pairs.values("pk")))
    deltas: Counter[Key] = Counter()
    for key, n in rows.items():
        deltas[key] -= n
        deltas[(key[0], split, *key[2:])] += n
    tallies.insert_deltas(TagTally, TAG_KEY, deltas)


# --- reading -----------------------------------------------------------------------------------


def tag_counts(dataset: Dataset | None = None, split: str | None = None) -> list[tuple[str, str, str, str, int]]:
    """[(genre slug, genre name, gold label, tag, pairs)] summed from the tally (TAGGED: tagged pairs)."""
    rows = TagTally.objects.all()
    if dataset is not None:
        rows = rows.filter(dataset=dataset)
    if split:
        rows = rows.filter(split=split)
    grouped = rows.order_by().values_list("genre__slug", "genre__name", "gold_label", "tag").annotate(total=Sum("n"))
    return [tuple(row) for row in grouped if row[-1]]


# --- check and rebuild -------------------------------------------------------------------------


def _scoped(dataset: Dataset | None) -> tuple[QuerySet[TagTally], QuerySet[PairTags]]:
    if dataset is None:
        return TagTally.objects.all(), PairTags.objects.all()
    return TagTally.objects.filter(dataset=dataset), PairTags.objects.filter(pair__dataset=dataset)


def check_and_rebuild(dataset: Dataset | None = None, repair: bool = True) -> tallies.Drift:
    """The drift of the tally from a count of the tags, and (with `repair`) its rebuild from it.

    corpus.tallies' `check_and_rebuild_tallies`: the count, the comparison and the deletion of the
    deltas it saw are of one snapshot, and a delta committed meanwhile stays on top.
    """
    kept, tags = _scoped(dataset)
    return tallies.check_and_rebuild_tallies(
        [tallies.CheckedTally(TagTally, TAG_KEY, kept)],
        lambda: {TagTally: tag_rows(tags)},
        source="the phenomenon tags",
        repair=repair,
    )
