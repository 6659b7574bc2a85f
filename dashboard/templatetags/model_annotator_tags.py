"""Sections of the model annotators app on existing dashboard pages (workers, adjudication), as
tags: those pages' views stay as they are."""

from typing import Any

from django import template

from corpus.scope import EVERYTHING
from dashboard.queries import model_annotators as queries
from model_annotators import selectors

register = template.Library()


@register.inclusion_tag("model_annotators/_workers_section.html")
def model_annotators_section(scope: Any) -> dict[str, Any]:
    return {"rows": queries.calibrations(scope.within if scope else EVERYTHING)}


@register.simple_tag
def attach_model_hints(pairs: Any) -> str:
    """Give each pair of the adjudication queue its `model_hints` (one query for the page)."""
    hints = selectors.adjudication_hints(pairs)
    for pair in pairs:
        pair.model_hints = hints.get(pair.pk, [])
    return ""


@register.simple_tag
def attach_writing_checks_by_writer(rows: Any) -> str:
    """Give each row of the workers page its `writing_checks` ({checked, flagged}), beside its typing flags."""
    rows = list(rows)
    counts = queries.checks_by_writer([row["id"] for row in rows])
    for row in rows:
        row["writing_checks"] = counts.get(row["id"])
    return ""
