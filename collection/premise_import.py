"""Premise import: raw source text of one genre in, unique narrative sentences out, as premises.

The text rules are in `premise_text`; this module reads the files, applies them, writes the
premises and says what it dropped and why. JSONL: one premise per line under "text", "sentence1" or
"premise", with an optional "promptID"; taken as one sentence (not split), under the same rules.

Rows are written in batches, all in one transaction for the run (all or nothing: a failed run
leaves no premise behind); the first batch locks the genre row, so two imports into one genre
cannot both insert the same sentence. Progress figures are written outside that transaction.
"""

import functools
import itertools
import json
import multiprocessing
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO, TypeVar

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from tqdm import tqdm

from audit import services as audit
from base.json_errors import json_error_text
from base.long_tasks import TakenOver, heartbeat, hold_as_taken
from base.progress import ProgressWriter
from corpus.bulk import bulk_import
from corpus.models import Dataset, Genre, ImportStatus, Premise, Split, text_hash
from corpus.services import create_premises

from .models import PremiseImport
from .premise_text import (
    MAX_CHARS,
    MAX_PARAGRAPH_FACTOR,
    Block,
    DropReason,
    HeldText,
    OverlongLine,
    normalize,
    segment_block,
    sentence_drop_reason,
    text_blocks,
)

EXAMPLES_PER_REASON = 3
# Malformed lines named on the import's row (the count is the list's length up to here, then "more").
MALFORMED_KEPT = 200
BATCH_SIZE = 1000
JSONL_TEXT_KEYS = ("text", "sentence1", "premise")
JSONL_SUFFIXES = {".jsonl", ".ndjson"}

_Item = TypeVar("_Item")


class PremiseImportError(Exception):
    """Input the import cannot start on: unknown genre, missing or unreadable file."""


@dataclass
class PremiseImportReport:
    dataset: str
    genre: str
    files: list[str] = field(default_factory=list)
    read: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    per_file: dict[str, dict[str, int]] = field(default_factory=dict)  # file name -> {"read": n, "kept": n}
    malformed: list[tuple[str, int, str]] = field(default_factory=list)  # (file name, line number, why)
    bytes_total: int = 0  # size of all files
    bytes_read: int = 0  # of which processed so far: progress is bytes_read / bytes_total
    examples: dict[str, list[str]] = field(default_factory=dict)  # reason -> the first few texts dropped for it
    seconds: float = 0.0
    import_id: int | None = None  # the PremiseImport row that followed this run
    held: HeldText = field(default_factory=HeldText)  # the most plain text held at once while reading

    def drop(self, reason: str, text: str) -> None:
        self.dropped[reason] += 1
        examples = self.examples.setdefault(reason, [])
        # Examples are stored (JSON in PostgreSQL, which refuses NUL): short and printable.
        text = text[:100].replace("\x00", "\ufffd")
        text = text if len(text) < 100 else text[:97] + "..."
        if len(examples) < EXAMPLES_PER_REASON and text not in examples:
            examples.append(text)

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def lines(self) -> list[str]:
        out = [
            f"Premises for genre '{self.genre}' in dataset '{self.dataset}' "
            f"from {len(self.files)} file(s) in {self.seconds:.1f} s",
            f"  sentences read: {self.read}",
            f"  kept:           {self.kept}",
            f"  dropped:        {self.dropped_total}",
        ]
        for reason, label in DropReason.LABELS.items():
            if self.dropped.get(reason):
                out.append(f"    {label}: {self.dropped[reason]}")
                out.extend(f"        e.g. {example!r}" for example in self.examples.get(reason, []))
        if len(self.per_file) > 1:
            for name, counts in self.per_file.items():
                out.append(f"  {name}: read {counts['read']}, kept {counts['kept']}")
        if self.malformed:
            out.append(f"  malformed JSONL lines skipped: {len(self.malformed)}")
            for name, line_no, why in self.malformed[:50]:
                out.append(f"    {name} line {line_no}: {why}")
            if len(self.malformed) > 50:
                out.append(f"    ... and {len(self.malformed) - 50} more")
        return out


