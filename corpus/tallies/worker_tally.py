"""Per-worker figures, maintained: what every reader of worker quality sums, instead of grouping
every label of the crowd with its pair's other labels (about a second cold at MultiNLI scale).

Three tables of signed deltas kept by the engine (`corpus.tallies.engine`), each keyed by dataset
and split: `WorkerLabelTally` (scored labels per worker × label × leave-one-out gold × the pair's
gold × the label written for), `WorkerSecondsTally` (their seconds, a histogram: `bucket_sql`) and
`WriterTally` (pairs per author × written label × gold label × five labels in).

The truth (`truth`) is those rows grouped from the labels and pairs, with the rule of which labels
count read from `corpus.selectors` (`in_gold`), never copied. A pair's rows depend on that pair
alone, so every writer that changes it reads the rows of its pairs before and after, under their
row locks, and appends the difference (`read`, `moved`). docs/quality.md, "Worker figures from a
maintained tally", says what the histogram's median is worth and why no row is hot.
"""

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, cast

from django.db import connection
from django.db.models import Case, F, FloatField, IntegerField, QuerySet, Value, When
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast, Floor, Greatest, Least, Ln

from base.subquery import sql_of

from .. import signals
from ..gold import gold_expression, gold_from_votes
from ..labels import AUTHOR_POSITION, LABELS, LABELS_PER_PAIR, NO_GOLD, THREE_WAY_SCHEME
from ..models import Dataset, Pair, ValidationLabel
from ..scope import EVERYTHING, Scope
from ..selectors import in_gold
from . import engine as tallies
from .corpus_tallies import split_moved
from .models import Tally, WorkerLabelTally, WorkerSecondsTally, WriterTally

LABEL_KEY = ("dataset_id", "split", "worker_id", "label", "loo_gold", "gold_label", "author_label")
SECONDS_KEY = ("dataset_id", "split", "worker_id", "bucket")
WRITER_KEY = ("dataset_id", "split", "worker_id", "author_label", "gold_label", "five_labels")
TABLES = ((WorkerLabelTally, LABEL_KEY), (WorkerSecondsTally, SECONDS_KEY), (WriterTally, WRITER_KEY))

Key = tuple[Any, ...]

# --- the labels scored and their leave-one-out gold (the rule of the worker figures) --------------


def scored_labels(labels: QuerySet[ValidationLabel] | None = None) -> QuerySet[ValidationLabel]:
    """The labels a worker's figures count: validation labels (positions 2 on) by a worker (the
    author's label says how they write, not how they validate)."""
    labels = ValidationLabel.objects.all() if labels is None else labels
    return labels.filter(worker__isnull=False, position__gt=AUTHOR_POSITION)


def leave_one_out_gold() -> tuple[Case, dict[str, Any]]:
    """(the gold label of a label's pair without it, the aliases it reads): the pair's counted votes
    minus this label's own when it counts (`in_gold`), by the one gold rule (`gold_expression`)."""
    own_counts = Case(When(in_gold(), then=Value(1)), default=Value(0), output_field=IntegerField())

    def others(label: str) -> Any:
        return F(f"pair__{label}_votes") - Case(
            When(label=label, then=own_counts), default=Value(0), output_field=IntegerField()
        )

    return gold_expression(*(F(f"others_{label}") for label in LABELS)), {
        f"others_{label}": others(label) for label in LABELS
    }


# --- the seconds histogram -------------------------------------------------------------------------

# Buckets of seconds on a log scale, BUCKETS_PER_DOUBLING to each doubling: bucket k holds the
# seconds in [ANCHOR_SECONDS * 2^(k/8), ANCHOR_SECONDS * 2^((k+1)/8)), so a worker's labels fill as
# many buckets as the spread of their pace, however many labels they give. The anchor is the
# too-fast flag's threshold (quality.flags.TOO_FAST_SECONDS): a bound, so the flag seldom needs the
# exact median. The first and last buckets are open-ended.
ANCHOR_SECONDS = 4.0
BUCKETS_PER_DOUBLING = 8
LOWEST_BUCKET, HIGHEST_BUCKET = -6 * BUCKETS_PER_DOUBLING, 12 * BUCKETS_PER_DOUBLING  # 1/16 s, 16,384 s


