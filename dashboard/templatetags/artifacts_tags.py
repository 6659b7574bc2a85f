"""Sections of the artifacts app on existing dashboard pages (corpus, training run, workers), as
inclusion tags: those pages' views stay as they are."""

from typing import TYPE_CHECKING, Any

from django import template

from artifacts import selectors
from corpus.scope import EVERYTHING
from dashboard.queries import artifacts as artifact_queries
from dashboard.queries import corpus as corpus_queries

if TYPE_CHECKING:
    from dashboard.views.common import Scope
    from modeling.models import TrainingRun

register = template.Library()


@register.inclusion_tag("artifacts/_tags_section.html")
def phenomenon_tags_section(scope: "Scope | None") -> dict[str, Any]:
    return {"figures": corpus_queries.phenomenon_tags(scope.within if scope else EVERYTHING), "scope": scope}


@register.inclusion_tag("artifacts/_run_section.html")
def run_artifacts_section(run: "TrainingRun") -> dict[str, Any]:
    results = run.results or {}
    baseline = results.get("majority_baseline")
    beside = None
    if baseline:
        accuracy = results.get("accuracy") or {}
        beside = [
            {
                "split": split,
                "model": accuracy.get(split),
                "majority": value,
                "gain": accuracy[split] - value if accuracy.get(split) is not None and value is not None else None,
            }
            for split, value in sorted((baseline.get("accuracy") or {}).items())
        ]
    # Stored when the run finished (modeling.training.services.record_run_tag_accuracy); computed here for runs finished before.
    tags = results.get("tag_accuracy") or selectors.run_tag_accuracy(run)
    return {"run": run, "tags": tags, "baseline": baseline, "beside": beside}


@register.inclusion_tag("artifacts/_monitor_section.html")
def artifact_monitor_section(scope: "Scope | None") -> dict[str, Any]:
    return {"monitor": artifact_queries.monitor_overview(scope.within if scope else EVERYTHING), "scope": scope}
