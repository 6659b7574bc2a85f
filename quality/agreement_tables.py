"""Agreement as data: the validation page's agreement figures as flat tables, for the
CSV downloads beside the page and /api/validation/agreement/. Each table is a list of rows, each a
dict with the same keys (its columns): "overall" (Table 2's rows, κ and α), "per_genre", "per_label"
(κ per label and the gold counts), "annotator_pairs" (each two annotators over the pairs both
labelled) and "worker_vs_rest" (each worker against the gold of the others' labels, leave-one-out).

Read-only; every figure comes from the one place that computes it (corpus.agreement,
the worker tally corpus.worker_tally); the annotator pairs are one grouped self-join of the labels."""

from typing import Any

from django.db import connection

from corpus.agreement import agreement_stats
from corpus.models import Pair, Premise, ValidationLabel, Worker
from corpus.scope import EVERYTHING, Scope
from corpus.worker_tally import worker_sums

TABLES = ("overall", "per_genre", "per_label", "annotator_pairs", "worker_vs_rest")
OVERALL_KEYS = (
    "pairs",
    "five_label_pairs",
    "unanimous",
    "individual_eq_gold",
    "individual_eq_author",
    "gold_eq_author",
    "gold_ne_author",
    "no_gold",
)


def _worker_names(ids: set[int]) -> dict[int, str]:
    """A worker's market id (or username) as the workers page shows it: researchers only read these."""
    rows = Worker.objects.filter(pk__in=ids).values_list("pk", "external_id", "user__username")
    return {pk: external or username or f"worker {pk}" for pk, external, username in rows}


def _overall(stats: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [{"figure": key, "value": stats.get(key)} for key in OVERALL_KEYS]
    kappa = stats.get("fleiss_kappa") or {}
    rows.append({"figure": "fleiss_kappa", "value": kappa.get("overall")})
    for metric, figures in (stats.get("krippendorff_alpha") or {}).items():
        rows.append({"figure": f"krippendorff_alpha_{metric}", "value": figures.get("alpha")})
    return rows


def _per_genre(stats: dict[str, Any]) -> list[dict[str, Any]]:
    alpha = ((stats.get("krippendorff_alpha") or {}).get("nominal") or {}).get("per_genre", {})
    return [
        {
            "genre": slug,
            "pairs": figures["pairs"],
            "five_label_pairs": figures["five_label_pairs"],
            "agreement": figures["agreement"],
            "krippendorff_alpha": (alpha.get(slug) or {}).get("alpha"),
        }
        for slug, figures in stats.get("per_genre", {}).items()
    ]


def _per_label(stats: dict[str, Any]) -> list[dict[str, Any]]:
    kappa = stats.get("fleiss_kappa") or {}
    gold = stats.get("gold_counts") or {}
    labels = [label for label in kappa if label not in ("overall", "ordinal")]
    return [{"label": label, "fleiss_kappa": kappa.get(label), "gold_pairs": gold.get(label, 0)} for label in labels]


def annotator_pairs(scope: Scope, *, min_shared: int = 1) -> list[dict[str, Any]]:
    """Each two annotators (authors and validators with a worker) over the pairs both labelled: how
    many, and the share on which they gave the same label."""
    where = ["a.worker_id IS NOT NULL", "b.worker_id IS NOT NULL", "a.worker_id < b.worker_id"]
    params: list[Any] = []
    if (condition := scope.sql("p.dataset_id")) is not None:
        where.append(condition[0])
        params.extend(condition[1])
    if scope.split:
        where.append("pr.split = %s")
        params.append(scope.split)
    labels, pairs, premises = ValidationLabel._meta.db_table, Pair._meta.db_table, Premise._meta.db_table
    sql = (
        "SELECT a.worker_id, b.worker_id, COUNT(*), SUM(CASE WHEN a.label = b.label THEN 1 ELSE 0 END)"
        f" FROM {labels} a INNER JOIN {labels} b ON b.pair_id = a.pair_id"
        f" INNER JOIN {pairs} p ON p.id = a.pair_id INNER JOIN {premises} pr ON pr.id = p.premise_id"
        f" WHERE {' AND '.join(where)} GROUP BY a.worker_id, b.worker_id HAVING COUNT(*) >= %s"
        " ORDER BY COUNT(*) DESC, a.worker_id, b.worker_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, min_shared])
        found = cursor.fetchall()
    names = _worker_names({row[0] for row in found} | {row[1] for row in found})
    return [
        {"worker_a": names.get(a, a), "worker_b": names.get(b, b), "shared_pairs": n, "agreement": same / n}
        for a, b, n, same in found
    ]


def worker_vs_rest(scope: Scope) -> list[dict[str, Any]]:
    """Each validator against the rest: the share of their labels that match the gold label of the
    other labels of the pair (leave-one-out, the workers page's figure), over the pairs that have one:
    summed from the worker tally (`corpus.worker_tally`), as the workers page does."""
    figures = worker_sums(scope.whole(), medians=False, only=("n", "loo_items", "loo_agreements"))
    names = _worker_names(set(figures))
    rows = [
        {
            "worker": names.get(pk, pk),
            "labels": row["n"],
            "pairs_with_others_gold": row["loo_items"],
            "agreement_with_rest": row["loo_agreements"] / row["loo_items"] if row["loo_items"] else None,
        }
        for pk, row in figures.items()
    ]
    return sorted(rows, key=lambda row: str(row["worker"]))


def agreement_tables(scope: Scope = EVERYTHING, tables: tuple[str, ...] = TABLES) -> dict[str, list[dict[str, Any]]]:
    """The named tables of a scope (a dataset, a split): {table name: rows}."""
    stats = agreement_stats(scope) if {"overall", "per_genre", "per_label"} & set(tables) else {}
    builders = {
        "overall": lambda: _overall(stats),
        "per_genre": lambda: _per_genre(stats),
        "per_label": lambda: _per_label(stats),
        "annotator_pairs": lambda: annotator_pairs(scope),
        "worker_vs_rest": lambda: worker_vs_rest(scope),
    }
    return {name: builders[name]() for name in tables}
