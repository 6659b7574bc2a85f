"""The dashboard's drawn figures as images of their own (`/dashboard/figures/<name>.svg`).

A page's <img> address carries a digest of the numbers it shows, so the page never waits for
matplotlib; the image is drawn once per version and kept in the cache under it (so never out of
date). A chart's `numbers` reads what it draws with its page's selectors, through the figure cache.
"""

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.urls import reverse

from corpus.models import Dataset, Split
from corpus.scope import Scope
from corpus.selectors import genre_names
from dashboard import plots, results
from dashboard.queries import runs
from dashboard.queries.collection import collection_overview
from dashboard.queries.corpus import corpus_overview, labels_in_scheme
from teams import access

from .figure_cache import STALE_KEEP_SECONDS

Params = Mapping[str, str]


class NoFigure(LookupError):
    """The address names nothing to draw (no such run, or a run without this figure)."""


@dataclass(frozen=True)
class Viewer:
    """The teams whose data a figure may draw (`teams.access.figure_teams`; None: every team)."""

    teams: frozenset[int] | None


@dataclass(frozen=True)
class Chart:
    numbers: Callable[[Params, Viewer], Any]  # what it draws for the address's parameters, JSON-able
    draw: Callable[[Any], str]  # numbers -> SVG


def _scope(params: Params, viewer: Viewer) -> Scope:
    """?dataset=slug&split=dev as the pages read them (another team's dataset is unknown: all)."""
    slug = params.get("dataset", "")
    dataset = Dataset.objects.filter(slug=slug).first() if slug else None
    if dataset is not None and viewer.teams is not None and dataset.team_id not in viewer.teams:
        dataset = None
    split = params.get("split", "")
    return Scope.figures_of(dataset, viewer.teams, split if split in Split.values else None)


def _lengths(params: Params, viewer: Viewer) -> Any:
    overview = corpus_overview(_scope(params, viewer))
    return [overview["premise_lengths"], overview["hypothesis_lengths"]]


def _labels(params: Params, viewer: Viewer) -> Any:
    scope = _scope(params, viewer)
    return list(labels_in_scheme(scope, corpus_overview(scope)))


def genre_matrix(report: results.Report) -> Any:
    """The numbers of a run's genre × genre figure (MultiNLI Table 5), genres by name."""
    matrix = report.genre_matrix or {}
    names = genre_names()
    return [matrix["values"], [names.get(g, g) for g in matrix["rows"]], [names.get(g, g) for g in matrix["columns"]]]


def confusion(report: results.Report) -> Any:
    return (
        [report.confusion["values"], report.confusion["rows"], report.confusion["columns"]]
        if report.confusion
        else None
    )


def _of_run(
    numbers: Callable[[results.Report], Any], present: Callable[[results.Report], Any]
) -> Callable[[Params, Viewer], Any]:
    def read(params: Params, viewer: Viewer) -> Any:
        run_id = params.get("run", "")
        run = runs.training_run(int(run_id)) if run_id.isdigit() else None
        if run is not None and not access.in_teams([run], viewer.teams, attr="snapshot.team_id"):
            run = None  # another team's run: as unknown as a missing one
        report = results.run_report(run) if run is not None else None
        if report is None or not present(report):
            raise NoFigure
        return numbers(report)

    return read


def _genre_heatmap(numbers: Any) -> str:
    values, rows, columns = numbers
    title = "Accuracy: training genre × evaluation genre"
    return plots.heatmap(values, rows, columns, title, xlabel="evaluated on", ylabel="trained on")


def _confusion_heatmap(numbers: Any) -> str:
    values, rows, columns = numbers
    return plots.heatmap(values, rows, columns, "Confusion matrix", xlabel="predicted", ylabel="gold", percent=False)


CHARTS: dict[str, Chart] = {
    "hourly": Chart(lambda params, viewer: collection_overview(_scope(params, viewer))["hourly"], plots.hourly_bars),
    "lengths": Chart(_lengths, lambda lengths: plots.length_histogram(*lengths)),
    "labels": Chart(_labels, lambda labels: plots.label_bars(*labels)),
    "genre-matrix": Chart(_of_run(genre_matrix, lambda report: report.genre_matrix), _genre_heatmap),
    "confusion": Chart(_of_run(confusion, lambda report: report.confusion), _confusion_heatmap),
}


def version(numbers: Any) -> str:
    """A digest of the numbers: the same figure has the same one in every process."""
    text = json.dumps(numbers, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def url(name: str, numbers: Any, query: str = "") -> str:
    """The address of chart `name` drawn from `numbers` (what the page shows); `query` the
    parameters that say what it is of (`Scope.query()`, `run=12`)."""
    return f"{reverse('dashboard:chart', args=[name])}?{query + '&' if query else ''}v={version(numbers)}"


def svg(name: str, params: Params, viewer: Viewer) -> tuple[str, str]:
    """(SVG, version), drawn only when this version has not been. KeyError: no such chart; NoFigure: nothing to draw."""
    chart = CHARTS[name]
    numbers = chart.numbers(params, viewer)
    current = version(numbers)
    key = f"dashboard:chart:{name}:{current}"
    drawn = cache.get(key)
    if drawn is None:
        drawn = chart.draw(numbers)
        cache.set(key, drawn, STALE_KEEP_SECONDS)
    return str(drawn), current
