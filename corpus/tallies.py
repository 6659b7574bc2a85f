"""Maintained aggregates: the sums that statistics and dashboard figures need, kept per dataset ×
split × genre so that no report or page scans the corpus.

Three append-only delta tables (`PairTally`, `LengthTally`, `WordTally`: `CORPUS`; other apps keep
theirs the same way and register them in `MAINTAINED`: the artifacts app's tag tally, the
collection app's hypothesis tally). A writer that changes what they count INSERTs signed deltas in its own
transaction (never an UPDATE of a shared row: no hot row, so concurrent validators do not
serialise on a counter). A figure is the SUM of `n` over its key, folded rows and fresh deltas
alike; `fold` replaces every delta by one row per key in a single statement now and then, so a
read stays a few hundred rows: the one fold of every tally, with one lock, after which it vacuums
what it folded (the table keeps room for the next deltas instead of growing with every fold). The
fold runs on the beat schedule (`corpus.fold_tallies`, a worker's beat or the embedded mode's),
after a long writer (`folds_deferred`: recompute_gold's fix) and by the `fold_tallies` command;
never inside a writer's request (a fold reads every tally table). An import nets its own deltas as
it goes (`deltas_gathered`) and, at its end, adds the sums to the rows their keys have, under the
folds' lock (`_merge`): it adds a row only for a key the tally lacked, however long it is.

Who writes deltas (all through here):
  - `corpus.services` (labels added, pairs created), `corpus.adjudication` (gold adjudicated) with
    `pairs_moved`/`pairs_added`/`words_moved` (a hypothesis's words follow its counted label);
  - premise imports (`premises_added`) and split assignment (`premises_moving`);
  - `corpus.recompute.recompute_gold`, which moves them with the counters it fixes, compares them
    with the truth grouped from the pairs and premises and rewrites them, as of one snapshot,
    without making writers wait (`check_and_rebuild`, every registered tally's check and rebuild).
Anything else that changes a pair's counters, split, genre or texts, or deletes pairs outside a
dataset's deletion, shows as drift in the next recompute, which repairs it.
"""

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from django.db import connection, transaction
from django.db.models import Count, Field, Model, QuerySet, Sum, Value
from django.db.models.functions import Length, Replace, Trim
from django.dispatch import Signal

from base.plain_rows import insert_rows, insert_rows_together

from . import signals
from .giveaways import counted_label, tokenize, words_of
from .labels import LABELS
from .models import Dataset, LengthKind, LengthTally, Pair, PairTally, Premise, Tally, WordTally
from .overlap import relation_mask

if TYPE_CHECKING:  # the selectors read the tallies' rows (imported where used)
    from .selectors import TeamDatasets

FOLD_LOCK = 0x7A11E5  # advisory lock key: one fold (or check and rebuild) at a time (PostgreSQL)

PAIR_KEY = (
    "dataset_id",
    "split",
    "genre_id",
    "author_label",
    "label_count",
    "entailment_votes",
    "neutral_votes",
    "contradiction_votes",
    "imported_gold",
    "needs_validation",
    "stopped_early",
)
# The validation queue's flags, last in PAIR_KEY: moved by `corpus.validation_flags`, the one
# writer of them apart from the label writers (which move them with the counters).
FLAGS = PAIR_KEY[-2:]
LENGTH_KEY = ("dataset_id", "split", "genre_id", "kind", "words")
WORD_KEY = ("dataset_id", "split", "genre_id", "label", "word")
HYPOTHESES = ""  # the word of a WordTally row that counts hypotheses, not a word in them

# A tally key (the values of PAIR_KEY or LENGTH_KEY, in order), rows by key, and each table's rows.
Key = tuple[Any, ...]
Rows = Mapping[Key, int]
Truth = dict[type[Tally], Rows]

# --- words, the same in SQL and in Python ------------------------------------------------------


def spaced_word_count_sql(field: str) -> Any:
    """Words in a text column, in SQL: spaces + 1.

    Three passes of "two spaces -> one" first, so runs of up to eight spaces count as one gap.
    """
    text: Trim | Replace = Trim(field)
    for _ in range(3):
        text = Replace(text, Value("  "), Value(" "))
    return Length(text) - Length(Replace(text, Value(" "), Value(""))) + 1


# --- grouping the truth --------------------------------------------------------------------------


def pair_rows(pairs: QuerySet[Pair]) -> dict[Key, int]:
    """{PAIR_KEY tuple: pairs} grouped from a Pair queryset (one GROUP BY)."""
    rows = (
        pairs.order_by()
        .values_list("dataset_id", "premise__split", "premise__genre_id", *PAIR_KEY[3:])  # split, genre: the premise's
        .annotate(n=Count("pk"))
    )
    return {tuple(row[:-1]): row[-1] for row in rows}


