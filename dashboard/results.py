"""Turning a TrainingRun's stored results (modeling.training.evaluate.summarize) into tables. The
genre × genre matrix of MultiNLI Table 5 comes from several single-genre runs on one snapshot."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modeling.models import RunStatus, TrainingRun

PHASES = ("dev", "test")


@dataclass
class Report:
    splits: list[dict[str, Any]] = field(default_factory=list)  # [{split, n, accuracy, excluded}]
    matched: list[dict[str, Any]] = field(default_factory=list)  # [{phase, matched, mismatched}]
    genres: list[dict[str, Any]] = field(default_factory=list)  # [{genre, phases: {phase: {n, accuracy}}}]
    labels: list[dict[str, Any]] = field(default_factory=list)  # [{label, phases: {phase: {n, accuracy}}}]
    phases: list[str] = field(default_factory=list)  # phases present, in order
    confusion: dict[str, Any] | None = None  # {rows, columns, values, phase}
    genre_matrix: dict[str, Any] | None = None  # {rows, columns, values}
    facts: list[tuple[str, Any]] = field(default_factory=list)  # [(name, value)]

    @property
    def empty(self) -> bool:
        return not (self.splits or self.matched or self.genres)


def read(results: dict[str, Any] | None) -> Report:
    results = results or {}
    report = Report()
    for split, figures in sorted((results.get("splits") or {}).items()):
        report.splits.append(
            {
                "split": split,
                "n": figures.get("n"),
                "accuracy": figures.get("accuracy"),
                "excluded": figures.get("excluded_no_gold"),
            }
        )
    matched, mismatched = results.get("matched") or {}, results.get("mismatched") or {}
    for phase in PHASES:
        if phase in matched or phase in mismatched:
            report.matched.append({"phase": phase, "matched": matched.get(phase), "mismatched": mismatched.get(phase)})

    report.phases = [phase for phase in PHASES if isinstance(results.get(phase), dict)]
    genre_names = sorted({g for p in report.phases for g in (results[p].get("per_genre") or {})})
    report.genres = [
        {"genre": genre, "phases": {p: (results[p].get("per_genre") or {}).get(genre) for p in report.phases}}
        for genre in genre_names
    ]
    label_names: list[str] = []
    for phase in report.phases:
        for label in results[phase].get("per_label") or {}:
            if label not in label_names:
                label_names.append(label)
    report.labels = [
        {"label": label, "phases": {p: (results[p].get("per_label") or {}).get(label) for p in report.phases}}
        for label in label_names
    ]
    for phase in reversed(report.phases):  # the test confusion matrix when there is one
        confusion = results[phase].get("confusion")
        if confusion and confusion.get("matrix"):
            report.confusion = {
                "rows": confusion.get("labels"),
                "columns": confusion.get("labels"),
                "values": confusion["matrix"],
                "phase": phase,
            }
            break
    report.genre_matrix = stored_genre_matrix(results.get("genre_matrix")) or matrix_file(
        results.get("genre_matrix_file")
    )
    for key in (
        "train_accuracy",
        "train_pairs",
        "best_epoch",
        "epochs_run",
        "stopped_by",
        "vocab_size",
        "embeddings_covered",
        "majority_label",
        "device",
        "seconds",
        "dev_split",
    ):
        if results.get(key) not in (None, ""):
            report.facts.append((key.replace("_", " "), results[key]))
    return report


def stored_genre_matrix(matrix: Any) -> dict[str, Any] | None:
    """A matrix stored by the training side: {rows, columns, values|matrix} or {train: {eval: acc}}."""
    if not matrix:
        return None
    if isinstance(matrix, dict) and "rows" in matrix:
        return {
            "rows": matrix["rows"],
            "columns": matrix["columns"],
            "values": matrix.get("values") or matrix.get("matrix"),
        }
    if isinstance(matrix, dict):
        rows = sorted(matrix)
        columns = sorted({column for row in matrix.values() for column in row})
        return {
            "rows": rows,
            "columns": columns,
            "values": [[matrix[row].get(column) for column in columns] for row in rows],
        }
    return None


def matrix_file(path: str | None) -> dict[str, Any] | None:
    """The table `manage.py genre_matrix` writes (train_genres, test_genres, accuracy[train][test], phase)."""
    if not path:
        return None
    try:
        table = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None  # written on another machine, or gone: the runs themselves still tell
    rows, columns = table.get("train_genres") or [], table.get("test_genres") or []
    accuracy = table.get("accuracy") or {}
    if not rows or not columns:
        return None
    return {
        "rows": rows,
        "columns": columns,
        "phase": table.get("phase"),
        "values": [[(accuracy.get(row) or {}).get(column) for column in columns] for row in rows],
    }


def genre_matrix_across_runs(run: TrainingRun) -> dict[str, Any] | None:
    """MultiNLI Table 5 from the latest finished single-genre runs of `run`'s snapshot and model:
    test accuracy when every run has a test set, else dev (as `manage.py genre_matrix` does)."""
    runs = (
        TrainingRun.objects.filter(snapshot_id=run.snapshot_id, model=run.model, status=RunStatus.DONE)
        .order_by("created_at")
        .only("config", "results")
    )
    single_genre = [other for other in runs if (other.config or {}).get("train_genre")]
    if len(single_genre) < 2:
        return None
    phase = "test" if all("test" in (other.results or {}) for other in single_genre) else "dev"
    by_genre: dict[str, dict[str, Any]] = {}
    for other in single_genre:
        per_genre = ((other.results or {}).get(phase) or {}).get("per_genre")
        if per_genre:
            by_genre[other.config["train_genre"]] = {g: figures.get("accuracy") for g, figures in per_genre.items()}
    matrix = stored_genre_matrix(by_genre) if len(by_genre) >= 2 else None
    if matrix:
        matrix["phase"] = phase
    return matrix


def run_report(run: TrainingRun) -> Report:
    """A finished run without a genre matrix of its own shows its snapshot's single-genre runs'."""
    report = read(run.results)
    if report.genre_matrix is None and run.status == RunStatus.DONE:
        report.genre_matrix = genre_matrix_across_runs(run)
    return report