def bucket_sql() -> Case:
    """A label's bucket (`ANCHOR_SECONDS`) as SQL, NULL without seconds: the only place it is computed."""
    seconds = Cast(F("seconds"), FloatField())
    steps = Floor(Ln(seconds / ANCHOR_SECONDS) * BUCKETS_PER_DOUBLING / Ln(Value(2.0)))
    return Case(
        When(seconds__isnull=True, then=Value(None)),
        When(seconds__lte=0, then=Value(LOWEST_BUCKET)),
        default=Cast(Greatest(Least(steps, Value(HIGHEST_BUCKET)), Value(LOWEST_BUCKET)), IntegerField()),
        output_field=IntegerField(),
    )


def bucket_bounds(bucket: int) -> tuple[float, float]:
    """(lowest, highest) seconds of a bucket: its labels lie in [lowest, highest) (up to rounding)."""
    lowest = -math.inf if bucket <= LOWEST_BUCKET else ANCHOR_SECONDS * 2 ** (bucket / BUCKETS_PER_DOUBLING)
    highest = math.inf if bucket >= HIGHEST_BUCKET else ANCHOR_SECONDS * 2 ** ((bucket + 1) / BUCKETS_PER_DOUBLING)
    return lowest, highest


# --- a pair's rows, and the writers' deltas --------------------------------------------------------


def _label_rows(labels: QuerySet[ValidationLabel]) -> tuple[str, tuple[Any, ...]] | None:
    """One row per scored label (dataset, split, worker, label, whether it is `in_gold`, the pair's
    votes, gold and written label, bucket), as SQL to group. The leave-one-out gold follows in
    Python (`others_gold`): the SQL form evaluates the rule of the labels that count thrice a label."""
    rows = scored_labels(labels).annotate(
        own=Case(When(in_gold(), then=Value(1)), default=Value(0), output_field=IntegerField()),
        in_dataset=F("pair__dataset_id"),
        in_split=F("pair__premise__split"),
        **{f"votes_{label}": F(f"pair__{label}_votes") for label in LABELS},
        gold=F("pair__gold_label"),
        written=F("pair__author_label"),
        bucket=bucket_sql(),
    )
    return sql_of(
        rows.values(
            "in_dataset",
            "in_split",
            "worker_id",
            "label",
            "own",
            *(f"votes_{label}" for label in LABELS),
            "gold",
            "written",
            "bucket",
        )
    )


def others_gold(label: str, own: int, votes: Sequence[int]) -> str:
    """`leave_one_out_gold` in Python: the gold of the pair's votes (in LABELS order) without this
    label's own vote when it counts (`own` 1)."""
    entailment, neutral, contradiction = (
        count - (own if other == label else 0) for other, count in zip(LABELS, votes, strict=True)
    )
    return gold_from_votes(entailment, neutral, contradiction)


def _writer_rows(pairs: QuerySet[Pair]) -> tuple[str, tuple[Any, ...]] | None:
    """One row per pair with an author: (dataset, split, author, written label, gold, five labels in)."""
    rows = (
        pairs.filter(author__isnull=False)
        .annotate(
            in_split=F("premise__split"),
            five=Case(When(label_count__gte=LABELS_PER_PAIR, then=Value(True)), default=Value(False)),
        )
        .values("dataset_id", "in_split", "author_id", "author_label", "gold_label", "five")
    )
    return sql_of(rows)


_VOTES = ", ".join(f"votes_{label}" for label in LABELS)


def _statement(
    labels: QuerySet[ValidationLabel], pairs: QuerySet[Pair], *, each_pk: Any = None
) -> tuple[str, list[Any]] | None:
    """The statement of every table's rows of these labels and pairs, grouped (None: no row). With
    `each_pk`, the array parameter of pair pks they name as `each_pk.pk`, read pk by pk (`EACH_PK`)."""
    parts: list[str] = []
    params: list[Any] = []
    rows_of = f"{EACH_PK} CROSS JOIN LATERAL (" if each_pk is not None else "("
    kept_apart = " OFFSET 0)" if each_pk is not None else ")"
    if (found := _label_rows(labels)) is not None:
        parts.append(
            f"SELECT 'label', in_dataset, in_split, worker_id, label, own, {_VOTES}, gold, written, bucket,"
            f" NULL::boolean, count(*) FROM {rows_of}{found[0]}{kept_apart} AS labels"
            " GROUP BY 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12"
        )
        params += [each_pk, *found[1]] if each_pk is not None else found[1]
    if (found := _writer_rows(pairs)) is not None:
        parts.append(
            "SELECT 'writer', dataset_id, in_split, author_id, NULL, NULL, NULL, NULL, NULL, gold_label,"
            f" author_label, NULL, five, count(*) FROM {rows_of}{found[0]}{kept_apart} AS pairs"
            " GROUP BY 2, 3, 4, 10, 11, 13"
        )
        params += [each_pk, *found[1]] if each_pk is not None else found[1]
    return (" UNION ALL ".join(parts), params) if parts else None


