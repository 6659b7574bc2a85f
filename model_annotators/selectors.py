"""Reads of the model annotators for the researchers' pages: their calibrations beside the
workers, the adjudication queue's help, and triage's order. Never read by a validator's page."""

from collections.abc import Iterable
from typing import Any

from django.db.models import F, QuerySet

from corpus.models import Pair
from corpus.scope import Scope

from .calibration import latest_calibration
from .models import ModelAnnotator, ModelLabel, ModelUse, Outcome
from .scope import asked_with


def calibration_rows(scope: Scope) -> list[dict[str, Any]]:
    """Each model annotator (of the dataset, of a team's datasets, or all) with its latest calibration's figures."""
    annotators = ModelAnnotator.objects.select_related("dataset", "training_run").order_by("dataset_id", "name", "pk")
    annotators = scope.filter(annotators)
    rows = []
    for annotator in annotators:
        calibration = latest_calibration(annotator)
        figures = calibration.figures if calibration else {}
        rows.append(
            {
                "annotator": annotator,
                "calibration": calibration,
                "figures": figures,
                "loo": figures.get("leave_one_out") or {},
                "ds": figures.get("dawid_skene") or {},
                "catch": figures.get("catch_trials") or {},
                "per_thousand": figures.get("per_thousand") or {},
                "outcomes": figures.get("outcomes") or {},
            }
        )
    return rows


def adjudication_hints(pairs: Iterable[Pair]) -> dict[int, list[dict[str, str]]]:
    """{pair pk: [{model, label, reason}]} for pairs of datasets where a study turned
    `adjudication_help` on: each annotator's latest label of the pair (the queue shows it to the
    researcher deciding; validators never see it: no anchoring)."""
    pairs = list(pairs)
    helped = set(
        ModelUse.objects.filter(
            adjudication_help=True, study__dataset_id__in={p.dataset_id for p in pairs}
        ).values_list("study__dataset_id", flat=True)
    )
    wanted = [pair.pk for pair in pairs if pair.dataset_id in helped]
    hints: dict[int, list[dict[str, str]]] = {}
    rows = (
        ModelLabel.objects.filter(pair_id__in=wanted, outcome=Outcome.LABELLED)
        .order_by("pair_id", "annotator_id", "-created_at", "-pk")
        .values("pair_id", "annotator_id", "annotator__name", "label", "reason")
    )
    seen: set[tuple[int, int]] = set()
    for row in rows:
        key = (row["pair_id"], row["annotator_id"])
        if key in seen:
            continue
        seen.add(key)
        hints.setdefault(row["pair_id"], []).append(
            {"model": row["annotator__name"], "label": row["label"], "reason": row["reason"]}
        )
    return hints


def triage_pairs(use: ModelUse) -> QuerySet[Pair]:
    """Triage (off unless the study names a triage model): the study's pairs still taking labels
    where the model's label under its current prompt differs from the writer's intended label,
    to be validated first."""
    annotator = use.triage_annotator
    if annotator is None:
        return Pair.objects.none()
    disagreeing = ModelLabel.objects.filter(
        annotator=annotator, asked_with=asked_with(annotator), outcome=Outcome.LABELLED
    ).exclude(label=F("pair__author_label"))
    return Pair.objects.filter(
        dataset_id=use.study.dataset_id, needs_validation=True, pk__in=disagreeing.values("pair_id")
    ).order_by("pk")
