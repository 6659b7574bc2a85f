"""Reads of the model annotators for the researchers' pages: their calibrations beside the
workers and the adjudication queue's help (triage's order is model_annotators.triage). Never read
by a validator's page."""

from collections.abc import Iterable
from typing import Any

from corpus.models import Pair
from corpus.scope import Scope

from .calibration import latest_calibration
from .models import ModelAnnotator, ModelLabel, ModelUse, Outcome


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
        .distinct("pair_id", "annotator_id")  # each annotator's latest label of the pair
        .values("pair_id", "annotator_id", "annotator__name", "label", "reason")
    )
    for row in rows:
        hints.setdefault(row["pair_id"], []).append(
            {"model": row["annotator__name"], "label": row["label"], "reason": row["reason"]}
        )
    return hints
