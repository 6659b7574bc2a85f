"""Multi-premise items (MPE): statistics per item set, the researcher's adjudication queue, word overlap."""

from django.contrib import messages
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_POST

from corpus.agreement import mpe_statistics
from corpus.labels import LABELS
from corpus.mpe_wording import ANSWER_FOR_LABEL
from corpus.scope import Scope as CorpusScope
from corpus.selectors import adjudication_queue
from corpus.services import LabelRefused
from dashboard.queries import mpe as queries
from teams import access
from validation import adjudication
from validation.premise_table import PAPER_CATEGORY_PERCENT, PAPER_HEURISTIC_PERCENT, PAPER_MAJORITY_PERCENT

from .common import Scope, redirect_back, render_page, researcher_required

QUEUE_SHOWN = 50
# MPE's own figures for its released data (../shared/data/README.md), shown beside ours.
# MPE §5.2, Table 4 (dev): items by the number of SPE labels agreeing with the MPE label; voting accuracies.
SPE_PAPER = {
    "categories": PAPER_CATEGORY_PERCENT,
    "majority": PAPER_MAJORITY_PERCENT,
    "heuristic": PAPER_HEURISTIC_PERCENT,
}
PAPER_FIGURES = {
    "train": {
        "unanimous": 27.55,
        "gold_equals_majority": 87.2,
        "gold": {"entailment": 2584, "neutral": 2092, "contradiction": 3324},
    },
    "dev": {"gold_equals_majority": 85.4, "gold": {"entailment": 325, "neutral": 273, "contradiction": 402}},
}


@researcher_required
def mpe(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request)
    sets = []
    for dataset in queries.multi_premise_datasets(scope.within):
        one = CorpusScope.of_dataset(dataset, scope.split)
        sets.append(
            {
                "dataset": dataset,
                "stats": mpe_statistics(one),
                "queue": list(adjudication_queue(one)[:QUEUE_SHOWN]),
                "overlap": queries.highest_overlap(dataset),
                "paper": PAPER_FIGURES.get(scope.split or "", {}),
                "spe": queries.premise_labels(dataset, scope.split),
            }
        )
    return render_page(
        request,
        "dashboard/mpe.html",
        "mpe",
        scope,
        sets=sets,
        answers=list(ANSWER_FOR_LABEL.items()),
        spe_paper=SPE_PAPER,
    )


@researcher_required
@require_POST
def adjudicate_item(request: HttpRequest, pair_id: int) -> HttpResponseBase:
    """The researcher's label becomes the item's gold label; its five judgments stay. The same
    decision as the adjudication queue's (validation.adjudication), its reason the item's split."""
    pair = access.checked(
        queries.multi_premise_item(pair_id),
        request.user,
        access.LABEL,
        via="dataset__team",
        missing="No such multi-premise item.",
    )
    label = request.POST.get("label", "")
    try:
        if label not in LABELS:
            raise LabelRefused(f"'{label}' is not a label; choose one of {', '.join(LABELS)}.")
        adjudication.decide(
            pair,
            label,
            researcher=request.user,
            reason=queries.adjudication_reason(pair) or "MPE adjudication",
            note=request.POST.get("note", "")[:1000],
        )
    except LabelRefused as refused:
        messages.error(request, f"Item {pair.pair_id} was not changed: {refused.message}")
    else:
        messages.success(request, f"Item {pair.pair_id}: gold label is now {pair.gold_label}; its judgments stay.")
    return redirect_back(request, "dashboard:mpe")