def _rows_of(statement: tuple[str, Sequence[Any]] | None) -> tallies.Truth:
    """Run a `_statement`: {table: {key: n}}."""
    truth: dict[type[Tally], Counter[Key]] = {model: Counter() for model, _ in TABLES}
    if statement is None:
        return cast(tallies.Truth, truth)
    with connection.cursor() as cursor:
        cursor.execute(*statement)
        for kind, dataset_id, split, worker_id, label, own, *votes, gold, written, bucket, five, n in cursor.fetchall():
            if kind == "writer":
                truth[WriterTally][(dataset_id, split, worker_id, written, gold, five)] += n
                continue
            loo = others_gold(label, own, votes)
            truth[WorkerLabelTally][(dataset_id, split, worker_id, label, loo, gold, written)] += n
            if bucket is not None:
                truth[WorkerSecondsTally][(dataset_id, split, worker_id, bucket)] += n
    return cast(tallies.Truth, truth)  # the counters are the rows


def _rows(labels: QuerySet[ValidationLabel], pairs: QuerySet[Pair]) -> tallies.Truth:
    return _rows_of(_statement(labels, pairs))


class _Pairs:
    """Where a statement of some pairs' rows takes their pks (an array parameter)."""


_PAIRS = _Pairs()
_pairs_statement: list[tuple[str, tuple[Any, ...]]] = []  # compiled once a process

# Each pk of an array parameter looked up on its own (`LATERAL`, kept apart by OFFSET 0, else the
# planner merges it into a join): an index probe per pk. Joined as a set, the planner takes a pass
# over every label of the corpus as the corpus grows.
EACH_PK = "unnest(%s::bigint[]) AS each_pk(pk)"


def _of_pairs(pks: list[int]) -> tuple[str, list[Any]]:
    """The statement of these pairs' rows, each pair's labels looked up by index (`EACH_PK`),
    compiled once a process: building it through the ORM cost more than running it."""
    if not _pairs_statement:
        pk = RawSQL("each_pk.pk", ())
        labels = ValidationLabel.objects.filter(pair_id=pk).order_by()  # grouped: no sort of each pair's labels
        compiled = _statement(labels, Pair.objects.filter(pk=pk), each_pk=_PAIRS)
        assert compiled is not None  # a filter by a column always compiles
        _pairs_statement.append((compiled[0], tuple(compiled[1])))
    sql, params = _pairs_statement[0]
    return sql, [pks if value is _PAIRS else value for value in params]


PAIRS_PER_READ = 5_000  # pairs whose rows one statement reads (an exclusion's pairs may be many)


def read(pair_pks: Iterable[int]) -> tallies.Truth:
    """The rows of these pairs as they stand (under their row locks: the writer's "before")."""
    pks = sorted(set(pair_pks))
    summed: dict[type[Tally], Counter[Key]] = {model: Counter() for model, _ in TABLES}
    for start in range(0, len(pks), PAIRS_PER_READ):
        for model, counted in _rows_of(_of_pairs(pks[start : start + PAIRS_PER_READ])).items():
            summed[model].update(counted)
    return cast(tallies.Truth, summed)


def moved(before: tallies.Truth, pair_pks: Iterable[int]) -> int:
    """Append the difference between these pairs' rows now and `before` (`read` of the same pairs
    earlier in this transaction, under their row locks); returns the delta rows written."""
    return _insert_difference(before, read(pair_pks))