def _length_rows(rows: QuerySet[Any], text: str, place: str, kind: LengthKind) -> dict[Key, int]:
    """{LENGTH_KEY: n} of `text`'s spaced word counts; `place` prefixes split and genre ("" or "premise__")."""
    counted = (
        rows.order_by()
        .annotate(words=spaced_word_count_sql(text))
        .values_list("dataset_id", f"{place}split", f"{place}genre_id", "words")
        .annotate(n=Count("pk"))
    )
    return {(d, s, g, kind.value, w): n for d, s, g, w, n in counted}


def relation_rows(pairs: QuerySet[Pair]) -> dict[Key, int]:
    """{LENGTH_KEY (kind relation, words = bit mask): n}: the words are compared in Python, one
    pass over the pairs' texts (the truth of the relation tallies; costly at corpus scale)."""
    rows: Counter[Key] = Counter()
    texts = pairs.order_by().values_list(
        "dataset_id", "premise__split", "premise__genre_id", "premise__text", "hypothesis"
    )
    for dataset_id, split, genre_id, premise_text, hypothesis in texts.iterator(chunk_size=5000):
        rows[(dataset_id, split, genre_id, LengthKind.RELATION.value, relation_mask(premise_text, hypothesis))] += 1
    return dict(rows)


def hypothesis_words(dataset_id: int, split: str, genre_id: int, label: str, hypothesis: str) -> list[Key]:
    """The WORD_KEYs one hypothesis counted under `label` adds to: each of its words and the
    hypotheses row; none for a pair counted under no label."""
    if label not in LABELS:
        return []
    return [(dataset_id, split, genre_id, label, word) for word in (HYPOTHESES, *words_of(tokenize(hypothesis)))]


def word_rows(pairs: QuerySet[Pair]) -> dict[Key, int]:
    """{WORD_KEY: hypotheses}: every hypothesis tokenised in Python (the truth of the word tally;
    costly at corpus scale, as the give-away page was before the tally)."""
    rows: Counter[Key] = Counter()
    texts = pairs.order_by().values_list(
        "dataset_id", "premise__split", "premise__genre_id", "gold_label", "author_label", "label_count", "hypothesis"
    )
    for dataset_id, split, genre_id, gold, author, count, hypothesis in texts.iterator(chunk_size=5000):
        rows.update(hypothesis_words(dataset_id, split, genre_id, counted_label(gold, author, count), hypothesis))
    return dict(rows)


def length_rows(premises: QuerySet[Premise], pairs: QuerySet[Pair]) -> dict[Key, int]:
    """{LENGTH_KEY: n} of these premises' and pairs' lengths and the pairs' edit relations (the kinds' keys differ)."""
    return {
        **_length_rows(premises, "text", "", LengthKind.PREMISE),
        **_length_rows(pairs, "hypothesis", "premise__", LengthKind.HYPOTHESIS),
        **relation_rows(pairs),
    }


# --- writing deltas ------------------------------------------------------------------------------


def split_moved(rows: Rows, split: str, at: int = 1) -> Counter[Key]:
    """The deltas that move these rows ({key: n}) to `split`, the key's value at `at`: keys from
    several splits land on one key of `split` and add up (a dict built key by key kept only the
    last, and assign_splits moving dev and test back drifted)."""
    deltas: Counter[Key] = Counter()
    for key, n in rows.items():
        deltas[key] -= n
        deltas[(*key[:at], split, *key[at + 1 :])] += n
    return deltas


def pair_key(pair: Pair, split: str, genre_id: int, state: Sequence[int] | None = None) -> Key:
    """A pair's PAIR_KEY from its fields (or `state`: label_count and the three vote counts)."""
    state = state or (pair.label_count, pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes)
    flags = (pair.needs_validation, pair.stopped_early)
    return (pair.dataset_id, split, genre_id, pair.author_label, *state, pair.imported_gold, *flags)


def pairs_moved(moves: Iterable[tuple[int, Key, Key]]) -> int:
    """Record pairs whose counters changed: `moves` is a list of (pair pk, old PAIR_KEY, new
    PAIR_KEY). One INSERT of at most two rows per move, netted (a batch's pairs often share keys);
    the moves are told to the apps that keep figures of their own by pair (`corpus.signals.pairs_moved`)."""
    deltas: Counter[Key] = Counter()
    moved = []
    for pk, old, new in moves:
        if old != new:
            deltas[old] -= 1
            deltas[new] += 1
            moved.append((pk, old, new))
    if moved:
        signals.pairs_moved.send(sender=Pair, moves=moved)
    return insert_deltas(PairTally, PAIR_KEY, deltas)


