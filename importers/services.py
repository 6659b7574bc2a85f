"""Importing existing corpora (SNLI, MultiNLI, GLUE MNLI) as premises, pairs and labels.

Imported pairs look exactly like collected ones: every label is a `ValidationLabel` row
(position 1 = the author's label, worker None) and the pair carries its counters and gold label,
so statistics, exports and models run on them unchanged.

The file is read once, line by line; good rows are written in chunks of a handful of bulk
queries each, so a 10k-pair file takes seconds. The whole run is one transaction: it keeps all
its rows or, failing unexpectedly, none (marked failed with the reason).
"""

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.db import DatabaseError, transaction
from django.utils import timezone
from tqdm import tqdm

from artifacts.services import pairs_arriving
from audit import services as audit
from base.long_tasks import TakenOver, heartbeat, hold_as_taken
from base.progress import ProgressWriter
from base.uploads import queue_upload
from corpus import bulk
from corpus.gold import VOTE_FIELD
from corpus.models import Dataset, Genre, ImportStatus, Pair, Premise, Split, ValidationLabel
from corpus.selectors import DatasetNameRefused, dataset_named_by
from corpus.services import create_pairs, create_premises
from corpus.writings import count_writings_of_pairs

from .formats import SNLI_GENRE, CorpusRow, MalformedRow, TsvHeader, is_tsv, parse_jsonl_line, split_from_filename
from .models import CorpusImport

# The pairs' search rows, kept by triggers on the pair table (corpus/migrations/0018_pair_search_table.py).
PAIR_SEARCH_TABLE = "collection_pair_search"
# What a corpus import writes rows into, besides the pairs' search rows and the tallies.
FILLED_MODELS = (Premise, Pair, ValidationLabel)

CHUNK_SIZE = 2000
SHOWN_PROBLEMS = 20


class CorpusImportError(Exception):
    """The file as a whole cannot be imported (unknown split, unreadable header, unknown --genre)."""


@dataclass
class ImportReport:
    path: str
    dataset: str
    split: str
    lines: int = 0
    pairs_created: int = 0
    premises_created: int = 0
    labels_created: int = 0
    already_present: int = 0
    labels_skipped: int = 0
    gold_differs_from_file: int = 0
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)
    seconds: float = 0.0
    bytes_read: int = 0
    import_id: int | None = None  # the CorpusImport row that followed this run

    @property
    def ok(self) -> bool:
        return not self.malformed

    def summary(self) -> str:
        lines = [
            f"{self.path} -> dataset {self.dataset}, split {self.split}: {self.lines} lines read in {self.seconds:.1f} s"
            f" (import #{self.import_id})",
            f"  pairs created: {self.pairs_created} (premises {self.premises_created}, labels {self.labels_created})",
            f"  pairs already present, skipped: {self.already_present}",
            f"  labels outside the label set, skipped: {self.labels_skipped}",
            f"  malformed lines, skipped: {len(self.malformed)}",
        ]
        if self.gold_differs_from_file:
            lines.append(
                f"  validated pairs whose file gold_label differs from the 3-of-5 rule: {self.gold_differs_from_file}"
            )
        return "\n".join(lines + shown_problems(self.malformed))


def shown_problems(problems: Sequence[tuple[int, str]]) -> list[str]:
    """A report's lines for its first malformed lines, "line N: reason", and how many more there are."""
    shown = [f"    line {line}: {reason}" for line, reason in problems[:SHOWN_PROBLEMS]]
    return shown + ([f"    ... and {len(problems) - SHOWN_PROBLEMS} more"] if len(problems) > SHOWN_PROBLEMS else [])


