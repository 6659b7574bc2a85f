from django.shortcuts import render

from dashboard import plots
from dashboard.figure_cache import cached
from dashboard.queries import corpus as queries

from .common import Scope, page_context, researcher_required


@researcher_required
def corpus(request):
    scope = Scope(request)
    overview = queries.corpus_overview(scope.dataset, scope.split)
    gold_total = sum(n for _, n in overview["gold"]) or 1
    author_total = sum(n for _, n in overview["author"]) or 1
    author = dict(overview["author"])
    labels = [
        {
            "label": label,
            "gold": n,
            "gold_share": n / gold_total,
            "author": author.get(label),
            "author_share": (author.get(label) or 0) / author_total,
        }
        for label, n in overview["gold"]
    ]
    return render(
        request,
        "dashboard/corpus.html",
        page_context(
            request,
            "corpus",
            scope,
            overview=overview,
            labels=labels,
            # Drawing costs more than the queries; the figures live in the cache as long as their numbers.
            label_svg=cached(
                "labels-svg", scope.dataset, scope.split, lambda: plots.label_bars(overview["gold"], overview["author"])
            ),
            length_svg=cached(
                "lengths-svg",
                scope.dataset,
                scope.split,
                lambda: plots.length_histogram(overview["premise_lengths"], overview["hypothesis_lengths"]),
            ),
        ),
    )
