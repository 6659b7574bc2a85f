"""The dashboard's views only translate; every read is in `dashboard/queries/` (or
another app's selectors), and no page's statement count grows with the corpus."""

import ast
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.dashboard import factories

VIEWS = Path(__file__).resolve().parents[2] / "dashboard" / "views"
# Queryset and model-instance methods whose names nothing else in the views uses.
ORM_METHODS = {
    "aggregate",
    "annotate",
    "bulk_create",
    "defer",
    "distinct",
    "exclude",
    "exists",
    "extra",
    "filter",
    "first",
    "get_or_create",
    "in_bulk",
    "iterator",
    "last",
    "only",
    "order_by",
    "prefetch_related",
    "raw",
    "refresh_from_db",
    "select_for_update",
    "select_related",
    "update_or_create",
    "values_list",
}
ORM_NAMES = {"get_object_or_404", "get_list_or_404"}


def orm_calls(source):
    """(line, what) of every direct ORM use in a module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "objects":
            found.append((node.lineno, ".objects"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ORM_METHODS:
            found.append((node.lineno, f".{node.func.attr}()"))
        elif isinstance(node, ast.Name) and node.id in ORM_NAMES:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in ("save", "delete") and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, f".{node.attr}"))
    return found


def test_the_check_sees_an_orm_call():
    assert {what for _, what in orm_calls("Pair.objects.filter(pk=1).first()")} == {".objects", ".filter()", ".first()"}
    assert orm_calls("get_object_or_404(Pair, pk=1)") == [(1, "get_object_or_404")]
    assert orm_calls("run.refresh_from_db()") == [(1, ".refresh_from_db()")]
    assert orm_calls("queries.recent_runs(); request.GET.get('x'); names.get(g, g)") == []


def test_no_dashboard_view_module_makes_an_orm_call():
    modules = sorted(VIEWS.glob("*.py"))
    assert len(modules) >= 12
    found = [
        f"{path.name}:{line} {what}" for path in modules for line, what in orm_calls(path.read_text(encoding="utf-8"))
    ]
    assert not found, "move these reads into dashboard/queries/:\n" + "\n".join(found)


PAGES = [
    "dashboard:collection",
    "dashboard:validation",
    "dashboard:corpus",
    "dashboard:workers",
    "dashboard:label_pairs",
    "dashboard:bonuses",
    "dashboard:costs",
    "dashboard:studies",
    "dashboard:pairs",
    "dashboard:reports",
    "dashboard:snapshots",
    "dashboard:training",
    "dashboard:artifacts",
    "dashboard:aggregation",
    "dashboard:mpe",
    "dashboard:recast",
]


def statements_per_page(client, dataset):
    counts = {}
    from artifacts import monitoring

    for name in PAGES:
        cache.clear()
        # Cold for the monitor's model too: a process looks its file up at most every few seconds,
        # which would make the count depend on the clock.
        monitoring._checked.clear()
        with CaptureQueriesContext(connection) as queries:
            response = client.get(reverse(name), {"dataset": dataset.slug})
        assert response.status_code == 200, (name, response.status_code)
        counts[name] = len(queries)
    return counts


@pytest.mark.django_db
def test_no_dashboard_page_runs_more_statements_as_the_corpus_grows(client, researcher, settings):
    """Cold (no figure cache): the same statements for a corpus and for one three times its size,
    so no page reads row by row; and each page stays within a budget a reader can check."""
    settings.DASHBOARD_CACHE_SECONDS = 0
    client.force_login(researcher)
    dataset = factories.corpus()
    small = statements_per_page(client, dataset)
    fiction = factories.genre("fiction")
    for index in range(12):
        premise = factories.premise(dataset, fiction, "dev", f"Another premise number {index} is here.")
        factories.pair(dataset, premise, f"Hypothesis {index}.", [factories.E] * 5)
    large = statements_per_page(client, dataset)
    grew = {name: (small[name], large[name]) for name in PAGES if large[name] != small[name]}
    assert not grew, f"statements (small corpus, 3x corpus) that grew: {grew}"
    over = {name: n for name, n in large.items() if n > 40}
    assert not over, f"pages over 40 statements: {over}"
