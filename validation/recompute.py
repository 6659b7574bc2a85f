"""Recomputing every pair's counters and gold label from the label table, set-based.

The counters on `Pair` are moved one label at a time as labels arrive; this is the check and
the repair: one query lists the pairs whose stored counters disagree with the label table,
one UPDATE sets them right. Labels of excluded workers (worker quality, SNLI §2.2) are left
out; imported labels (worker None) always count.
"""
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import Count, F, Func, IntegerField, OuterRef, Q, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.sql import Query

from collection.models import Dataset, Label, Pair, Worker
from validation.gold import gold_expression
from validation.models import ValidationLabel

SHOWN_DISAGREEMENTS = 20
COUNTERS = ("label_count", "entailment_votes", "neutral_votes", "contradiction_votes", "gold_label")


@dataclass
class RecomputeReport:
    pairs_checked: int = 0
    disagreements: int = 0
    fixed: int = 0
    examples: list = field(default_factory=list)  # dicts: pair_id, stored, recomputed

    def summary(self):
        lines = [
            f"pairs checked: {self.pairs_checked}",
            f"pairs whose stored counters disagree with the label table: {self.disagreements}",
        ]
        for example in self.examples:
            lines.append(f"    {example['pair_id']}: stored {example['stored']} recomputed {example['recomputed']}")
        if self.disagreements > len(self.examples):
            lines.append(f"    ... and {self.disagreements - len(self.examples)} more")
        lines.append(f"pairs fixed: {self.fixed}")
        return "\n".join(lines)


def _scope(dataset):
    pairs = Pair.objects.all()
    if dataset is not None:
        if not isinstance(dataset, Dataset):
            dataset = Dataset.objects.get(slug=dataset)
        pairs = pairs.filter(dataset=dataset)
    return pairs


def _counted(prefix=""):
    """Labels that count: imported ones (no worker) and those of workers not excluded."""
    return Q(**{f"{prefix}worker__isnull": True}) | Q(**{f"{prefix}worker__is_excluded": False})


def _with_recomputed(pairs):
    """Annotate n/e/nu/c/gold recomputed from the label table (one LEFT JOIN ... GROUP BY)."""
    counted = _counted("labels__")

    def votes(label=None):
        condition = counted if label is None else counted & Q(labels__label=label)
        return Count("labels", filter=condition)

    return pairs.annotate(
        r_label_count=votes(),
        r_entailment_votes=votes(Label.ENTAILMENT),
        r_neutral_votes=votes(Label.NEUTRAL),
        r_contradiction_votes=votes(Label.CONTRADICTION),
    ).annotate(
        r_gold_label=gold_expression(F("r_entailment_votes"), F("r_neutral_votes"), F("r_contradiction_votes"))
    )


def _disagreeing(pairs):
    differs = Q()
    for name in COUNTERS:
        differs |= ~Q(**{name: F(f"r_{name}")})
    return _with_recomputed(pairs).filter(differs)


def find_disagreements(dataset=None, limit=SHOWN_DISAGREEMENTS):
    """(count, first `limit` examples) of pairs whose counters differ from the label table; one query."""
    count, examples = 0, []
    rows = _disagreeing(_scope(dataset)).values_list("pair_id", *COUNTERS, *(f"r_{name}" for name in COUNTERS))
    for row in rows.iterator(chunk_size=2000):
        count += 1
        if len(examples) < limit:
            examples.append(
                {"pair_id": row[0], "stored": tuple(row[1:6]), "recomputed": tuple(row[6:11])}
            )
    return count, examples


def recompute_gold(dataset=None, fix=True):
    """Report pairs whose counters disagree with the label table, then set every pair right.

    Returns a `RecomputeReport`. The fix is ONE set-based UPDATE: `UPDATE ... FROM (SELECT
    pair_id, count(*) FILTER (...) ... GROUP BY pair_id)` on PostgreSQL, a correlated-subquery
    UPDATE elsewhere (SQLite).
    """
    pairs = _scope(dataset)
    with transaction.atomic():
        if fix and connection.vendor == "postgresql":
            # Labels arriving meanwhile wait until the counters are set (SHARE blocks INSERT), so a
            # label committed during the recompute cannot be missed. SQLite serialises writes anyway.
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {connection.ops.quote_name(ValidationLabel._meta.db_table)} IN SHARE MODE")
        report = RecomputeReport(pairs_checked=pairs.count())
        report.disagreements, report.examples = find_disagreements(dataset)
        if fix and report.disagreements:
            if connection.vendor == "postgresql":
                report.fixed = _update_from_grouped_labels(pairs)
            else:
                report.fixed = _update_with_correlated_subqueries(pairs)
    return report


# --- the two forms of the one UPDATE ------------------------------------------------------------

def _update_with_correlated_subqueries(pairs):
    def votes(label=None):
        labels = ValidationLabel.objects.filter(_counted(), pair=OuterRef("pk"))
        if label is not None:
            labels = labels.filter(label=label)
        # COUNT without GROUP BY: 0 (not NULL) for a pair without labels.
        return Subquery(labels.order_by().annotate(n=Func("pk", function="COUNT")).values("n"), output_field=IntegerField())

    return pairs.filter(pk__in=_disagreeing(pairs).values("pk")).update(
        label_count=votes(),
        entailment_votes=votes(Label.ENTAILMENT),
        neutral_votes=votes(Label.NEUTRAL),
        contradiction_votes=votes(Label.CONTRADICTION),
        gold_label=gold_expression(votes(Label.ENTAILMENT), votes(Label.NEUTRAL), votes(Label.CONTRADICTION)),
    )


def _sql(expression, model=Pair):
    """Compile an ORM expression to (sql, params) for splicing into a raw statement."""
    query = Query(model)
    compiler = query.get_compiler(connection=connection)
    return compiler.compile(expression.resolve_expression(query))


def _update_from_grouped_labels(pairs):
    quote = connection.ops.quote_name
    pair_table, label_table, worker_table = (
        quote(Pair._meta.db_table), quote(ValidationLabel._meta.db_table), quote(Worker._meta.db_table)
    )
    # The pairs in scope, as SQL (dataset filter or none).
    scope_sql, scope_params = pairs.values("pk").query.sql_with_params()
    # The gold rule written once (validation/gold.py), compiled over the grouped counts.
    gold_sql, gold_params = _sql(
        gold_expression(*(RawSQL(f"v.{name}", (), output_field=IntegerField()) for name in ("e", "nu", "c")))
    )
    sql = f"""
        UPDATE {pair_table} AS p
        SET label_count = v.n, entailment_votes = v.e, neutral_votes = v.nu, contradiction_votes = v.c,
            gold_label = {gold_sql}
        FROM (
            SELECT s.id AS pair_id,
                   count(l.id) AS n,
                   count(l.id) FILTER (WHERE l.label = %s) AS e,
                   count(l.id) FILTER (WHERE l.label = %s) AS nu,
                   count(l.id) FILTER (WHERE l.label = %s) AS c
            FROM {pair_table} AS s
            LEFT JOIN {label_table} AS l ON l.pair_id = s.id
                 AND (l.worker_id IS NULL OR l.worker_id NOT IN (SELECT id FROM {worker_table} WHERE is_excluded))
            WHERE s.id IN ({scope_sql})
            GROUP BY s.id
        ) AS v
        WHERE p.id = v.pair_id
          AND (p.label_count, p.entailment_votes, p.neutral_votes, p.contradiction_votes, p.gold_label)
              IS DISTINCT FROM (v.n, v.e, v.nu, v.c, {gold_sql})
    """
    params = [
        *gold_params,
        Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value,
        *scope_params,
        *gold_params,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
