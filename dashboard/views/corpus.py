from django.http import HttpRequest
from django.http.response import HttpResponseBase

from dashboard import charts
from dashboard.queries import corpus as queries

from .common import Scope, render_page, researcher_required


@researcher_required
def corpus(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request)
    overview = queries.corpus_overview(scope.within)
    # A two-way (or ordinal) dataset's labels in its own words: entailed / not-entailed.
    gold, author_counts = queries.labels_in_scheme(scope.within, overview)
    lengths = [overview["premise_lengths"], overview["hypothesis_lengths"]]
    overview = {**overview, "gold": gold, "author": author_counts}
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
    return render_page(
        request,
        "dashboard/corpus.html",
        "corpus",
        scope,
        overview=overview,
        labels=labels,
        label_chart=charts.url("labels", [gold, author_counts], scope.query()),
        length_chart=charts.url("lengths", lengths, scope.query()),
    )