def _insert_difference(before: tallies.Truth, after: tallies.Truth) -> int:
    written = 0
    for model, key in TABLES:
        deltas: Counter[Key] = Counter(after.get(model, {}))
        deltas.subtract(before.get(model, {}))
        written += tallies.insert_deltas(model, key, deltas)
    return written


def pairs_added(pair_pks: Iterable[int]) -> int:
    """New pairs (their labels and counters written): their rows, nothing before them."""
    return _insert_difference({}, read(pair_pks))


def pairs_moving_split(sender: Any, pairs: QuerySet[Pair], split: str, **kwargs: Any) -> None:
    """Premises move to `split` with these pairs (read before the update): their rows move too."""
    moving = pairs.values("pk")
    rows = _rows(ValidationLabel.objects.filter(pair__in=moving), Pair.objects.filter(pk__in=moving))
    for model, key in TABLES:
        tallies.insert_deltas(model, key, split_moved(rows[model], split))


def truth(dataset: Dataset | None) -> tallies.Truth:
    """Every table's rows grouped from the labels and pairs (of a dataset, or all)."""
    if dataset is None:
        return _rows(ValidationLabel.objects.all(), Pair.objects.all())
    return _rows(ValidationLabel.objects.filter(pair__dataset=dataset), Pair.objects.filter(dataset=dataset))


# Registered in corpus.apps.
TALLY = tallies.Maintained(
    "worker",
    TABLES,
    truth,
    "the validation labels and pairs",
    receivers=((signals.pairs_moving_split, pairs_moving_split),),
)


# --- reading ---------------------------------------------------------------------------------------


def _scope_condition(scope: Scope, column: str = "dataset_id") -> tuple[str, list[Any]]:
    found = scope.sql(column)
    return found if found is not None else ("TRUE", [])


def _split_condition(scope: Scope) -> tuple[str, list[Any]]:
    return ("split = %s", [scope.split]) if scope.split else ("TRUE", [])


# The figures of `label_figures` (quality.selectors), each a sum of `n` over the rows where a
# condition holds: (name, condition, its parameters).
_FIGURES: tuple[tuple[str, str, list[Any]], ...] = (
    ("n", "TRUE", []),
    ("loo_items", "loo_gold <> %s", [NO_GOLD]),
    ("loo_agreements", "loo_gold = label", []),
    *((f"own_{label}", "label = %s", [label]) for label in LABELS),
    *((f"three_way_{label}", "label = %s AND scheme = %s", [label, THREE_WAY_SCHEME]) for label in LABELS),
    *((f"loo_own_{label}", "label = %s AND loo_gold <> %s", [label, NO_GOLD]) for label in LABELS),
    *((f"loo_gold_{label}", "loo_gold = %s", [label]) for label in LABELS),
    ("with_gold", "gold_label <> %s", [NO_GOLD]),
    ("gold_agreements", "gold_label = label", []),
)
FIGURE_NAMES = tuple(name for name, _, _ in _FIGURES)
MIDDLE_NAMES = ("timed", "lower_middle", "upper_middle")