def flags_moved(rows: Rows, values: Mapping[str, bool]) -> Counter[Key]:
    """The deltas that set the flags named in `values` on pairs of these rows ({PAIR_KEY: n})."""
    deltas: Counter[Key] = Counter()
    for key, n in rows.items():
        new = tuple(values.get(name, value) for name, value in zip(PAIR_KEY, key, strict=True))
        if new != key:
            deltas[key] -= n
            deltas[new] += n
    return deltas


@dataclass(frozen=True)
class LabelMove:
    """A pair whose gold label or label count moved: what the word tally (and the receivers of
    `corpus.signals.gold_moved`) need to follow it, from the row the writer holds locked."""

    pair_id: int
    dataset_id: int
    split: str
    genre_id: int
    author_label: str
    hypothesis: str
    old_gold: str
    old_count: int
    new_gold: str
    new_count: int

    @property
    def old_label(self) -> str:
        return counted_label(self.old_gold, self.author_label, self.old_count)

    @property
    def new_label(self) -> str:
        return counted_label(self.new_gold, self.author_label, self.new_count)


def words_moved(moves: Iterable[LabelMove]) -> int:
    """Move the hypotheses whose counted label changed from the old label's words to the new
    one's: one INSERT of netted deltas (nothing when no counted label changed)."""
    deltas: Counter[Key] = Counter()
    for move in moves:
        old, new = move.old_label, move.new_label
        if old == new:
            continue
        facts = (move.dataset_id, move.split, move.genre_id)
        deltas.subtract(hypothesis_words(*facts, old, move.hypothesis))
        deltas.update(hypothesis_words(*facts, new, move.hypothesis))
    return insert_deltas(WordTally, WORD_KEY, deltas)


def spaced_word_count(text: str) -> int:
    """`spaced_word_count_sql` in Python, step for step (spaces only, trimmed, up to eight spaces a gap)."""
    text = text.strip(" ")
    for _ in range(3):
        text = text.replace("  ", " ")
    return text.count(" ") + 1


def _premise_facts(pairs: Sequence[Pair]) -> dict[int, tuple[str, int, str]]:
    """{premise pk: (split, genre pk, text)} for these pairs' premises: from the instances where
    loaded, else one read per 900 premises."""
    facts: dict[int, tuple[str, int, str]] = {}
    not_loaded: set[int] = set()
    for pair in pairs:
        if Pair.premise.is_cached(pair):
            facts[pair.premise_id] = (pair.premise.split, pair.premise.genre_id, pair.premise.text)
        else:
            not_loaded.add(pair.premise_id)
    missing = sorted(not_loaded)
    for start in range(0, len(missing), 900):
        for pk, split, genre_id, text in Premise.objects.filter(pk__in=missing[start : start + 900]).values_list(
            "pk", "split", "genre_id", "text"
        ):
            facts[pk] = (split, genre_id, text)
    return facts


def pairs_added(pairs: Sequence[Pair]) -> None:
    """Record new pairs (saved Pair instances with their counters): counters, hypothesis lengths,
    edit relations to the premise and the hypotheses' words under their counted label."""
    facts = _premise_facts(pairs)
    states: Counter[Key] = Counter()
    lengths: Counter[Key] = Counter()
    hypothesis_words_: Counter[Key] = Counter()
    for pair in pairs:
        split, genre_id, premise_text = facts[pair.premise_id]
        states[pair_key(pair, split, genre_id)] += 1
        label = counted_label(pair.gold_label, pair.author_label, pair.label_count)
        hypothesis_words_.update(hypothesis_words(pair.dataset_id, split, genre_id, label, pair.hypothesis))
        lengths[
            (pair.dataset_id, split, genre_id, LengthKind.HYPOTHESIS.value, spaced_word_count(pair.hypothesis))
        ] += 1
        lengths[
            (pair.dataset_id, split, genre_id, LengthKind.RELATION.value, relation_mask(premise_text, pair.hypothesis))
        ] += 1
    insert_deltas(PairTally, PAIR_KEY, states)
    insert_deltas(LengthTally, LENGTH_KEY, lengths)
    insert_deltas(WordTally, WORD_KEY, hypothesis_words_)


