from collections.abc import Iterable

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render

from corpus import labels as scheme_labels
from dashboard import plots
from dashboard.figure_cache import cached
from dashboard.queries import corpus as queries

from .common import Scope, page_context, researcher_required


@researcher_required
def corpus(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request)
    overview = queries.corpus_overview(scope.dataset, scope.split)
    # A two-way (or ordinal) dataset's labels in its own words: entailed / not-entailed.
    scheme = scope.dataset.label_scheme if scope.dataset is not None else None
    overview = {
        **overview,
        "gold": _in_scheme(scheme, overview["gold"]),
        "author": _in_scheme(scheme, overview["author"]),
    }
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


def _in_scheme(scheme: str | None, counts: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """[(label, n)] of stored labels renamed in the scheme's words, without the labels it has none of."""
    kept = (*scheme_labels.stored_categories(scheme), scheme_labels.NO_GOLD)
    return [(scheme_labels.to_scheme(scheme, label), n) for label, n in counts if label in kept]