def is_jsonl(path: Path) -> bool:
    if path.suffix.lower() in JSONL_SUFFIXES:
        return True
    if path.suffix.lower() in {".txt", ".text", ".md"}:
        return False
    with open(path, encoding="utf-8-sig") as handle:
        # In pieces, not lines: a file that is one huge line is not read whole to see its first character.
        for piece in iter(lambda: handle.read(1 << 16), ""):
            if piece.strip():
                return piece.lstrip().startswith("{")
    return False


def _max_premise_chars() -> int:
    chars: int = settings.NLI.get("MAX_PREMISE_CHARS", MAX_CHARS)
    return chars


def check_files(paths: Iterable[Path]) -> None:
    """Every file exists and is UTF-8 text; checked before anything is written."""
    problems = []
    for path in paths:
        if not path.is_file():
            problems.append(f"{path}: no such file")
            continue
        try:
            with open(path, encoding="utf-8-sig") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), ""):
                    if "\x00" in chunk:
                        # Valid UTF-8 can still be binary (an image, a zip, a PDF's streams).
                        problems.append(f"{path}: not a text file (it contains NUL bytes)")
                        break
        except UnicodeDecodeError as error:
            problems.append(f"{path}: not UTF-8 text (byte offset {error.start}: {error.reason})")
        except OSError as error:
            problems.append(f"{path}: cannot be read ({error.strerror})")
    if problems:
        raise PremiseImportError("Nothing was imported:\n  " + "\n  ".join(problems))


class _CountingReader:
    """A text file's lines, counting the bytes read so far. A line longer than `max_line_chars` is
    not held whole: its start comes as an OverlongLine and the rest is read in pieces and counted."""

    def __init__(self, handle: TextIO, max_line_chars: int) -> None:
        self.handle, self.bytes, self.max_line_chars = handle, 0, max_line_chars

    def __iter__(self) -> Iterator[str]:
        while line := self.handle.readline(self.max_line_chars + 1):
            self.bytes += len(line.encode("utf-8"))
            if len(line) <= self.max_line_chars or line.endswith("\n"):
                yield line
                continue
            while rest := self.handle.readline(1 << 20):
                self.bytes += len(rest.encode("utf-8"))
                if rest.endswith("\n"):
                    break
            yield OverlongLine(line[: self.max_line_chars])


class _Progress:
    """Moves the tqdm bar and the report's byte counts as lines are *processed* (with --jobs the
    file is read ahead of the work)."""

    def __init__(self, report: PremiseImportReport, bar: tqdm, done_before: int) -> None:
        self.report, self.bar, self.done_before = report, bar, done_before

    def advance(self, position: int) -> None:
        if position > self.bar.n:
            self.bar.update(position - self.bar.n)
        self.report.bytes_read = self.done_before + position


# --- writing ----------------------------------------------------------------------------------


