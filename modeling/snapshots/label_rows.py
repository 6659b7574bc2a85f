"""The label-level file of a snapshot (issue 42.3): one row per label of the snapshot's pairs.

Asked for with the filter `label_rows: true`; written as `labels.jsonl`, hashed and listed in the
manifest like the split files. Research on label variation (ChaosNLI, learning from crowds) needs
who gave which label; a market's worker id must never leave the platform, so each annotator is a
pseudonym: `a<rank>`, the dense rank of their first label in the file's order (pairs in primary-key
order, labels by position). It is stable within the snapshot (one person, one pseudonym, whatever
their role), carries nothing of the market's id, and needs no secret, so exporting the same data
again gives the same bytes. Imported labels have no worker and no pseudonym (null).

Columns, in file order:
  pairID, split (the file the pair is in), position (1 = the author's), role (author / validator),
  annotator, label (in the scheme's words), rating (ordinal datasets: 1–5, else null), seconds
  (time on the task; null where unknown), excluded (the worker was excluded), counted (the label is
  one of the five the pair's gold label counts), catch_trials_seen / catch_trials_matched (the
  annotator's catch-trial record on the platform), flags (the quality checks' flags of the annotator,
  e.g. "too fast"; [] for none).
With the filter `typing_flags: true` one more column, `typing_flags`: on the author's row, the typing
flags of the hypothesis (authorship.judgements.Flag names, e.g. "pasted"; [] when none or no record);
on a validator's row, [] (a validator wrote nothing).
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from django.db.models import BooleanField, Case, Value, When

from authorship.selectors import typing_flags_of_pairs
from corpus.labels import AUTHOR_POSITION, to_scheme
from corpus.models import ValidationLabel
from corpus.selectors import in_gold
from quality.selectors import catch_figures, flag_marks

from .format import LABELS_FILE, file_split, jsonl_line
from .selectors import datasets_with_held_out_genres, pairs_for_export
from .writer import HashingFile

LABEL_ROWS_FILTER = "label_rows"
LABEL_COLUMNS = (
    "pairID",
    "split",
    "position",
    "role",
    "annotator",
    "label",
    "rating",
    "seconds",
    "excluded",
    "counted",
    "catch_trials_seen",
    "catch_trials_matched",
    "flags",
)
TYPING_FLAGS_FILTER = "typing_flags"
TYPING_FLAGS_COLUMN = "typing_flags"
FLAG_PREFIX = "flagged: "
CHUNK = 5000

_FIELDS = (
    "pair_id",
    "pair__pair_id",
    "pair__premise__split",
    "pair__premise__genre__is_training",
    "pair__dataset__slug",
    "position",
    "worker_id",
    "label",
    "ordinal",
    "seconds",
    "excluded",
    "in_gold",
)


def _labels(datasets: Sequence[str], filters: Mapping[str, Any]) -> Any:
    pairs = pairs_for_export(datasets, filters).values("pk")
    return (
        ValidationLabel.objects.filter(pair__in=pairs)
        .annotate(in_gold=Case(When(in_gold(), then=Value(True)), default=Value(False), output_field=BooleanField()))
        .order_by("pair_id", "position")
        .values_list(*_FIELDS)
    )


def label_rows(
    datasets: Sequence[str],
    filters: Mapping[str, Any],
    scheme: str | None,
    *,
    flagged: Callable[[Iterable[int]], Mapping[int, list[str]]] = flag_marks,
) -> Iterable[dict[str, Any]]:
    """The rows of `labels.jsonl` in file order (streamed: labels are read in chunks)."""
    labels = _labels(datasets, filters)
    typing: Mapping[int, list[str]] | None = None
    if filters.get(TYPING_FLAGS_FILTER):
        # One read of the records that carry a flag (a share of the pairs), not one per row.
        typing = typing_flags_of_pairs(pairs_for_export(datasets, filters).values("pk"))
    workers = set(labels.exclude(worker__isnull=True).values_list("worker_id", flat=True).distinct().order_by())
    flags = {pk: sorted(mark.removeprefix(FLAG_PREFIX) for mark in marks) for pk, marks in flagged(workers).items()}
    catch = catch_figures()
    held_out = datasets_with_held_out_genres(datasets)
    pseudonyms: dict[int, str] = {}
    for (
        pair_pk,
        pair_id,
        split,
        is_training,
        dataset,
        position,
        worker,
        label,
        rating,
        seconds,
        excluded,
        counted,
    ) in labels.iterator(chunk_size=CHUNK):
        annotator = None
        if worker is not None:
            annotator = pseudonyms.setdefault(worker, f"a{len(pseudonyms) + 1}")
        seen, matched = catch.get(worker, (0, 0)) if worker is not None else (0, 0)
        row = {
            "pairID": pair_id,
            "split": file_split(split, is_training, dataset in held_out),
            "position": position,
            "role": "author" if position == AUTHOR_POSITION else "validator",
            "annotator": annotator,
            "label": to_scheme(scheme, label),
            "rating": rating,
            "seconds": seconds,
            "excluded": bool(excluded),
            "counted": bool(counted),
            "catch_trials_seen": seen,
            "catch_trials_matched": matched,
            "flags": flags.get(worker, []) if worker is not None else [],
        }
        if typing is not None:
            row[TYPING_FLAGS_COLUMN] = typing.get(pair_pk, []) if position == AUTHOR_POSITION else []
        yield row


def write_label_rows(
    datasets: Sequence[str], filters: Mapping[str, Any], scheme: str | None, directory: Path
) -> dict[str, Any]:
    """Write `labels.jsonl` into the snapshot's folder; its manifest entry (name, rows, bytes, sha256)."""
    sink = HashingFile(directory / LABELS_FILE)
    try:
        for row in label_rows(datasets, filters, scheme):
            sink.write(jsonl_line(row))
            sink.rows += 1
    finally:
        sink.close()
    return {"name": LABELS_FILE, "split": "", "rows": sink.rows, "bytes": sink.bytes, "sha256": sink.sha256}
