"""The check and the repair of the counters: every pair's counters recounted from the label table.

The counters (`corpus.selectors.in_gold`: the earliest five labels that count) are checked against
the label table, the pairs that disagree set right, pairs holding more labels that count than five
reported, and the maintained aggregates (`corpus.tallies`) checked and rebuilt.
"""

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, field
from typing import Any, cast

from django.db import connection, connections, transaction
from django.db.models import Case, Count, F, Q, QuerySet, When
from django.db.models.expressions import RawSQL

from base.subquery import sql_of

from . import tallies, worker_tally
from .gold import COUNTERS, gold_expression
from .gold_moves import gold_recounted, labels_moved
from .models import LABELS_PER_PAIR, Dataset, Label, Pair, ValidationLabel
from .scope import Scope
from .selectors import in_gold, labels_that_count, pairs_in, replacement_labels_in_gold
from .tallies.worker_tally import EACH_PK

SHOWN_DISAGREEMENTS = 20


@dataclass
class RecomputeReport:
    pairs_checked: int = 0
    disagreements: int = 0
    fixed: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)  # dicts: pair_id, stored, recomputed
    tally_drift: tallies.Drift | None = None  # corpus.tallies.Drift: maintained aggregates vs the stored counters
    worker_tally_drift: tallies.Drift | None = None  # the worker figures (corpus.worker_tally) vs the labels
    # Pairs holding labels that count beyond their earliest five (`surplus_labels`), and how many.
    overfull_pairs: int = 0
    surplus_labels: int = 0
    overfull_examples: list[dict[str, Any]] = field(default_factory=list)  # dicts: pair_id, surplus positions

    @property
    def drifted(self) -> bool:
        """Whether the label table and the counters tell different stories (`--check` fails on it)."""
        return bool(self.disagreements or self.overfull_pairs)

    def summary(self) -> str:
        lines = [
            f"pairs checked: {self.pairs_checked}",
            f"pairs whose stored counters disagree with the label table: {self.disagreements}",
        ]
        for example in self.examples:
            lines.append(f"    {example['pair_id']}: stored {example['stored']} recomputed {example['recomputed']}")
        if self.disagreements > len(self.examples):
            lines.append(f"    ... and {self.disagreements - len(self.examples)} more")
        lines.append(f"pairs fixed: {self.fixed}")
        lines.append(
            f"pairs with more than {LABELS_PER_PAIR} labels that count: {self.overfull_pairs} "
            f"({self.surplus_labels} labels beyond the earliest {LABELS_PER_PAIR}, left out of gold and snapshots)"
        )
        for example in self.overfull_examples:
            lines.append(f"    {example['pair_id']}: surplus labels in positions {example['positions']}")
        if self.overfull_pairs > len(self.overfull_examples):
            lines.append(f"    ... and {self.overfull_pairs - len(self.overfull_examples)} more")
        if self.tally_drift is not None:
            lines.append(self.tally_drift.summary())
        if self.worker_tally_drift is not None:
            lines.append(self.worker_tally_drift.summary())
        return "\n".join(lines)