def _labels_first() -> None:
    """Hold the label table's writer lock before writing tallies, as label writers do (a table
    lock taken after SHARE on the labels then cannot deadlock with a corpus import that writes
    premise tallies and labels afterwards). ROW EXCLUSIVE: no writer waits for another."""
    from .models import ValidationLabel

    with connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {ValidationLabel._meta.db_table} IN ROW EXCLUSIVE MODE")


def premises_added(premises: Iterable[Premise]) -> None:
    """Record new premises (saved Premise instances): counts and lengths per genre and split."""
    saved = list(premises)
    if not saved:
        return
    _labels_first()
    insert_deltas(
        LengthTally,
        LENGTH_KEY,
        Counter(
            (p.dataset_id, p.split, p.genre_id, LengthKind.PREMISE.value, spaced_word_count(p.text)) for p in saved
        ),
    )


def premises_moving(premises: QuerySet[Premise], split: str) -> None:
    """Record that these premises (a queryset, read BEFORE the update) move to `split`, with their pairs."""
    premises = premises.exclude(split=split)
    _labels_first()
    pairs = Pair.objects.filter(premise__in=premises.values("pk"))
    insert_deltas(PairTally, PAIR_KEY, split_moved(pair_rows(pairs), split))
    insert_deltas(WordTally, WORD_KEY, split_moved(word_rows(pairs), split))
    signals.pairs_moving_split.send(sender=Pair, pairs=pairs, split=split)
    insert_deltas(LengthTally, LENGTH_KEY, split_moved(length_rows(premises, pairs), split))


# --- folding -------------------------------------------------------------------------------------


@contextmanager
def folds_deferred() -> Iterator[None]:
    """A long writer (recompute_gold's fix of every pair, hundreds of commits of deltas): the
    deltas its block appended are folded once, when it ends, not left for the next beat."""
    yield
    fold()


def fold() -> int:
    """Replace every delta by one row per key (sum of n, zero sums dropped); returns rows folded.

    PostgreSQL: one statement a table, `WITH gone AS (DELETE ... RETURNING) INSERT ... SELECT sum(n)
    FROM gone GROUP BY key`, so exactly the rows deleted are summed; deltas of transactions not
    yet committed are not visible to it and stay as they are. A concurrent fold is skipped.
    Outside a transaction, the tables it folded are then vacuumed (`_vacuum`).
    """
    folded, tables = _fold()
    if folded:
        signals.tallies_folded.send(sender=fold)
    _vacuum(tables)
    return folded


# The memory a fold's grouping may take (its transaction only): the keys of a MultiNLI-scale word
# tally hashed at once, not in batches spilled to disk (the server's default is a few MB).
FOLD_WORK_MEM = "64MB"


def _grouped(model: type[Tally], name: str) -> str:
    """A key column as a fold groups and compares it: text in the "C" collation, bytes compared,
    the same groups as the database's own (deterministic) collation gives, without its cost: a plan
    that sorts the rows instead of hashing them (the statistics decide) sorted them by locale, 3 s
    for 367k word rows."""
    name = column(model, name)
    text = model._meta.get_field(name.removesuffix("_id")).get_internal_type() in ("CharField", "TextField")
    return f'{name} COLLATE "C"' if text else name


def _fold() -> tuple[int, list[str]]:
    """The fold's statements, in one transaction under the folds' lock: (rows written, the tables
    whose rows it replaced)."""
    folded, replaced = 0, []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [FOLD_LOCK])
        acquired = cursor.fetchone()
        if not (acquired and acquired[0]):
            return 0, []
        cursor.execute("SELECT set_config('work_mem', %s, true)", [FOLD_WORK_MEM])
        for model, key_names in _folded():
            table, names = model._meta.db_table, [column(model, name) for name in key_names]
            columns = ", ".join(names)
            keys = ", ".join(f"{_grouped(model, name)} AS {column(model, name)}" for name in key_names)
            same_key = " AND ".join(f"t.{_grouped(model, name)} = d.{column(model, name)}" for name in key_names)
            positions = ", ".join(str(position) for position in range(1, len(names) + 1))
            # Only the keys with more than one row are rewritten: a fold of every row reads
            # and rewrites every word row at MultiNLI scale; one grouped read finds the few
            # keys deltas have touched.
            cursor.execute(
                f"WITH d AS (SELECT {keys} FROM {table} GROUP BY {positions} HAVING count(*) > 1), "
                f"gone AS (DELETE FROM {table} AS t USING d WHERE {same_key} "
                f"RETURNING {', '.join(f't.{name}' for name in names)}, t.n) "
                f"INSERT INTO {table} ({columns}, n) "
                f"SELECT {keys}, sum(n) FROM gone GROUP BY {positions} HAVING sum(n) <> 0"
            )
            if cursor.rowcount:
                folded += cursor.rowcount
                replaced.append(table)
    return folded, replaced


