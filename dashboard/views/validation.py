from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase

from base import spreadsheet_safe
from corpus.agreement import adaptive_stopping_in_scope, coverage_sentences
from corpus.labels import LABELS_PER_PAIR
from corpus.selectors import genre_names
from dashboard.queries import validation as queries
from quality.agreement_tables import TABLES, agreement_tables

from .common import Scope, render_page, researcher_required

# MultiNLI Table 2 / SNLI Table 3, in the papers' order: (agreement_stats key, row heading).
AGREEMENT_ROWS = [
    ("unanimous", "Pairs with unanimous gold label"),
    ("individual_eq_gold", "Individual label = gold label"),
    ("individual_eq_author", "Individual label = author's label"),
    ("gold_eq_author", "Gold label = author's label"),
    ("gold_ne_author", "Gold label ≠ author's label"),
    ("no_gold", "No gold label (no 3 labels match)"),
]
KAPPA_ROWS = ["entailment", "neutral", "contradiction", "overall"]
# The papers' reference figures, shown beside ours (percent).
PAPER_FIGURES = {
    "unanimous": (58.3, 58.2),
    "individual_eq_gold": (89.0, 88.7),
    "individual_eq_author": (85.8, 85.2),
    "gold_eq_author": (91.2, 92.6),
    "gold_ne_author": (6.8, 5.6),
    "no_gold": (2.0, 1.8),
}
SNLI_KAPPA = {"entailment": 0.72, "neutral": 0.60, "contradiction": 0.77, "overall": 0.70}


@researcher_required
def validation(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request)
    overview = queries.validation_overview(scope.within)
    agreement = overview["agreement"]
    table = [
        {"key": key, "heading": heading, "value": agreement.get(key), "paper": PAPER_FIGURES.get(key)}
        for key, heading in AGREEMENT_ROWS
    ]
    kappa = agreement.get("fleiss_kappa") or {}
    # Two-way / ordinal datasets name their own categories (corpus.labels); three-way keeps SNLI's rows.
    scheme_labels = [key for key in kappa if key != "overall"] if agreement.get("label_scheme") else None
    kappa_rows = [*scheme_labels, "overall"] if scheme_labels else KAPPA_ROWS
    kappas = [
        {"key": key, "value": kappa.get(key), "paper": None if scheme_labels else SNLI_KAPPA.get(key)}
        for key in kappa_rows
    ]
    counts = agreement.get("gold_counts") or {}
    # Each figure defined once, so the page adds up: every pair is in one gold row, and
    # "-" holds two kinds of pair, five labels without a majority and pairs still short of five.
    # A pair short of five labels may already have a gold label (3 agree, or an imported one).
    no_consensus = agreement.get("no_consensus_pairs") or 0
    no_gold_yet = counts.get("-", 0) - no_consensus
    label_counts = overview["label_counts"]
    fewer_than_five = sum(n for labels, n in label_counts if labels < LABELS_PER_PAIR)
    gold_labels = (
        [label for label in counts if label != "-"] if scheme_labels else ("entailment", "neutral", "contradiction")
    )
    gold_counts = [(label, label, counts.get(label, 0)) for label in gold_labels] + [
        ("-", "no consensus (five labels, no 3 agree)", no_consensus),
        ("-", "no gold label yet (fewer than five labels, no 3 agree so far)", no_gold_yet),
    ]
    short = {"pairs": fewer_than_five, "without_gold": no_gold_yet, "with_gold": fewer_than_five - no_gold_yet}
    names = genre_names()
    # Under an adaptive stopping rule only contested pairs take five labels: κ over them is the
    # agreement of the hard pairs, so the page leads with α (docs/statistics.md, "α beside κ").
    stopping = overview.get("stopping") or {}
    # Not cached, so a researcher who changes the rule sees the page follow at once.
    rules = adaptive_stopping_in_scope(scope.within)
    alpha = agreement.get("krippendorff_alpha") or {}
    alphas = [
        {
            "metric": metric,
            "figure": figure,
            "per_split": sorted(figure["per_split"].items()),
            "per_genre": sorted(
                ((slug, names.get(slug, slug), row) for slug, row in figure["per_genre"].items()),
                key=lambda row: row[1],
            ),
        }
        for metric, figure in alpha.items()
    ]
    per_genre = sorted(
        ((slug, names.get(slug, slug), figures) for slug, figures in (agreement.get("per_genre") or {}).items()),
        key=lambda row: row[1],
    )
    return render_page(
        request,
        "dashboard/validation.html",
        "validation",
        scope,
        agreement=agreement,
        agreement_tables=TABLES,
        table=table,
        kappas=kappas,
        gold_counts=gold_counts,
        per_genre=per_genre,
        label_counts=label_counts,
        short=short,
        stopping=stopping,
        alphas=alphas,
        coverage=coverage_sentences(agreement) if agreement else {},
        adaptive_rules=rules,
        lead_with_alpha=bool(rules or stopping.get("stopped_early_pairs")),
    )


@researcher_required
def agreement_csv(request: HttpRequest, table: str) -> HttpResponseBase:
    """One agreement table of the page's scope as CSV: the same figures as /api/validation/agreement/."""
    if table not in TABLES:
        raise Http404(f"No table {table!r}; one of {', '.join(TABLES)}.")
    scope = Scope(request)
    rows = agreement_tables(scope.within, (table,))[table]
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = "-".join(part for part in (scope.dataset.slug if scope.dataset else "all", scope.split, table) if part)
    response["Content-Disposition"] = f'attachment; filename="agreement-{name}.csv"'
    writer = spreadsheet_safe.dict_writer(response, fieldnames=list(rows[0]) if rows else TABLE_COLUMNS[table])
    writer.writeheader()
    writer.writerows(rows)
    return response


# A table's columns when it has no row yet (the CSV still says what it would hold).
TABLE_COLUMNS = {
    "overall": ["figure", "value"],
    "per_genre": ["genre", "pairs", "five_label_pairs", "agreement", "krippendorff_alpha"],
    "per_label": ["label", "fleiss_kappa", "gold_pairs"],
    "annotator_pairs": ["worker_a", "worker_b", "shared_pairs", "agreement"],
    "worker_vs_rest": ["worker", "labels", "pairs_with_others_gold", "agreement_with_rest"],
}