def imported_dataset(
    dataset: Dataset | str, error: Callable[[str], Exception] = CorpusImportError, refusal: str = "", **kind: str
) -> Dataset:
    """The dataset, created as an imported one of this `kind` (item_kind, label_scheme) if missing.
    One of another kind takes this one while it holds no pairs; holding pairs, it is refused with
    `error(refusal)`, the message formatted with the `dataset`: its pairs would mix with the file's."""
    if not isinstance(dataset, Dataset):
        dataset, _ = Dataset.objects.get_or_create(
            slug=dataset, defaults={"name": dataset, "is_imported": True, **kind}
        )
    changed = {name: value for name, value in kind.items() if getattr(dataset, name) != value}
    if changed and dataset.pairs.exists():
        raise error(refusal.format(dataset=dataset))
    for name, value in changed.items():
        setattr(dataset, name, value)
    if changed:
        dataset.save(update_fields=list(changed))
    return dataset


def _rows(path: str, report: ImportReport, progress: bool) -> Iterator[CorpusRow]:
    """Yield parsed rows; malformed lines go to the report with their line numbers."""
    tsv = is_tsv(path)
    header = None
    with (
        open(path, "rb") as handle,
        tqdm(total=os.path.getsize(path), unit="B", unit_scale=True, desc=Path(path).name, disable=not progress) as bar,
    ):
        for number, raw in enumerate(handle, start=1):
            bar.update(len(raw))
            report.bytes_read += len(raw)
            report.lines = number
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                report.malformed.append((number, f"not UTF-8 ({error.reason} at byte {error.start})"))
                continue
            if not text.strip():
                continue
            try:
                if not tsv:
                    yield parse_jsonl_line(number, text)
                elif header is None:
                    try:
                        header = TsvHeader(text)
                    except MalformedRow as error:
                        raise CorpusImportError(f"{path}, line {number}: {error}") from None
                else:
                    yield header.parse(number, text)
            except MalformedRow as error:
                report.malformed.append((number, str(error)))


def import_pairs_file(
    path: str | os.PathLike[str],
    dataset: Dataset | str,
    *,
    genre: str | None = None,
    split: str | None = None,
    progress: bool = False,
    chunk_size: int = CHUNK_SIZE,
    record: CorpusImport | None = None,
) -> ImportReport:
    """Import one SNLI/MultiNLI JSONL or TSV file; returns an `ImportReport`.

    `genre` (a Genre slug) is used for rows without a genre field; SNLI rows fall back to
    "captions". `split` defaults to the one in the file name (*_dev*, *_test*, *_train*).
    Pairs whose pairID is already in the dataset are skipped, so re-importing changes nothing.
    `record`: the run's row when it exists already, taken running (an upload's import,
    base.uploads); else one is made.
    """
    started = time.monotonic()
    path = str(path)
    if not Path(path).is_file():
        raise CorpusImportError(f"no such file: {path}")
    split = split or split_from_filename(path)
    if split is None or split not in Split.values:
        raise CorpusImportError(
            f"cannot tell the split of {Path(path).name}: pass --split (one of {', '.join(Split.values)})"
        )
    genres = {g.slug: g for g in Genre.objects.all()}
    if genre and genre not in genres:
        raise CorpusImportError(f"unknown genre {genre!r}; known: {', '.join(sorted(genres)) or 'none'}")
    found = imported_dataset(dataset)
    if record is None:
        record = start_import(found, path, split)
    taken_restarts = record.restarts
    report = ImportReport(path=path, dataset=found.slug, split=split, import_id=record.pk)
    # All or nothing: the chunks commit with the run, so an unexpected failure (a database error,
    # a killed process) leaves no premise, pair or label of this run behind; malformed lines are
    # not failures (reported by line number and skipped). Progress figures are written outside
    # the transaction (base.progress), so the admin shows how far the run is.
    try:
        # The heartbeat first: it writes from a thread of its own only outside a transaction.
        with heartbeat(CorpusImport, record.pk), ProgressWriter() as writer, transaction.atomic():
            # The run's tally deltas netted per key as it goes (one row per word it touches, not
            # one per word of every hypothesis), written before it commits; the tables it
            # filled vacuumed and analysed once it has.
            with bulk.bulk_import(*FILLED_MODELS, tables=[PAIR_SEARCH_TABLE]):
                _import_rows(path, found, split, genre, genres, chunk_size, progress, report, record, writer)
            # Committed only while the row is still this run's: a restart would import it again.
            hold_as_taken(CorpusImport, record.pk, taken_restarts)
    except TakenOver:
        raise  # the row is its restart's now: nothing of this run is written on it
    except Exception as error:
        reason = str(error) or type(error).__name__
        report.pairs_created = report.premises_created = report.labels_created = 0
        # If the failure cannot be recorded (e.g. the caller's transaction is broken), the original error matters more.
        with contextlib.suppress(DatabaseError):
            _record(
                record,
                report,
                status=ImportStatus.FAILED,
                error=f"{reason} (rolled back: nothing of this run was kept)",
            )
        raise error
    report.malformed.sort()
    report.seconds = time.monotonic() - started
    _record(record, report, status=ImportStatus.DONE)
    return report