class _Importer:
    def __init__(
        self,
        dataset: Dataset,
        genre: Genre,
        report: PremiseImportReport,
        batch_size: int,
        on_batch: Callable[[PremiseImportReport], object] | None = None,
        split: str = "",
    ) -> None:
        self.dataset, self.genre, self.report, self.split = dataset, genre, report, split
        self.batch_size, self.on_batch = batch_size, on_batch
        # (normalised text, hash, promptID or None, file name)
        self.pending: list[tuple[str, str, str | None, str]] = []
        self.seen_hashes: set[str] = set()
        self.seen_prompt_ids: set[str] = set()

    def offer(self, sentence: str, source: str, prompt_id: str | None = None) -> None:
        self.report.read += 1
        self.report.per_file[source]["read"] += 1
        text = normalize(sentence)
        reason = sentence_drop_reason(text, _max_premise_chars())
        if reason is None:
            digest = text_hash(text)
            if digest in self.seen_hashes:
                reason = DropReason.DUPLICATE_IN_IMPORT
            elif prompt_id is not None and prompt_id in self.seen_prompt_ids:
                reason = DropReason.PROMPT_ID_TAKEN
        if reason is not None:
            self.report.drop(reason, text)
            return
        self.seen_hashes.add(digest)
        if prompt_id is not None:
            self.seen_prompt_ids.add(prompt_id)
        self.pending.append((text, digest, prompt_id, source))
        if len(self.pending) >= self.batch_size:
            self.flush()

    def drop_whole(self, reason: str, text: str, source: str) -> None:
        self.report.read += 1
        self.report.per_file[source]["read"] += 1
        self.report.drop(reason, text)

    def flush(self) -> None:
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        with transaction.atomic():
            # Serialises imports into this genre, so the duplicate check below stays true
            # until our rows are committed.
            Genre.objects.select_for_update().filter(pk=self.genre.pk).first()
            hashes = [digest for _, digest, _, _ in batch]
            existing = set(
                Premise.objects.filter(dataset=self.dataset, genre=self.genre, text_hash__in=hashes).values_list(
                    "text_hash", flat=True
                )
            )
            wanted: dict[str, tuple[str, str, str | None, str]] = {}
            for text, digest, given_id, source in batch:
                if digest in existing:
                    self.report.drop(DropReason.DUPLICATE_EARLIER, text)
                    continue
                # 64 bits of the text's hash: collisions stay negligible at millions of premises per
                # genre, and the same sentence gets the same promptID in every database it goes into.
                wanted[digest] = (text, given_id or f"{self.genre.slug}-{digest[:16]}", given_id, source)
            taken = set(
                Premise.objects.filter(dataset=self.dataset, prompt_id__in=[v[1] for v in wanted.values()]).values_list(
                    "prompt_id", flat=True
                )
            )
            rows: list[Premise] = []
            for digest, (text, prompt_id, given_id, source) in wanted.items():
                if prompt_id in taken:
                    if given_id is not None:
                        self.report.drop(DropReason.PROMPT_ID_TAKEN, text)
                        continue
                    prompt_id = self._free_prompt_id(digest)
                rows.append(
                    Premise(
                        dataset=self.dataset,
                        genre=self.genre,
                        prompt_id=prompt_id,
                        text=text,
                        text_hash=digest,
                        source=source[:255],
                        split=self.split,
                    )
                )
                self.report.per_file[source]["kept"] += 1
            create_premises(rows)
            self.report.kept += len(rows)
        if self.on_batch is not None:
            self.on_batch(self.report)

    def _free_prompt_id(self, digest: str) -> str:
        # Only when another premise of the dataset already holds our 16-character id
        # (e.g. an imported corpus with its own ids): fall back to the whole hash, then a suffix.
        candidate, n = f"{self.genre.slug}-{digest}"[:64], 1
        while Premise.objects.filter(dataset=self.dataset, prompt_id=candidate).exists():
            n += 1
            candidate = f"{self.genre.slug}-{digest[:40]}-{n}"
        return candidate


def _windows(items: Iterable[_Item], size: int) -> Iterator[list[_Item]]:
    iterator = iter(items)
    while window := list(itertools.islice(iterator, size)):
        yield window


def _read_text(
    importer: _Importer,
    reader: _CountingReader,
    source: str,
    progress: _Progress,
    jobs: int = 1,
    held: HeldText | None = None,
) -> None:
    segment = functools.partial(segment_block, max_premise_chars=_max_premise_chars())
    # Each paragraph with how far the file was read when it ended (the progress figures).
    blocks = text_blocks(reader, max_chars=MAX_PARAGRAPH_FACTOR * _max_premise_chars(), held=held)
    positioned = ((block, reader.bytes) for block in blocks)
    segmented: Iterator[tuple[Block, int, list[str] | None]]
    if jobs > 1:
        # Sentence splitting is most of the work and needs no database: child processes split
        # paragraphs (in order) while this process checks and writes. They are fresh interpreters
        # (spawn), never forks: a fork copies the parent's threads' locks held, so a child could
        # wait for ever on one. segment_block is Django-free, so a fresh child imports no apps.
        context = multiprocessing.get_context("spawn")
        pool = context.Pool(jobs)
        # A window of paragraphs at a time: Pool.imap alone reads its whole input ahead.
        segmented = (
            result
            for window in _windows(positioned, 64 * jobs * 4)
            for result in pool.imap(segment, window, chunksize=64)
        )
    else:
        pool, segmented = None, map(segment, positioned)
    try:
        for block, position, sentences in segmented:
            progress.advance(position)
            if sentences is None:
                assert block.drop_reason is not None  # segment_block gives no sentences only with a reason
                importer.drop_whole(block.drop_reason, block.text, source)
                continue
            for sentence in sentences:
                importer.offer(sentence, source)
    except BaseException:
        if pool is not None:
            pool.terminate()
            pool.join()
        raise
    if pool is not None:
        # Every paragraph is back: the workers are let go and exit on their own. terminate()
        # sends SIGTERM, and a worker whose handler (coverage's, in the suite) then waits on a lock
        # never exits, so join() would wait for ever.
        pool.close()
        pool.join()