def _vacuum(tables: Sequence[str]) -> None:
    """VACUUM the tables a fold replaced rows of, once it has committed: the rows it deleted become
    room for the next deltas and folds. Autovacuum would (after its threshold of dead rows, where
    it runs at all: it is off on some servers): without it every fold left its deleted rows in the
    table and the indexes, and each fold grew them by the rows it wrote (issue 53). Not inside a
    caller's transaction, where VACUUM cannot run (tests): the rows wait for a later fold's."""
    if not tables or connection.in_atomic_block:
        return
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {', '.join(quote(table) for table in tables)}")


def _folded() -> list[tuple[type[Tally], Sequence[str]]]:
    return [table for maintained in MAINTAINED.values() for table in maintained.tables]


def column(model: type[Model], key_name: str) -> str:
    """The database column of a concrete field (`genre_id` or `genre` names the `genre` foreign
    key's), for statements of plain rows (`insert_deltas`, corpus.services' label INSERTs)."""
    model_field = model._meta.get_field(key_name.removesuffix("_id"))
    assert isinstance(model_field, Field) and model_field.column  # a concrete field with a column
    return model_field.column


@dataclass
class _Gathered:
    """The deltas of a `deltas_gathered` block not yet written: {(table, key names): {key: n}}, and
    the tables whose deltas it staged already (`_stage`)."""

    deltas: dict[tuple[type[Tally], tuple[str, ...]], Counter[Key]] = field(default_factory=dict)
    keys: int = 0
    staged: set[tuple[type[Tally], tuple[str, ...]]] = field(default_factory=set)


class _Blocks(threading.local):
    """The open `deltas_gathered` block of this thread, if any (a thread's own: a request served
    beside an import in the embedded mode writes its deltas in its own transaction)."""

    def __init__(self) -> None:
        self.open: list[_Gathered] = []


_blocks = _Blocks()

# A gathered block moves what it holds in memory to its staging tables once it holds this many
# keys (a few hundred bytes a key): memory stays bounded, and the tally still gains one row per key
# the block touched, whatever its size.
GATHERED_KEYS_WRITTEN_AT = 400_000


@contextmanager
def deltas_gathered() -> Iterator[None]:
    """A long writer in ONE transaction (a corpus import): every delta its block appends is netted
    per key, and written when the block ends as one row per key touched, not one per delta (issue
    53: importing 433k pairs appended 4.40M word deltas, 378 MB plus 404 MB of indexes, and the fold
    after it took 127 s). The import folds its own deltas as it goes: in memory, and beyond
    `GATHERED_KEYS_WRITTEN_AT` keys in a temporary table of the transaction (`_stage`), summed per key
    and added to the tally's rows at the end (`_merge`). However long the import, the tally gains a
    row only for a key it lacked, and the next fold finds nothing of the import's to merge.

    Only for a block whose own transaction does not read the tallies it writes before the block
    ends (the sums would miss what is held): other transactions see nothing of it before it
    commits either way. A block inside another is part of it. Deltas of other threads are their own
    (`_Blocks`)."""
    if _blocks.open:
        yield
        return
    gathered = _Gathered()
    _blocks.open.append(gathered)
    try:
        yield
    finally:
        _blocks.open.remove(gathered)
    _write_gathered(gathered)  # not on an error: the transaction rolls back anyway


def _staging_table(model: type[Tally]) -> str:
    return f"{model._meta.db_table}_gathered"


def _stage(gathered: _Gathered) -> None:
    """Move the held deltas to a temporary table per tally (dropped at the latest when the
    transaction ends): appended as they are, summed per key once, when the block ends."""
    quote = connection.ops.quote_name
    for (model, key_names), deltas in gathered.deltas.items():
        columns = [column(model, name) for name in (*key_names, "n")]
        if (model, key_names) not in gathered.staged:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"CREATE TEMPORARY TABLE IF NOT EXISTS {quote(_staging_table(model))} ON COMMIT DROP AS"
                    f" SELECT {', '.join(quote(name) for name in columns)} FROM {quote(model._meta.db_table)}"
                    " WHERE false"
                )
            gathered.staged.add((model, key_names))
        insert_rows(_staging_table(model), columns, [(*key, n) for key, n in deltas.items() if n])
    gathered.deltas.clear()
    gathered.keys = 0


def _write_held(gathered: _Gathered) -> None:
    for (model, key_names), deltas in gathered.deltas.items():
        _insert(model, key_names, deltas)
    gathered.deltas.clear()
    gathered.keys = 0