def filled_tables() -> list[str]:
    """The tables a corpus import fills (`FILLED_MODELS`, the pairs' search rows and every
    maintained tally): vacuumed and analysed once the import commits, those it changed (`corpus.bulk`)."""
    return bulk.tables_of(*FILLED_MODELS, tables=[PAIR_SEARCH_TABLE])


def start_import(dataset: Dataset, path: str, split: str) -> CorpusImport:
    """The CorpusImport row of a run that no upload queued (`manage.py import_pairs`, a script): its
    progress and, at the end, its report; and its `import.started` audit entry, with it (an upload
    recorded `import.queued` when it was queued)."""
    with transaction.atomic():
        record = CorpusImport.objects.create(
            dataset=dataset, source=Path(path).name[:255], split=split, bytes_total=os.path.getsize(path)
        )
        audit.record(
            "import.started",
            subject=dataset,
            team_id=dataset.team_id,
            after={"file": record.source, "split": split, "kind": "pairs", "import": record.pk},
            datasets=[dataset.slug],
        )
    return record


def present_pair_ids(dataset: Dataset, pair_ids: Iterable[str]) -> set[str]:
    """The pairIDs among `pair_ids` the dataset holds already: an import skips them."""
    return set(Pair.objects.filter(dataset=dataset, pair_id__in=list(pair_ids)).values_list("pair_id", flat=True))


def store_imported_pairs(
    dataset: Dataset, split: str, pairs: list[Pair], labels: Sequence[Sequence[str]], **options: Any
) -> list[Pair]:
    """The one way an importer saves its pairs, in the caller's transaction: `create_pairs` (with its
    options), the premises' writings counted (imported hypotheses are written), and the arrival of
    new pairs announced (artifacts.services.pairs_arriving)."""
    created = create_pairs(dataset, split, pairs, labels, **options)
    count_writings_of_pairs({pair.premise_id for pair in created})
    if created:
        pairs_arriving(dataset.pk)
    return created


def _import_rows(
    path: str,
    dataset: Dataset,
    split: str,
    genre: str | None,
    genres: Mapping[str, Genre],
    chunk_size: int,
    progress: bool,
    report: ImportReport,
    record: CorpusImport,
    writer: ProgressWriter,
) -> None:
    seen_pair_ids: dict[str, int] = {}
    chunk: list[CorpusRow] = []

    def store() -> None:
        _store_chunk(dataset, split, path, chunk, genres, report)
        _record(record, report, writer=writer)

    for row in _rows(path, report, progress):
        slug = row.genre or genre or (SNLI_GENRE if row.is_caption else "")
        if not slug:
            report.malformed.append((row.line, "no genre field; pass --genre"))
            continue
        if slug not in genres:
            report.malformed.append((row.line, f"unknown genre {slug!r}"))
            continue
        if row.pair_id in seen_pair_ids:
            report.malformed.append((row.line, f"pairID {row.pair_id} repeats line {seen_pair_ids[row.pair_id]}"))
            continue
        seen_pair_ids[row.pair_id] = row.line
        row.genre = slug  # from here on, the genre the row is filed under (a key of `genres`)
        chunk.append(row)
        if len(chunk) >= chunk_size:
            store()
            chunk = []
    if chunk:
        store()