def _read_jsonl(importer: _Importer, reader: _CountingReader, source: str, progress: _Progress) -> None:
    for line_no, line in enumerate(reader, start=1):
        progress.advance(reader.bytes)
        if isinstance(line, OverlongLine):
            importer.report.malformed.append((source, line_no, f"over {reader.max_line_chars} characters"))
            continue
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            importer.report.malformed.append((source, line_no, f"not JSON ({json_error_text(error, with_line=False)})"))
            continue
        if not isinstance(record, dict):
            importer.report.malformed.append((source, line_no, "not a JSON object"))
            continue
        text = next((record[key] for key in JSONL_TEXT_KEYS if isinstance(record.get(key), str)), None)
        if text is None:
            importer.report.malformed.append((source, line_no, f"no text under any of {', '.join(JSONL_TEXT_KEYS)}"))
            continue
        prompt_id = record.get("promptID")
        if prompt_id is not None:
            prompt_id = str(prompt_id).strip()
            if not prompt_id or len(prompt_id) > 64 or "\x00" in prompt_id:
                importer.report.malformed.append(
                    (source, line_no, "promptID is empty, over 64 characters or holds a NUL")
                )
                continue
        importer.offer(text, source, prompt_id=prompt_id)


def resolve_genre(slug: str) -> Genre:
    try:
        return Genre.objects.get(slug=slug)
    except Genre.DoesNotExist:
        known = ", ".join(Genre.objects.values_list("slug", flat=True)) or "none: load the genres first"
        raise PremiseImportError(f"Unknown genre '{slug}'. Known genres: {known}") from None