def worker_sums(
    scope: Scope = EVERYTHING,
    *,
    medians: bool = True,
    only: Sequence[str] = FIGURE_NAMES,
) -> dict[int, dict[str, Any]]:
    """{worker id: figures} of the scope's scored labels, summed from the tally in one statement:
    the counts of `FIGURE_NAMES` (or of those in `only`), and (with `medians`) the timed labels
    `timed` with the buckets of the lower and upper middle ones (the median lies within their
    bounds; None without timed labels). Workers whose labels sum to none are left out."""
    datasets_sql, scope_params = _scope_condition(scope, "t.dataset_id")
    split_sql, split_params = _split_condition(scope)
    figures, params = [], []
    wanted = [figure for figure in _FIGURES if figure[0] in only]
    for name, condition, values in wanted:
        # n::integer: a sum of integers is a bigint, of bigints a numeric (several times slower).
        figures.append(f"coalesce(sum(n::integer) FILTER (WHERE {condition}), 0) AS {name}")
        params += values
    labels = WorkerLabelTally._meta.db_table
    sql = f"""
        WITH figures AS (
            SELECT worker_id, {", ".join(figures)}
            FROM (SELECT t.*, d.label_scheme AS scheme FROM {labels} t JOIN {Dataset._meta.db_table} d
                  ON d.id = t.dataset_id WHERE {datasets_sql} AND {split_sql}) AS rows
            GROUP BY worker_id HAVING sum(n::integer) <> 0
        )"""
    params += [*scope_params, *split_params]
    if medians:
        # Each worker's histogram as two arrays in bucket order: the middle buckets are found in
        # Python (a running sum over SQL windows cost twice as much).
        sql += f""", buckets AS (
            SELECT worker_id, bucket, sum(n::integer) AS n FROM {WorkerSecondsTally._meta.db_table} t
            WHERE {datasets_sql} AND {split_sql} GROUP BY worker_id, bucket HAVING sum(n::integer) <> 0
        ), histograms AS (
            SELECT worker_id, array_agg(bucket ORDER BY bucket) AS buckets, array_agg(n ORDER BY bucket) AS counts
            FROM buckets GROUP BY worker_id
        )
        SELECT figures.*, histograms.buckets, histograms.counts FROM figures LEFT JOIN histograms USING (worker_id)"""
        params += [*scope_params, *split_params]
    else:
        sql += " SELECT figures.*, NULL, NULL FROM figures"
    names = ("worker_id", *(name for name, _, _ in wanted))
    sums = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for *row, buckets, counts in cursor.fetchall():
            sums[row[0]] = dict(zip(names, row, strict=True)) | dict(
                zip(MIDDLE_NAMES, _middles(buckets, counts), strict=True)
            )
    return sums


def _middles(buckets: list[int] | None, counts: list[int] | None) -> tuple[int, int | None, int | None]:
    """(timed labels, the bucket of the lower middle one, of the upper middle one) of a histogram."""
    if not buckets or not counts:
        return 0, None, None
    timed = sum(counts)
    lower_rank, upper_rank = (timed + 1) // 2, timed // 2 + 1
    lower = upper = None
    upto = 0
    for bucket, n in zip(buckets, counts, strict=True):
        upto += n
        if lower is None and upto >= lower_rank:
            lower = bucket
        if upto >= upper_rank:
            upper = bucket
            break
    return timed, lower, upper


def writer_sums(scope: Scope = EVERYTHING) -> dict[int, dict[str, int]]:
    """{author id: figures} of the scope's written pairs, summed from the tally in one statement:
    `n`, `with_gold`, `author_is_gold`, `five` (all five labels in) and `five_differs` (of those,
    gold differs from the label written for)."""
    datasets_sql, scope_params = _scope_condition(scope)
    split_sql, split_params = _split_condition(scope)
    sql = (
        "SELECT worker_id, sum(n::integer),"
        " coalesce(sum(n::integer) FILTER (WHERE gold_label <> %s), 0),"
        " coalesce(sum(n::integer) FILTER (WHERE gold_label = author_label), 0),"
        " coalesce(sum(n::integer) FILTER (WHERE five_labels), 0),"
        " coalesce(sum(n::integer) FILTER (WHERE five_labels AND gold_label <> author_label), 0)"
        f" FROM {WriterTally._meta.db_table} WHERE {datasets_sql} AND {split_sql}"
        " GROUP BY worker_id HAVING sum(n::integer) <> 0"
    )
    names = ("n", "with_gold", "author_is_gold", "five", "five_differs")
    with connection.cursor() as cursor:
        cursor.execute(sql, [NO_GOLD, *scope_params, *split_params])
        return {row[0]: dict(zip(names, row[1:], strict=True)) for row in cursor.fetchall()}


def written_label_counts(worker_ids: Sequence[int]) -> list[tuple[int, str, str, str, int]]:
    """[(worker id, label, the label the pair was written for, label scheme, labels)] of these
    workers' scored labels on pairs written for a label, over every dataset."""
    if not worker_ids:
        return []
    sql = (
        f"SELECT t.worker_id, t.label, t.author_label, d.label_scheme, sum(t.n::integer)"
        f" FROM {WorkerLabelTally._meta.db_table} t JOIN {Dataset._meta.db_table} d ON d.id = t.dataset_id"
        " WHERE t.worker_id = ANY(%s) AND t.author_label = ANY(%s)"
        " GROUP BY 1, 2, 3, 4 HAVING sum(t.n::integer) <> 0"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(worker_ids), list(LABELS)])
        return [tuple(row) for row in cursor.fetchall()]
