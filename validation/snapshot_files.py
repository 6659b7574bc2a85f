"""The file validation keeps in a snapshot beside the pairs' (modeling.snapshots.extra_files):
MPE's per-premise labels, registered there by the composition root (annotation_site.wiring)."""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .premise_label_selectors import premise_label_rows_of
from .premise_table import write_rows

PREMISE_LABELS_FILE = "premise_labels.tsv"


def premise_label_snapshot_file(datasets: Sequence[str], filters: Mapping[str, Any], directory: Path) -> dict[str, int]:
    """`premise_labels.tsv`, written as `export_mpe_premise_labels` writes it, of the snapshot's
    multi-premise datasets in its splits; nothing where they have no per-premise judgment."""
    rows = premise_label_rows_of(datasets, filters.get("splits") or ())
    if rows is None:
        return {}
    with open(directory / PREMISE_LABELS_FILE, "w", encoding="utf-8", newline="") as stream:
        return {PREMISE_LABELS_FILE: write_rows(rows, stream)}