def _record(
    record: CorpusImport,
    report: ImportReport,
    *,
    status: str | None = None,
    error: str = "",
    writer: ProgressWriter | None = None,
) -> None:
    """Write the run's progress (and, at the end, its outcome) to its CorpusImport row."""
    fields: dict[str, object] = {
        "bytes_read": report.bytes_read,
        "lines_read": report.lines,
        "pairs_created": report.pairs_created,
        "premises_created": report.premises_created,
        "labels_created": report.labels_created,
        "already_present": report.already_present,
        "labels_skipped": report.labels_skipped,
        "malformed_count": len(report.malformed),
    }
    if status is not None:
        fields.update(
            status=status,
            error=error,
            finished_at=timezone.now(),
            problems=[list(problem) for problem in sorted(report.malformed)[: CorpusImport.PROBLEMS_KEPT]],
        )
    if writer is not None:
        writer.update(CorpusImport, record.pk, **fields)
    else:
        CorpusImport.objects.filter(pk=record.pk).update(**fields)


def _store_chunk(
    dataset: Dataset,
    split: str,
    path: str,
    rows: list[CorpusRow],
    genres: Mapping[str, Genre],
    report: ImportReport,
) -> None:
    present = present_pair_ids(dataset, (row.pair_id for row in rows))
    report.already_present += len(present)
    rows = [row for row in rows if row.pair_id not in present]
    if not rows:
        return

    premises = _premises_for(dataset, split, path, rows, genres, report)
    rows = [row for row in rows if row.prompt_id in premises]

    pairs = [
        Pair(
            premise_id=premises[row.prompt_id],
            pair_id=row.pair_id,
            hypothesis=row.hypothesis,
            parse=row.hypothesis_parse,
            binary_parse=row.hypothesis_binary_parse,
            author_label=row.author_label,
            # The file's gold (a train pair's single label) stands until validation gives a majority.
            imported_gold=row.file_gold if row.file_gold in VOTE_FIELD else "",
        )
        for row in rows
    ]
    created = store_imported_pairs(dataset, split, pairs, [row.labels for row in rows])
    for row, pair in zip(rows, created, strict=False):
        # An unvalidated training pair's file gold is its author's label by convention (MultiNLI
        # §2.2); the platform keeps '-' until it has a 3-of-5 majority, so only validated rows compare.
        if len(row.labels) > 1 and row.file_gold and row.file_gold != pair.gold_label:
            report.gold_differs_from_file += 1
        report.labels_skipped += row.skipped_labels
        report.labels_created += len(row.labels)
    report.pairs_created += len(created)


def _premises_for(
    dataset: Dataset,
    split: str,
    path: str,
    rows: list[CorpusRow],
    genres: Mapping[str, Genre],
    report: ImportReport,
) -> dict[str, int]:
    """promptID -> premise pk for the chunk's rows, creating the missing premises.

    A premise never crosses splits: a row whose premise is already in another split is malformed.
    """
    wanted: dict[str, Premise] = {}
    for row in rows:
        if row.prompt_id not in wanted:  # the first row of a promptID gives its premise
            wanted[row.prompt_id] = Premise(
                dataset=dataset,
                genre=genres[row.genre],
                prompt_id=row.prompt_id,
                text=row.premise,
                parse=row.premise_parse,
                binary_parse=row.premise_binary_parse,
                split=split,
                source=Path(path).name[:255],
            )
    known, created = ensure_premises(dataset, wanted, "split")
    report.premises_created += created
    premises = {prompt_id: pk for prompt_id, (pk, _) in known.items()}
    for row in rows:
        premise_split = known[row.prompt_id][1]
        if premise_split and premise_split != split:
            report.malformed.append(
                (row.line, f"premise {row.prompt_id} is already in split {premise_split}; a premise stays in one split")
            )
            premises.pop(row.prompt_id, None)
    return premises