def _write_gathered(gathered: _Gathered) -> None:
    """The block's sums merged into the tallies, in its transaction (`_merge`); outside a
    transaction (no staging table can outlive a statement there) appended as they are."""
    if not connection.in_atomic_block:
        _write_held(gathered)
        return
    _stage(gathered)  # what is still held joins what was staged
    if not gathered.staged:
        return
    with connection.cursor() as cursor:
        # No fold between the merge's read of the rows it adds to and its commit: a fold committed
        # meanwhile would have deleted the row the merge updates, and the sum with it.
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [FOLD_LOCK])
    for model, key_names in sorted(gathered.staged, key=lambda staged: staged[0]._meta.db_table):
        _merge(model, key_names, _staging_table(model))
    gathered.staged.clear()


def _merge(model: type[Tally], key_names: Sequence[str], staging: str) -> None:
    """Add the staging table's sums per key to the tally's rows: to one row of each key that has
    one, as a new row version under a new id (a moved sum has a newer row: the give-away listing's
    rule, artifacts.listings), and as a new row for a key that has none; a row whose sum comes to
    zero is deleted. The tally gains a row only for a key it did not have: an import into a dataset
    that has its keys already leaves the next fold nothing to merge (issue 53: the fold after a
    second import of 108k pairs rewrote 75,685 keys, 5.48x a GROUP BY of the tally's rows)."""
    quote = connection.ops.quote_name
    table, names = quote(model._meta.db_table), [column(model, name) for name in key_names]
    columns = ", ".join(names)
    keys = ", ".join(f"{_grouped(model, name)} AS {name}" for name in names)
    same_key = " AND ".join(f"t.{_grouped(model, name)} = s.{name}" for name in names)
    kept_key = " AND ".join(f"k.{name} = s.{name}" for name in names)
    summed_key = ", ".join(f"s.{name}" for name in names)
    positions = ", ".join(str(position) for position in range(1, len(names) + 1))
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH s AS (SELECT {keys}, SUM(n) AS n FROM {quote(staging)} GROUP BY {positions} HAVING SUM(n) <> 0), "
            f"k AS (SELECT DISTINCT ON ({summed_key}) t.id, {summed_key}, s.n FROM {table} AS t JOIN s ON {same_key} "
            f"ORDER BY {summed_key}, t.id DESC), "
            f"added AS (INSERT INTO {table} ({columns}, n) SELECT {columns}, n FROM s "
            f"WHERE NOT EXISTS (SELECT 1 FROM k WHERE {kept_key})), "
            f"moved AS (UPDATE {table} AS t SET n = t.n + k.n, id = DEFAULT FROM k WHERE t.id = k.id RETURNING t.id, t.n) "
            "SELECT id FROM moved WHERE n = 0"
        )
        zeroed = [row[0] for row in cursor.fetchall()]
        if zeroed:
            cursor.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", [zeroed])
        cursor.execute(f"DROP TABLE {quote(staging)}")


def insert_deltas(model: type[Tally], key_names: Sequence[str], deltas: Rows) -> int:
    """Append signed deltas (or a fold's sums) to a table of MAINTAINED, for this app's tallies and the
    ones other apps keep this way: one row per non-zero delta, as multi-row INSERTs of plain values.
    Returns rows inserted (inside `deltas_gathered`: held, netted with the block's other deltas).
    A fix of every pair appends thousands of word deltas a batch, and
    building a model object per row for bulk_create took as long as the batch's UPDATE of a
    thousand pairs (issue 28)."""
    if _blocks.open:
        gathered = _blocks.open[-1]
        held = gathered.deltas.setdefault((model, tuple(key_names)), Counter())
        before = len(held)
        for key, n in deltas.items():
            if n:
                held[key] += n
        gathered.keys += len(held) - before
        if gathered.keys >= GATHERED_KEYS_WRITTEN_AT:
            if connection.in_atomic_block:
                _stage(gathered)
            else:  # no transaction to hold a staging table: written as they are
                _write_held(gathered)
        return sum(1 for n in deltas.values() if n)
    return _insert(model, key_names, deltas)


def _insert(model: type[Tally], key_names: Sequence[str], deltas: Rows) -> int:
    rows = [(*key, n) for key, n in deltas.items() if n]
    columns = [column(model, name) for name in (*key_names, "n")]
    insert_rows(model._meta.db_table, columns, rows)
    return len(rows)