def import_premises(
    paths: Iterable[str | Path],
    genre: Genre | str,
    dataset: Dataset | str | None = None,
    progress: bool = False,
    batch_size: int = BATCH_SIZE,
    file_format: str = "auto",
    jobs: int = 1,
    on_batch: Callable[[PremiseImportReport], object] | None = None,
    record: PremiseImport | None = None,
    split: str = "",
) -> PremiseImportReport:
    """Import premises of one genre from plain-text or JSONL files; returns a report.

    `genre` and `dataset` are slugs or rows; the dataset is created when missing. `jobs` > 1 splits
    plain text into sentences in that many processes. `on_batch(report)` is called after each
    committed batch and once at the end. `record`: the run's row when it exists already (an upload's
    import); else one is made. `split`: the split new premises go into; blank leaves them for
    `assign_splits`, and a writing study serves none of them until then.
    """
    started = time.monotonic()
    split = check_split(split)
    if not isinstance(genre, Genre):
        genre = resolve_genre(genre)
    if not isinstance(dataset, Dataset):
        slug = dataset or settings.NLI["DEFAULT_DATASET"]
        dataset, _ = Dataset.objects.get_or_create(slug=slug, defaults={"name": slug})
    file_paths = [Path(path) for path in paths]
    if not file_paths:
        raise PremiseImportError("No files given.")
    check_files(file_paths)
    report = PremiseImportReport(
        dataset=dataset.slug,
        genre=genre.slug,
        files=[str(p) for p in file_paths],
        bytes_total=sum(path.stat().st_size for path in file_paths),
    )
    if record is None:  # a run no upload queued (`manage.py import_premises`, a script)
        with transaction.atomic():
            record = PremiseImport.objects.create(
                dataset=dataset,
                genre=genre,
                source=", ".join(path.name for path in file_paths)[:255],
                bytes_total=report.bytes_total,
                split=split,
            )
            audit.record(
                "import.started",
                subject=dataset,
                team_id=dataset.team_id,
                after={"file": record.source, "genre": genre.slug, "kind": "premises", "import": record.pk},
                datasets=[dataset.slug],
            )
    taken_restarts = record.restarts

    writer = ProgressWriter()

    def record_progress(report: PremiseImportReport) -> None:
        writer.update(
            PremiseImport,
            record.pk,
            bytes_read=report.bytes_read,
            sentences_read=report.read,
            kept=report.kept,
            dropped=report.dropped_total,
        )
        if on_batch is not None:
            on_batch(report)

    # All or nothing (the module's docstring); bad lines are not failures: they are dropped and counted.
    try:
        # The heartbeat first: it writes from a thread of its own only outside a transaction.
        with heartbeat(PremiseImport, record.pk), writer, transaction.atomic():
            # Its length deltas netted per key, and the premises and tallies vacuumed and analysed once
            # it commits: otherwise the writing claim is planned on statistics without these premises.
            with bulk_import(Premise):
                _import_files(
                    file_paths, genre, dataset, report, progress, batch_size, file_format, jobs, record_progress, split
                )
            # Committed only while the row is still this run's: a restart would import it again.
            hold_as_taken(PremiseImport, record.pk, taken_restarts)
    except TakenOver:
        raise  # the row is its restart's now: nothing of this run is written on it
    except Exception as exc:
        PremiseImport.objects.filter(pk=record.pk).update(
            status=ImportStatus.FAILED,
            kept=0,
            error=f"{type(exc).__name__}: {exc} (rolled back: no premise of this run was kept)",
            finished_at=timezone.now(),
        )
        raise
    report.seconds = time.monotonic() - started
    record_progress(report)
    PremiseImport.objects.filter(pk=record.pk).update(
        status=ImportStatus.DONE,
        drop_counts=dict(report.dropped),
        malformed=[f"{name} line {line_no}: {why}" for name, line_no, why in report.malformed[:MALFORMED_KEPT]],
        drop_examples=report.examples,
        finished_at=timezone.now(),
    )
    report.import_id = record.pk
    return report


def _import_files(
    paths: list[Path],
    genre: Genre,
    dataset: Dataset,
    report: PremiseImportReport,
    progress: bool,
    batch_size: int,
    file_format: str,
    jobs: int,
    on_batch: Callable[[PremiseImportReport], object] | None,
    split: str = "",
) -> None:
    importer = _Importer(dataset, genre, report, batch_size, on_batch, split)
    for path in paths:
        done_before = report.bytes_read
        source = path.name
        report.per_file.setdefault(source, {"read": 0, "kept": 0})
        jsonl = file_format == "jsonl" or (file_format == "auto" and is_jsonl(path))
        with (
            open(path, encoding="utf-8-sig") as handle,
            tqdm(
                total=path.stat().st_size,
                unit="B",
                unit_scale=True,
                desc=source,
                disable=not progress,
                file=sys.stderr,
                leave=False,
            ) as bar,
        ):
            reader = _CountingReader(handle, MAX_PARAGRAPH_FACTOR * _max_premise_chars())
            tracker = _Progress(report, bar, done_before)
            if jsonl:
                _read_jsonl(importer, reader, source, tracker)
            else:
                _read_text(importer, reader, source, tracker, jobs=jobs, held=report.held)
            tracker.advance(path.stat().st_size)  # a BOM or trailing bytes are not lines
    importer.flush()


def check_split(split: str | None) -> str:
    """A premise import's split: train, dev, test, or blank (none yet); anything else is refused."""
    split = (split or "").strip()
    if split and split not in Split.values:
        raise PremiseImportError(f"Unknown split {split!r}: one of {', '.join(Split.values)}, or none.")
    return split