def _with_recomputed(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    """Annotate the COUNTERS recomputed from the label table, as r_<name> (one LEFT JOIN ... GROUP BY)."""
    counted = in_gold("labels__")

    def votes(label: str | None = None) -> Count:
        condition = counted if label is None else counted & Q(labels__label=label)
        return Count("labels", filter=condition)

    return pairs.annotate(
        r_label_count=votes(),
        r_entailment_votes=votes(Label.ENTAILMENT),
        r_neutral_votes=votes(Label.NEUTRAL),
        r_contradiction_votes=votes(Label.CONTRADICTION),
    ).annotate(
        r_gold_label=_adjudicated_or(
            gold_expression(
                F("r_entailment_votes"), F("r_neutral_votes"), F("r_contradiction_votes"), F("imported_gold")
            )
        )
    )


def _adjudicated_or(majority: Any) -> Case:
    return Case(When(adjudicated_label="", then=majority), default=F("adjudicated_label"))


def _disagreeing(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    differs = Q()
    for name in COUNTERS:
        differs |= ~Q(**{name: F(f"r_{name}")})
    return _with_recomputed(pairs).filter(differs)


def _pairs_of(dataset: Dataset | None) -> QuerySet[Pair]:
    return pairs_in(Scope.of_dataset(dataset))


def find_disagreements(
    dataset: Dataset | None = None, *, limit: int = SHOWN_DISAGREEMENTS, found: list[int] | None = None
) -> tuple[int, list[dict[str, Any]]]:
    """(count, first `limit` examples) of pairs whose counters differ from the label table; `found`,
    a list, receives every such pair's pk. The full read returns pks only: twelve columns a row
    through the ORM's converters cost more than the query at MultiNLI scale."""
    pks = list(_disagreeing(_pairs_of(dataset)).order_by("pk").values_list("pk", flat=True))
    if found is not None:
        found.extend(pks)
    rows = (
        _with_recomputed(Pair.objects.filter(pk__in=pks[:limit]))
        .order_by("pk")
        .values_list("pair_id", *COUNTERS, *(f"r_{name}" for name in COUNTERS))
    )
    examples = [{"pair_id": row[0], "stored": tuple(row[1:6]), "recomputed": tuple(row[6:11])} for row in rows]
    return len(pks), examples


def surplus_labels(dataset: Dataset | None = None) -> QuerySet[ValidationLabel]:
    """Labels that count but are not among their pair's earliest five that count (a label a writer
    took beyond the fifth, or a replacement once the excluded worker is included again)."""
    return (
        ValidationLabel.objects.filter(labels_that_count(), position__gt=LABELS_PER_PAIR, pair__in=_pairs_of(dataset))
        .exclude(pk__in=replacement_labels_in_gold())
        .order_by("pair_id", "position")
    )


def _report_overfull(report: "RecomputeReport", dataset: Dataset | None) -> None:
    positions: dict[str, list[int]] = {}
    for pair_id, position in surplus_labels(dataset).values_list("pair__pair_id", "position"):
        positions.setdefault(pair_id, []).append(position)
    report.overfull_pairs = len(positions)
    report.surplus_labels = sum(len(found) for found in positions.values())
    report.overfull_examples = [
        {"pair_id": pair_id, "positions": found} for pair_id, found in list(positions.items())[:SHOWN_DISAGREEMENTS]
    ]


FIX_BATCH = 1_000  # pairs a fix recounts and writes in one short transaction under their row locks
FIX_WORKERS = 2  # batches fixed at once, each on a connection of its own (outside a transaction)


def recompute_gold(dataset: Dataset | None = None, *, fix: bool = True, lengths: bool = False) -> RecomputeReport:
    """Report pairs whose counters disagree with the label table, then set them right.

    The check is one read of every pair with its labels; only the pairs it finds are written,
    FIX_BATCH pairs a transaction (`_fix_batch`), each batch under the row locks of its own pairs
    only, so validators' submits go on meanwhile and none is lost or counted twice.

    Pairs holding more labels that count than five are reported (`surplus_labels`): their labels
    beyond the earliest five stay in the table, counted nowhere, for a researcher to see; nothing
    is deleted. The pair and worker tallies are checked and rebuilt every time; with `lengths` the
    premise and hypothesis lengths too (no label moves a sentence's length).
    """
    pairs = _pairs_of(dataset)
    report = RecomputeReport(pairs_checked=pairs.count())
    disagreeing: list[int] = []
    report.disagreements, report.examples = find_disagreements(dataset, found=disagreeing)
    _report_overfull(report, dataset)
    if fix and disagreeing:
        report.fixed = _fix_in_batches(disagreeing)
    # The fix moved the tallies with deltas, as every writer does: what differs now is drift.
    checked = tallies.CORPUS if lengths else tallies.PAIRS_ONLY
    report.tally_drift = tallies.check_and_rebuild(dataset, checked, repair=fix)
    report.worker_tally_drift = tallies.check_and_rebuild(dataset, worker_tally.TALLY, repair=fix)
    if report.fixed:
        gold_recounted()
    return report


def heal_pairs(pair_pks: Sequence[int]) -> int:
    """Recount these pairs' counters from the label table and write those that disagree (labels of
    theirs began or stopped counting), in the caller's transaction if any; returns pairs fixed."""
    fixed = _fix_in_batches(pair_pks)
    if fixed:
        gold_recounted()
    return fixed


def _fix_in_batches(pair_pks: Sequence[int]) -> int:
    """Fix these pairs' counters from the label table, FIX_BATCH pairs a transaction; returns pairs fixed.

    Outside a transaction FIX_WORKERS batches run at once, each thread on a connection of its own
    (the batches share no pair): the fix is bound by the index entries each batch writes, CPU in the
    database. Inside one (a caller's, or a test's) the batches must see its rows: its connection.
    """
    ordered = sorted(pair_pks)
    batches = [ordered[start : start + FIX_BATCH] for start in range(0, len(ordered), FIX_BATCH)]
    with tallies.folds_deferred():
        if FIX_WORKERS > 1 and len(batches) > 1 and not connection.in_atomic_block:
            with ThreadPoolExecutor(max_workers=FIX_WORKERS) as pool:
                # Each batch runs in a copy of this context (folds deferred, as here).
                return sum(pool.map(lambda batch: copy_context().run(_fix_batch_on_own_connection, batch), batches))
        return sum(_fix_batch(batch) for batch in batches)


def _fix_batch_on_own_connection(batch: Sequence[int]) -> int:
    try:
        return _fix_batch(batch)
    finally:
        connections.close_all()  # this thread's connections only


RECOUNTED = (
    "pk",
    "dataset_id",
    "premise__split",
    "premise__genre_id",
    "author_label",
    "hypothesis",
    "imported_gold",
    "needs_validation",
    "stopped_early",
)


def lock_pairs(pair_pks: Sequence[int]) -> None:
    """Take these pairs' row locks in pk order, as every writer of labels takes them, in the caller's transaction."""
    list(
        Pair.objects.select_for_update(no_key=True, of=("self",))
        .filter(pk__in=pair_pks)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _fix_batch(batch: Sequence[int]) -> int:
    """Fix one batch in a transaction of its own; returns pairs written. The pairs are locked first:
    the recount then sees every label a submit committed before, and a later submit waits for this
    batch only and moves the counters written here."""
    with transaction.atomic():
        # Not waiting for the WAL flush: a batch lost in a crash leaves its pairs as they were,
        # for the next recompute to find (a flush a commit is most of a fix of every pair).
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        lock_pairs(batch)
        rows = _recount_locked(batch)
        fixed = [row[0] for row in rows]
        worker_rows = worker_tally.read(fixed)  # the worker figures follow the counters (leave-one-out gold)
        _write_recounted(rows)
        worker_tally.moved(worker_rows, fixed)
    return len(rows)


# Pairs a statement of the erasure's callers (`privacy.services`) names by a list of pks when
# it looks them up by `pk IN (...)`: few enough that the planner looks each up by index.
RECOUNT_CHUNK = 500


def recount_locked(pair_pks: Sequence[int], *, stopped: list[int] | None = None) -> int:
    """Recount these pairs, which the caller holds locked in its transaction, from the label table:
    one read of those that disagree (each looked up by index), one write of their counters and one
    INSERT a tally, so the cost follows the pairs named, not the corpus. The worker figures are the
    caller's (`worker_rows` before, `worker_tally.moved` after). `stopped`, a list, receives the pks
    of the pairs written that were stopped early (the only ones a recount can leave undecided).
    Returns pairs written."""
    rows = _recount_locked(sorted(set(pair_pks)))
    _write_recounted(rows)
    if stopped is not None:
        stopped.extend(row[0] for row in rows if row[RECOUNTED.index("stopped_early")])
    return len(rows)


def worker_rows(pair_pks: Sequence[int]) -> tallies.Truth:
    """`worker_tally.read` of these pairs (each pair's labels looked up by index)."""
    return worker_tally.read(pair_pks)


def _write_recounted(rows: Sequence[tuple[Any, ...]]) -> None:
    """Write the recounted counters of `_recount_locked`'s rows and move the pair and word tallies."""
    if not rows:
        return
    _write_counters([(row[0], *row[-5:]) for row in rows])
    keys, moves = [], []
    for row in rows:
        pk, dataset_id, split, genre_id, author_label, hypothesis, imported_gold, queued, stopped = row[
            : len(RECOUNTED)
        ]
        stored, recounted = row[len(RECOUNTED) : -5], row[-5:]
        # The few fields `pair_key` reads: a model instance a row cost as much as the recount's statement.
        pair = cast(Pair, _KeyFields(dataset_id, author_label, imported_gold, queued, stopped))
        keys.append(
            (
                pk,
                tallies.pair_key(pair, split, genre_id, state=stored[:4]),
                tallies.pair_key(pair, split, genre_id, state=recounted[:4]),
            )
        )
        facts = (dataset_id, split, genre_id, author_label, hypothesis)
        moves.append(tallies.LabelMove(pk, *facts, stored[4], stored[0], recounted[4], recounted[0]))
    tallies.pairs_moved(keys)
    labels_moved(moves)


@dataclass(frozen=True, slots=True)
class _KeyFields:
    """The fields of a pair that `tallies.pair_key` reads besides its counters."""

    dataset_id: int
    author_label: str
    imported_gold: str
    needs_validation: bool
    stopped_early: bool


class _Batch:
    """Where the compiled recount takes its batch's pks (an array parameter)."""


_BATCH = _Batch()
_recount_statement: list[tuple[str, tuple[Any, ...]]] = []  # compiled once a process


def _recount_locked(batch: Sequence[int]) -> list[tuple[Any, ...]]:
    """The batch's pairs whose counters disagree with their labels: per pair its RECOUNTED fields,
    then the five stored counters (COUNTERS), then the five recounted; in the batch's order.

    One statement whatever the batch's size: each pair's recount is a subquery run per pk of the
    array (`EACH_PK`). Compiled once a process: building it through the ORM took longer than running it."""
    if not batch:
        return []
    if not _recount_statement:
        one_pair = (
            _disagreeing(Pair.objects.filter(pk=RawSQL("each_pk.pk", ())))
            .order_by()
            .values_list(*RECOUNTED, *COUNTERS, *(f"r_{name}" for name in COUNTERS))
        )
        compiled = sql_of(one_pair)
        assert compiled is not None  # a filter by a column always compiles
        # Grouped by pair, the subquery cannot be merged into a join: it runs once a pk.
        sql = f"SELECT recounted.* FROM {EACH_PK} CROSS JOIN LATERAL ({compiled[0]}) AS recounted"
        _recount_statement.append((sql, (_BATCH, *compiled[1])))
    sql, params = _recount_statement[0]
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(batch) if value is _BATCH else value for value in params])
        return cast(list[tuple[Any, ...]], cursor.fetchall())  # tuples already: no copy a row


def _write_counters(rows: Sequence[tuple[Any, ...]]) -> None:
    """Set the COUNTERS of the pairs of `rows` ((pk, *counters)) in one UPDATE, one array parameter
    a column (not one per value: the statement costs nothing to build)."""
    table = connection.ops.quote_name(Pair._meta.db_table)
    names = ", ".join(connection.ops.quote_name(name) for name in COUNTERS)
    assignments = ", ".join(
        f"{connection.ops.quote_name(name)} = v.{connection.ops.quote_name(name)}" for name in COUNTERS
    )
    types = ["bigint", *(("text" if name == "gold_label" else "integer") for name in COUNTERS)]
    arrays = ", ".join(f"%s::{kind}[]" for kind in types)
    columns = [list(column) for column in zip(*rows, strict=True)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS t SET {assignments} FROM unnest({arrays}) AS v(id, {names}) WHERE t.id = v.id",
            columns,
        )