def insert_deltas_together(parts: Sequence[tuple[type[Tally], Sequence[str], Rows]]) -> None:
    """`insert_deltas` of several tables, each (model, key names, deltas), in one statement
    (`base.plain_rows.insert_rows_together`): a hot writer's deltas to two tallies. Inside a
    `deltas_gathered` block they are held as `insert_deltas` holds them."""
    if _blocks.open:
        for model, key_names, deltas in parts:
            insert_deltas(model, key_names, deltas)
        return
    insert_rows_together(
        [
            (
                model._meta.db_table,
                [column(model, name) for name in (*key_names, "n")],
                [(*key, n) for key, n in deltas.items() if n],
            )
            for model, key_names, deltas in parts
        ]
    )


# --- reading -------------------------------------------------------------------------------------


def summed(tallies: QuerySet[Any], by: Sequence[str]) -> list[Key]:
    """[(*by, n)] summed over tally rows (`scoped`), non-zero sums only: one grouped statement."""
    rows = tallies.order_by().values_list(*by).annotate(total=Sum("n"))
    return [tuple(row) for row in rows if row[-1]]


def _read(tallies: QuerySet[Any], key_names: Sequence[str]) -> dict[Key, int]:
    """{key: sum of n} over tally rows (non-zero sums only)."""
    return {row[:-1]: row[-1] for row in summed(tallies, key_names)}


def scoped(
    model: type[Tally],
    dataset: "Dataset | TeamDatasets | str | None" = None,
    split: str | None = None,
    scheme: str | None = None,
) -> QuerySet[Any]:
    """A tally's rows of a dataset (or, with none and a `scheme`, the datasets of that label scheme) and split."""
    from .selectors import in_scope

    return in_scope(model._default_manager.all(), dataset, split, scheme=scheme)


def pair_counts(
    dataset: "Dataset | TeamDatasets | str | None" = None,
    split: str | None = None,
    *,
    by: Sequence[str] = (
        "genre__slug",
        "author_label",
        "label_count",
        "entailment_votes",
        "neutral_votes",
        "contradiction_votes",
    ),
    scheme: str | None = None,
) -> list[Key]:
    """[(*by, pairs)] summed from PairTally: a few hundred rows whatever the corpus's size (with no
    dataset and a `scheme`, of the datasets of that label scheme)."""
    return summed(scoped(PairTally, dataset, split, scheme), by)


def length_counts(
    kind: str,
    dataset: "Dataset | TeamDatasets | str | None" = None,
    split: str | None = None,
    *,
    by: Sequence[str] = ("words",),
) -> list[Key]:
    """[(*by, rows)] of premises or pairs (kind) summed from LengthTally."""
    return summed(scoped(LengthTally, dataset, split).filter(kind=kind), by)


def word_counts(
    dataset: "Dataset | TeamDatasets | str | None" = None, split: str | None = None, *, genre_id: int | None = None
) -> list[Key]:
    """[(label, word, hypotheses)] summed from WordTally (word HYPOTHESES: hypotheses per label)."""
    tallies = scoped(WordTally, dataset, split)
    return summed(tallies if genre_id is None else tallies.filter(genre_id=genre_id), ("label", "word"))


# --- verification and repair ---------------------------------------------------------------------

SHOWN_DRIFT = 10


@dataclass
class Drift:
    source: str  # what the truth is counted from
    keys: int = 0  # keys whose maintained sum differs from the truth
    rows: int = 0  # Σ |maintained - truth| over those keys
    examples: list[tuple[str, Key, int, int]] = field(default_factory=list)
    rebuilt: bool = False

    def summary(self) -> str:
        lines = [f"maintained aggregates drifting from {self.source}: {self.keys} keys, {self.rows} rows"]
        for table, key, maintained, truth in self.examples:
            lines.append(f"    {table} {key}: maintained {maintained} truth {truth}")
        if self.rebuilt:
            lines.append(f"maintained aggregates rebuilt from {self.source}")
        return "\n".join(lines)


def grouped_truth(dataset: Dataset | None = None, *, lengths: bool = True) -> Truth:
    """{PairTally: {key: n}, LengthTally: {key: n}, WordTally: {key: n}} grouped from the pairs
    and premises themselves.

    Without `lengths`, PairTally only: the lengths and words follow texts, and counting every
    sentence's words is most of the cost (the word tally's labels move with deltas, as the
    counters do, and are checked with the texts).
    """
    from .selectors import pairs_in, premises_in

    pairs = pairs_in(dataset)
    truth: Truth = {PairTally: pair_rows(pairs)}
    if lengths:
        truth[WordTally] = word_rows(pairs)
        truth[LengthTally] = length_rows(premises_in(dataset), pairs)
    return truth