def ensure_premises(
    dataset: Dataset, premises: Mapping[str, Premise], *fields: str
) -> tuple[dict[str, tuple[Any, ...]], int]:
    """{promptID: (pk, *fields)} of the dataset's premises with the promptIDs of `premises` (unsaved,
    by promptID), those it lacks created from them first; and how many were created. The caller
    judges the ones that were there already (a premise never crosses splits)."""

    def read(prompt_ids: Iterable[str]) -> dict[str, tuple[Any, ...]]:
        rows = Premise.objects.filter(dataset=dataset, prompt_id__in=list(prompt_ids))
        return {row[0]: row[1:] for row in rows.values_list("prompt_id", "pk", *fields)}

    known = read(premises)
    new = [premise for prompt_id, premise in premises.items() if prompt_id not in known]
    create_premises(new)
    known.update(read(premise.prompt_id for premise in new))
    return known, len(new)


PAIRS_UPLOAD_TASK = "importers.import_uploaded_pairs"
SLUG = re.compile(r"[-a-zA-Z0-9_]+")


def queue_pairs_upload(
    uploaded: UploadedFile[bytes],
    dataset: str,
    *,
    split: str | None = None,
    genre: str | None = None,
    user: Any = None,
) -> CorpusImport:
    """A corpus file uploaded on the dashboard: what the command would refuse before reading
    (no dataset, a split it cannot tell, an unknown genre, a dataset of another kind) is refused
    here at once and nothing is kept; the file is then stored and its import row made queued,
    imported by a Celery worker after the commit with the command's rules (importers.tasks).
    Raises CorpusImportError with the reason."""
    dataset = (dataset or "").strip()
    if not dataset or not SLUG.fullmatch(dataset):
        raise CorpusImportError(
            "Name the dataset the pairs go into with letters, digits, - and _ (a new name makes a new dataset)."
        )
    split = split or split_from_filename(uploaded.name or "")
    if split not in Split.values:
        raise CorpusImportError(
            f"Cannot tell the split of {uploaded.name}: choose one (one of {', '.join(Split.values)})."
        )
    if genre and not Genre.objects.filter(slug=genre).exists():
        raise CorpusImportError(f"Unknown genre {genre!r}.")
    chosen_split = split
    # The name in the uploader's teams (corpus.selectors.dataset_named): one of their datasets, or a
    # new one of their team; another team's dataset of that name is neither reached nor named.
    try:
        named = dataset_named_by(dataset, user)
    except DatasetNameRefused as refused:
        raise CorpusImportError(str(refused)) from None

    def create_import(stored: str, size: int) -> CorpusImport:
        if named.team_id is not None:
            Dataset.objects.get_or_create(
                slug=named.slug, defaults={"name": dataset, "is_imported": True, "team_id": named.team_id}
            )
        target = imported_dataset(named.slug)
        audit.record(
            "import.queued",
            actor=user,
            subject=target,
            team_id=target.team_id,
            after={"file": uploaded.name or "upload", "split": chosen_split, "kind": "pairs"},
            datasets=[target.slug],
        )
        return CorpusImport.objects.create(
            dataset=target,
            source=(uploaded.name or "upload")[:255],
            split=chosen_split,
            bytes_total=size,
            status=ImportStatus.QUEUED,
            upload=stored,
            default_genre=genre or "",
        )

    return queue_upload(uploaded, PAIRS_UPLOAD_TASK, create_import)


def import_stored_pairs(record: CorpusImport, path: Path) -> ImportReport:
    """An upload's import as its Celery task runs it (base.uploads.import_upload)."""
    return import_pairs_file(
        path, record.dataset, split=record.split, genre=record.default_genre or None, record=record
    )
