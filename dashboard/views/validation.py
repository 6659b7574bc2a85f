from django.shortcuts import render

from corpus.selectors import genre_names
from dashboard.queries import validation as queries

from .common import Scope, page_context, researcher_required

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
def validation(request):
    scope = Scope(request)
    overview = queries.validation_overview(scope.dataset, scope.split)
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
    # "-" holds two kinds of pair: five labels without a majority, and pairs still being validated.
    no_consensus = round((agreement.get("no_gold") or 0) * (agreement.get("five_label_pairs") or 0))
    gold_labels = (
        [label for label in counts if label != "-"] if scheme_labels else ("entailment", "neutral", "contradiction")
    )
    gold_counts = [(label, label, counts.get(label, 0)) for label in gold_labels] + [
        ("-", "no consensus (five labels, no 3 agree)", no_consensus),
        ("-", "not yet validated (fewer than five labels)", counts.get("-", 0) - no_consensus),
    ]
    names = genre_names()
    per_genre = sorted(
        ((slug, names.get(slug, slug), figures) for slug, figures in (agreement.get("per_genre") or {}).items()),
        key=lambda row: row[1],
    )
    return render(
        request,
        "dashboard/validation.html",
        page_context(
            request,
            "validation",
            scope,
            agreement=agreement,
            table=table,
            kappas=kappas,
            gold_counts=gold_counts,
            per_genre=per_genre,
            label_counts=overview["label_counts"],
            stopping=overview.get("stopping") or {},
        ),
    )