@dataclass(frozen=True)
class Maintained:
    """Tables of signed deltas and what their truth is counted from: folded by the one `fold`,
    checked and rebuilt by the one `check_and_rebuild` (`manage.py rebuild_tallies NAME`)."""

    name: str
    tables: tuple[tuple[type[Tally], Sequence[str]], ...]  # each table and its key
    truth: Callable[[Dataset | None], Truth]  # every table's rows counted afresh, of a dataset or all
    source: str  # what the truth is counted from
    receivers: tuple[tuple[Signal, Callable[..., Any]], ...] = ()  # the corpus.signals these tables follow

    def register(self) -> None:
        """Fold, check and rebuild these tables with the rest, and connect their receivers (other
        apps, in their AppConfig.ready)."""
        MAINTAINED[self.name] = self
        for signal, receiver in self.receivers:
            signal.connect(receiver, dispatch_uid=f"{self.name}-tally-{receiver.__name__}")


CORPUS = Maintained(
    "corpus",
    ((PairTally, PAIR_KEY), (LengthTally, LENGTH_KEY), (WordTally, WORD_KEY)),
    grouped_truth,
    "the pairs and premises",
)
# The pair tally alone: recompute_gold after an exclusion (no label moves a sentence's length).
PAIRS_ONLY = Maintained("pairs", CORPUS.tables[:1], partial(grouped_truth, lengths=False), CORPUS.source)
# Every maintained tally by name: the corpus's, and those other apps register (the artifacts
# app's tag tally, the collection app's hypothesis tally).
MAINTAINED: dict[str, Maintained] = {CORPUS.name: CORPUS}


def check_and_rebuild(
    dataset: Dataset | str | None = None, maintained: Maintained = CORPUS, *, repair: bool = True
) -> Drift:
    """The drift of these tallies (of a dataset, or all) from their truth, and (with `repair`)
    their rebuild from it: one row per key, folded.

    One `one_snapshot_without_folds` transaction (PostgreSQL: REPEATABLE READ, under the folds'
    lock): the truth is counted, the tallies read and the visible deltas deleted all as of one
    snapshot, so a delta committed after it (a submit's, say) is neither in the truth nor deleted
    and stays on top of the rebuilt rows, exactly as it should. The fold's lock keeps folds out
    meanwhile (they skip a turn): a fold committed after the snapshot would have replaced deltas by
    sums the rebuild cannot see. Writers only INSERT deltas, and an import's merge takes the
    folds' lock too, so nothing else touches the rows deleted here. Inside a caller's transaction
    (tests), that transaction's isolation stays as it is.
    """
    from .selectors import one_dataset

    resolved = one_dataset(dataset)  # the Dataset row itself is no part of the snapshot
    report = Drift(source=maintained.source)
    with one_snapshot_without_folds():
        truth = maintained.truth(resolved)
        for model, key_names in maintained.tables:
            rows = scoped(model, resolved)
            kept, counted = _read(rows, key_names), truth[model]
            for key in sorted(set(kept) | set(counted), key=repr):
                have, want = kept.get(key, 0), counted.get(key, 0)
                if have != want:
                    report.keys += 1
                    report.rows += abs(have - want)
                    if len(report.examples) < SHOWN_DRIFT:
                        report.examples.append((model.__name__, key, have, want))
            if repair:
                rows.delete()
                insert_deltas(model, key_names, counted)
        report.rebuilt = repair
    return report


@contextmanager
def one_snapshot_without_folds() -> Iterator[None]:
    """A transaction in which a check reads a truth and a tally, and a rebuild deletes the deltas it
    read, all as of one snapshot, with no fold running meanwhile (FOLD_LOCK, the folds' lock held).

    PostgreSQL, outermost: the fold lock is taken first, as a session lock, and only then a
    REPEATABLE READ transaction begins: its first statement fixes the snapshot, so a fold that held
    the lock while the snapshot was taken would commit after it and the rebuild's DELETE would fail
    to serialise with it (seen beside a validator at 433k pairs). Inside a caller's transaction
    (tests) its isolation stays and the lock is the transaction's.
    """
    if connection.in_atomic_block:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [FOLD_LOCK])
            yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [FOLD_LOCK])
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [FOLD_LOCK])


def premise_saved(sender: type[Premise], instance: Premise, created: bool, raw: bool = False, **kwargs: Any) -> None:
    """post_save receiver (connected in corpus.apps): a premise saved one at a time is counted too."""
    if created and not raw:
        with transaction.atomic():
            premises_added([instance])
