"""Writes for snapshots: create one, export it once, never change it afterwards.

An export writes every file into a temporary folder beside settings.SNAPSHOT_DIR/<id>/, then
renames it into SNAPSHOT_DIR/<id>/ in the transaction that marks the snapshot done (the local
default), or saves every file into object storage before that transaction. Either way a snapshot
is done with all its files or failed with none; a retry first removes what an earlier try left.
"""

import csv
import io
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psycopg2
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import connection, connections, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from audit import services as audit
from base.file_storage import is_shared
from base.long_tasks import JobStatus, heartbeat, take
from base.task_queue import enqueue
from corpus import labels as scheme_labels
from corpus.models import LABELS_PER_PAIR, Dataset, Genre, Pair, Split
from modeling.datasheet import PROVENANCE_KEY, snapshot_provenance
from modeling.models import Snapshot, SnapshotExclusion, SnapshotFile
from modeling.refusals import missing
from modeling.snapshots import extra_files as registered_extra_files
from modeling.snapshots import files as stored_files
from modeling.snapshots.extra_files import ExtraFiles
from quality.models import AggregationRun
from teams import access
from teams.models import default_team_id

from . import database_lines, selectors
from . import format as snapshot_format
from .label_rows import LABEL_ROWS_FILTER, write_label_rows
from .writer import ExportFiles

# What a researcher may ask an export to keep (all optional); anything else is refused.
FILTER_KEYS = (
    "genres",
    "splits",
    "gold_only",
    "min_labels",
    "unvalidated_gold",
    "aggregation_run",
    "full_agreement",
    "drop_ungrammatical",
    "drop_test_fours",
    "label_rows",
    "typing_flags",
)
# Kept in a snapshot's canonical filters only when true, so older snapshots' filters read as before.
# label_rows adds the label-level file (modeling/snapshots/label_rows.py); it filters no pair.
# typing_flags adds the author's typing flags to labels.jsonl, and so turns on label_rows.
OPTIONAL_FLAGS = ("full_agreement", "drop_ungrammatical", "drop_test_fours", "label_rows", "typing_flags")
# The fields an aggregation run (quality app) adds to every row; without the option the files are
# exactly MultiNLI's.
AGGREGATION_FIELDS = ("aggregated_label", "aggregated_posterior")
UNVALIDATED_GOLD_CHOICES = ("author", "-", "author-all")
# What an export calls after every page: progress(rows_done, rows_total).
Progress = Callable[[int, int], object]


class ExportRefused(Exception):
    """An export that must not run (the snapshot is already done, or being exported)."""


def normalize_request(
    datasets: Sequence[str] | None = None,
    filters: Mapping[str, Any] | None = None,
    user: User | AnonymousUser | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """Check a snapshot request and give it one canonical form (sorted, defaults filled in).

    The checks across datasets read the datasets the snapshot takes: those named, or "all" of the
    user's team (`_team_of_request`), never another team's. Raises ValidationError naming every bad
    field, so the API and the command can say what to fix.
    """
    errors: dict[str, str | ValidationError | list[ValidationError]] = {}
    datasets = datasets or []
    filters = dict(filters or {})
    if not isinstance(datasets, (list, tuple)) or not all(isinstance(d, str) for d in datasets):
        errors["datasets"] = "a list of dataset slugs"
        datasets = []
    datasets = sorted(set(datasets))
    unknown = sorted(set(datasets) - set(Dataset.objects.filter(slug__in=datasets).values_list("slug", flat=True)))
    if unknown:
        errors["datasets"] = missing(f"unknown dataset(s): {', '.join(unknown)}")
    taken = datasets  # empty: every dataset there is, all of them the team's
    if not errors.get("datasets"):
        try:
            _, taken = _team_of_request(user, datasets)
        except ValidationError as refused:
            errors["datasets"] = refused.error_dict["datasets"]

    if not isinstance(filters, dict):
        errors["filters"] = "an object"
        filters = {}
    for key in sorted(set(filters) - set(FILTER_KEYS)):
        errors[f"filters.{key}"] = f"unknown filter '{key}'; allowed: {', '.join(FILTER_KEYS)}"

    clean: dict[str, Any] = {}
    genres = filters.get("genres", [])  # not `or []`: {} or null is a mistake, said so
    if not isinstance(genres, list) or not all(isinstance(g, str) for g in genres):
        errors["filters.genres"] = "a list of genre slugs"
    else:
        unknown_genres = sorted(set(genres) - set(Genre.objects.filter(slug__in=genres).values_list("slug", flat=True)))
        if unknown_genres:
            errors["filters.genres"] = missing(f"unknown genre(s): {', '.join(unknown_genres)}")
        clean["genres"] = sorted(set(genres))
    splits = filters.get("splits", [])
    # Checked as text first: `[{}]` must be a 400, not a TypeError from set().
    if (
        not isinstance(splits, list)
        or not all(isinstance(x, str) for x in splits)
        or not set(splits) <= set(Split.values)
    ):
        errors["filters.splits"] = f"a list of: {', '.join(Split.values)}"
    else:
        clean["splits"] = sorted(set(splits))
    gold_only = filters.get("gold_only", False)
    if not isinstance(gold_only, bool):
        errors["filters.gold_only"] = "true or false"
    clean["gold_only"] = gold_only is True
    min_labels = filters.get("min_labels", 0)
    if isinstance(min_labels, bool) or not isinstance(min_labels, int) or not 0 <= min_labels <= LABELS_PER_PAIR:
        errors["filters.min_labels"] = f"an integer from 0 to {LABELS_PER_PAIR}"
    else:
        clean["min_labels"] = min_labels
    unvalidated_gold = filters.get("unvalidated_gold", "author")
    if unvalidated_gold not in UNVALIDATED_GOLD_CHOICES:
        errors["filters.unvalidated_gold"] = f"one of: {', '.join(UNVALIDATED_GOLD_CHOICES)}"
    clean["unvalidated_gold"] = unvalidated_gold
    run_id = filters.get("aggregation_run")
    if run_id is not None:
        run = None
        if isinstance(run_id, int) and not isinstance(run_id, bool):
            run = _aggregation_runs_reached(user).filter(pk=run_id).first()
        if not isinstance(run_id, int) or isinstance(run_id, bool):
            errors["filters.aggregation_run"] = "the id of a finished aggregation run"
        elif run is None:
            errors["filters.aggregation_run"] = missing(f"unknown aggregation run {run_id}")
        elif run.status != "done":
            errors["filters.aggregation_run"] = f"aggregation run {run_id} is {run.status}, not done"
        elif taken and run.dataset.slug not in taken:
            errors["filters.aggregation_run"] = f"run {run_id} is of dataset {run.dataset.slug}, not in this snapshot"
        else:
            clean["aggregation_run"] = run_id
    for flag in OPTIONAL_FLAGS:
        value = filters.get(flag, False)
        if not isinstance(value, bool):
            errors[f"filters.{flag}"] = "true or false"
        elif value:
            clean[flag] = True
    if clean.get("typing_flags"):
        # A column of labels.jsonl: asking for it asks for the file (any schema-valid request is taken).
        clean["label_rows"] = True
    schemes = [] if errors.get("datasets") else selectors.label_schemes(taken)
    if len(schemes) > 1:
        errors["datasets"] = (
            f"these datasets use different label schemes ({', '.join(schemes)}); "
            "a snapshot holds one scheme: name datasets of one scheme"
        )
    if errors:
        raise ValidationError(errors)
    return datasets, clean


def create_snapshot(
    user: User | AnonymousUser | None,
    *,
    datasets: Sequence[str] | None = None,
    filters: Mapping[str, Any] | None = None,
) -> Snapshot:
    """A pending snapshot of these datasets (all of the team's when empty) and filters; export it next.
    It belongs to its datasets' team: another team's dataset is as unknown as a missing one."""
    datasets, filters = normalize_request(datasets, filters, user)
    team_id, datasets = _team_of_request(user, datasets)
    with transaction.atomic():
        snapshot = Snapshot.objects.create(
            created_by=user if user is not None and user.is_authenticated else None,
            datasets=datasets,
            filters=filters,
            team_id=team_id,
        )
        audit.record(
            "snapshot.created",
            actor=user,
            subject=snapshot,
            team_id=team_id,
            after={"datasets": datasets, "filters": filters},
            datasets=datasets or Dataset.objects.filter(team_id=team_id).values_list("slug", flat=True),
        )
    return snapshot


def _aggregation_runs_reached(user: Any) -> QuerySet[AggregationRun]:
    """The aggregation runs a snapshot request may name: the user's research teams' (another team's
    run is as unknown as a missing one); every run for a command run by the operator."""
    if user is None or not user.is_authenticated:
        return AggregationRun.objects.all()
    return access.scoped(AggregationRun.objects.all(), user, access.RESEARCH, via="dataset__team")


def _team_of_request(user: Any, datasets: list[str]) -> tuple[int, list[str]]:
    """The team a snapshot of `datasets` belongs to, and its datasets as stored (empty stays empty
    while the team holds every dataset: one team, as before teams)."""
    if user is None or not user.is_authenticated:  # a command run by the operator: every dataset
        teams_of_datasets = set(Dataset.objects.filter(slug__in=datasets).values_list("team_id", flat=True))
        team_id = teams_of_datasets.pop() if len(teams_of_datasets) == 1 else default_team_id()
        if teams_of_datasets:
            raise ValidationError({"datasets": "datasets of several teams: one snapshot holds one team's data"})
    else:
        mine = access.scoped(Dataset.objects.all(), user, access.RESEARCH)
        if datasets:
            found = dict(mine.filter(slug__in=datasets).values_list("slug", "team_id"))
            unknown = sorted(set(datasets) - set(found))
            if unknown:
                raise ValidationError({"datasets": missing(f"unknown dataset(s): {', '.join(unknown)}")})
            if len(set(found.values())) > 1:
                raise ValidationError({"datasets": "datasets of several teams: one snapshot holds one team's data"})
            team_id = next(iter(found.values()))
        else:
            teams = sorted(set(mine.values_list("team_id", flat=True)))
            if len(teams) > 1:
                raise ValidationError({"datasets": "name the datasets: you are in several teams"})
            if not teams:
                raise ValidationError({"datasets": missing("unknown dataset(s): your teams have none")})
            team_id = teams[0]
    if not datasets and Dataset.objects.exclude(team_id=team_id).exists():
        datasets = sorted(Dataset.objects.filter(team_id=team_id).values_list("slug", flat=True))
    return team_id, datasets


T = TypeVar("T")

EXPORT_TASK = "modeling.tasks.export_snapshot_task"


def start_export(snapshot: Snapshot) -> None:
    """Queue the export on the default queue once the snapshot row is committed."""
    transaction.on_commit(lambda: enqueue(EXPORT_TASK, snapshot.pk))


def request_snapshot(
    user: User | AnonymousUser | None,
    *,
    datasets: Sequence[str] | None = None,
    filters: Mapping[str, Any] | None = None,
) -> Snapshot:
    """Make a snapshot and queue its export, in one transaction (in-process in embedded mode);
    ValidationError naming each bad field, and nothing made, otherwise."""
    with transaction.atomic():
        snapshot = create_snapshot(user, datasets=datasets, filters=filters)
        # Queued on commit, so a fast Celery worker never looks for a row it cannot see yet.
        start_export(snapshot)
    return snapshot


def snapshot_directory(snapshot: Snapshot) -> Path:
    """The snapshot's folder in the local default storage (SNAPSHOT_DIR/<id>/); with object storage,
    read the files through modeling.snapshots.files instead."""
    return Path(settings.SNAPSHOT_DIR) / str(snapshot.pk)


def _take(snapshot: Snapshot) -> Q:
    """Take the snapshot's export (base.long_tasks.take). Returns what still says "this export
    holds the row" (status and restart count): a reaper's restart changes the count, so an export
    thought dead never marks the snapshot done or failed over its successor."""
    taken = take(Snapshot, snapshot.pk)
    snapshot.refresh_from_db()
    if not taken:
        if snapshot.status == JobStatus.DONE:
            raise ExportRefused(f"snapshot {snapshot.pk} is done; a finished snapshot never changes")
        raise ExportRefused(f"snapshot {snapshot.pk} is already being exported")
    return Q(pk=snapshot.pk, status=JobStatus.RUNNING, restarts=snapshot.restarts)


def export_snapshot(
    snapshot: Snapshot,
    *,
    progress: Progress | None = None,
    page_size: int = selectors.PAGE_SIZE,
    extra_files: Sequence[ExtraFiles] | None = None,
) -> Snapshot:
    """Write the snapshot's files and mark it done; on any failure mark it failed and leave no files.

    `progress(rows_done, rows_total)` is called after every page, as the snapshot's `progress` is
    saved. `extra_files`: the writers of files other apps add (`ExtraFiles`); None: those the composition
    root registered (modeling/snapshots/extra_files.py), () none.
    """
    held = _take(snapshot)
    with heartbeat(Snapshot, snapshot.pk):
        return _export_taken(snapshot, held, progress, page_size, extra_files)


def _export_taken(
    snapshot: Snapshot, held: Q, progress: Progress | None, page_size: int, extra_files: Sequence[ExtraFiles] | None
) -> Snapshot:
    final_dir = snapshot_directory(snapshot)
    temp_dir = None
    renamed = False
    # Read once: the files go to one place for the whole export.
    shared = is_shared("snapshots")
    stored = False
    try:
        root = Path(settings.SNAPSHOT_DIR)
        root.mkdir(parents=True, exist_ok=True)
        if final_dir.is_dir():
            # Left by an export that died between rename and commit; the snapshot is not done, so it is not immutable yet.
            shutil.rmtree(final_dir)
        for leftover in root.glob(f".{snapshot.pk}-*"):
            shutil.rmtree(leftover, ignore_errors=True)  # temp folders of an export whose process died
        temp_dir = Path(tempfile.mkdtemp(prefix=f".{snapshot.pk}-", dir=root))
        scheme = _scheme_of(snapshot)
        pairs = selectors.pairs_for_export(snapshot.datasets, snapshot.filters)
        # The pairs that exist now are the snapshot's: rows written meanwhile are not read.
        upper_id = pairs.order_by("-pk").values_list("pk", flat=True).first()
        counts = selectors.export_counts(snapshot.datasets, snapshot.filters, upper_id=upper_id)

        def manifest_records() -> tuple[dict[str, Any], dict[str, Any]]:
            # The records a release's card needs that only the database holds, kept as they are now, so a
            # release made later from this snapshot describes the same data.
            return (
                selectors.typing_evidence_of(snapshot.datasets, snapshot.filters, upper_id=upper_id),
                snapshot_provenance(snapshot.datasets, snapshot.filters, upper_id=upper_id, genre_ids=counts.genre_ids),
            )

        def label_file() -> list[dict[str, Any]]:
            if not snapshot.filters.get(LABEL_ROWS_FILTER):
                return []
            with _export_cursor() as cursor:
                return [
                    write_label_rows(
                        snapshot.datasets, snapshot.filters, scheme, temp_dir, cursor=cursor, upper_id=upper_id
                    )
                ]

        with _alongside(manifest_records) as records, _alongside(label_file) as label_files:
            files, rows = _write_files(snapshot, temp_dir, progress, page_size, scheme, upper_id, counts.rows)
            files += label_files()
            # Asked here, so that a process without the root's registration fails the export with its message.
            writers = registered_extra_files.registered() if extra_files is None else extra_files
            files += _write_extra_files(snapshot, temp_dir, writers, taken={f["name"] for f in files})
            typing_evidence, provenance = records()
        manifest = snapshot_format.build_manifest(
            snapshot.pk,
            snapshot.datasets,
            snapshot.filters,
            rows,
            files,
            label_scheme=scheme,
            gold_sources=counts.gold_sources,
            stopping_rules=counts.stopping_rules,
            typing_evidence=typing_evidence,
        )
        manifest[PROVENANCE_KEY] = provenance
        snapshot_format.write_manifest(temp_dir, manifest)
        if shared:
            # Before the snapshot is marked done: a done snapshot is readable from every host.
            stored_files.store_snapshot_folder(snapshot.pk, temp_dir)
            stored = True
        with transaction.atomic():
            marked = Snapshot.objects.filter(held).update(
                status=JobStatus.DONE,
                progress=1.0,
                finished_at=timezone.now(),
                # The folder on this host's disk, when the files are there (the local default) only.
                directory="" if shared else str(final_dir),
                content_hash=manifest["content_hash"],
                row_count=rows,
            )
            if not marked:
                raise ExportRefused(f"snapshot {snapshot.pk} was taken over by a restarted export")
            SnapshotFile.objects.bulk_create(SnapshotFile(snapshot=snapshot, **f) for f in files)
            if not shared:
                # Last step inside the transaction: if the rename fails nothing is marked done.
                temp_dir.rename(final_dir)
                renamed = True
        if shared:
            shutil.rmtree(temp_dir, ignore_errors=True)
    except BaseException as exc:
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)
        if renamed:
            shutil.rmtree(final_dir, ignore_errors=True)
        still_held = Snapshot.objects.filter(held).update(
            status=JobStatus.FAILED, finished_at=timezone.now(), error=f"{type(exc).__name__}: {exc}"[:5000]
        )
        if stored and still_held:
            # Only while this export holds the row: a restarted export may be storing the same names.
            stored_files.remove_stored_files(snapshot.pk)
        snapshot.refresh_from_db()
        raise
    snapshot.refresh_from_db()
    return snapshot


def _write_extra_files(
    snapshot: Snapshot, directory: Path, writers: Sequence[ExtraFiles], taken: set[str]
) -> list[dict[str, Any]]:
    """Run the other apps' file writers; each file's manifest entry, its checksum taken here."""
    entries = []
    for write in writers:
        for name, rows in sorted(write(snapshot.datasets, snapshot.filters, directory).items()):
            # A writer must not overwrite a split file or the manifest, nor write outside the folder.
            if name in taken or name == snapshot_format.MANIFEST_NAME or Path(name).name != name:
                raise ValueError(f"an extra snapshot file may not be named {name!r}")
            path = directory / name
            entries.append(
                {
                    "name": name,
                    "split": "",  # not a split file
                    "rows": rows,
                    "bytes": path.stat().st_size,
                    "sha256": snapshot_format.sha256_of_file(path),
                }
            )
            taken.add(name)
    return entries


def _scheme_of(snapshot: Snapshot) -> str:
    schemes = selectors.label_schemes(snapshot.datasets)
    if len(schemes) > 1:
        raise ExportRefused(f"snapshot {snapshot.pk} would mix label schemes ({', '.join(schemes)})")
    return schemes[0] if schemes else scheme_labels.THREE_WAY_SCHEME


def _write_files(
    snapshot: Snapshot,
    directory: Path,
    progress: Progress | None,
    page_size: int,
    scheme: str,
    upper_id: int | None,
    rows_total: int,
) -> tuple[list[dict[str, Any]], int]:
    """Write the split files of the pairs up to `upper_id`: the lines PostgreSQL builds
    (database_lines), streamed by one COPY into `writer.ExportFiles`, hashed as they pass.
    Progress moves every `page_size` rows."""
    pairs = selectors.pairs_for_export(snapshot.datasets, snapshot.filters)
    run_id = snapshot.filters.get("aggregation_run")
    # Inside a transaction already open the COPY holds this connection: progress is saved at the end.
    save = not connection.in_atomic_block
    files = ExportFiles(
        directory,
        extra_columns=AGGREGATION_FIELDS if run_id is not None else (),
        on_rows=lambda done: _report(snapshot, done, rows_total, progress, save=save),
        every=page_size,
    )
    try:
        if upper_id is not None:
            sql, params = database_lines.export_lines_sql(
                pairs.filter(pk__lte=upper_id),
                scheme=scheme,
                unvalidated_gold=snapshot.filters.get("unvalidated_gold", "author"),
                held_out_dataset_ids=selectors.held_out_dataset_ids(snapshot.datasets),
                aggregated=run_id is not None,
            )
            aggregated = selectors.aggregated_labels(run_id)
            with _export_cursor() as cursor, _progress_commits_unwaited():
                if aggregated is not None:
                    _fill_aggregated(cursor, aggregated)
                statement = cursor.mogrify(sql, params).decode()
                cursor.copy_expert(f"COPY ({statement}) TO STDOUT ({database_lines.COPY_OPTIONS})", files)
                if aggregated is not None:
                    cursor.execute(f"DROP TABLE pg_temp.{database_lines.AGGREGATED_TABLE}")
        _report(snapshot, files.rows, rows_total, progress)
    finally:
        files.close()
    return files.entries(), files.rows


@contextmanager
def _alongside(work: Callable[[], T]) -> Iterator[Callable[[], T]]:
    """`work` run on a thread with database connections of its own while the block streams the
    split files (the manifest's records and the label file are seconds of reads at MultiNLI scale,
    on a core the split files' COPY leaves idle); the block gets the call that waits for the result
    and raises what `work` raised. Inside a transaction already open another connection would not
    see what it wrote: `work` then runs in this thread when the result is asked for."""
    if connection.in_atomic_block:
        yield work
        return

    def on_own_connection() -> T:
        try:
            return work()
        finally:
            connections.close_all()  # this thread's connections only

    # Leaving the block waits for the thread, so no work outlives a failed export.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-export") as pool:
        yield pool.submit(on_own_connection).result


# The export's own connection: its parallel workers sort the lines they made by pair id in memory
# (at MultiNLI scale about 110 MB each), not in files on disk.
EXPORT_SESSION_SETTINGS = "SET work_mem = '128MB'"


@contextmanager
def _export_cursor() -> Iterator[Any]:
    """A psycopg2 cursor for the export's COPY: on a connection of its own, so that the default one
    stays free to save the progress while the lines stream, and is closed (ending the statement)
    however the export ends. Inside a transaction already open (a caller's, a test's) another
    connection would not see what it wrote: the COPY then runs on the transaction's own."""
    if connection.in_atomic_block:
        with connection.cursor() as wrapper:
            yield wrapper.cursor
        return
    raw = psycopg2.connect(**connection.get_connection_params())
    try:
        raw.autocommit = True
        with raw.cursor() as cursor:
            cursor.execute(EXPORT_SESSION_SETTINGS)
            yield cursor
    finally:
        raw.close()


@contextmanager
def _progress_commits_unwaited() -> Iterator[None]:
    """While the lines stream, the progress saved after every page commits without waiting for the
    disk (a progress lost in a crash is a bar a little behind): waiting would be a noticeable share
    of an export. Everything after, the snapshot marked done included, waits again."""
    if connection.in_atomic_block:  # nothing is saved while the COPY holds this connection
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


def _fill_aggregated(cursor: Any, aggregated: Mapping[int, tuple[str, float]]) -> None:
    """The aggregation run's fields, formatted by Python (the posterior a float's JSON and csv text,
    which SQL would round and print otherwise), into the temporary table the lines read."""
    table = database_lines.AGGREGATED_TABLE
    cursor.execute(f"DROP TABLE IF EXISTS pg_temp.{table}")
    cursor.execute(
        f"CREATE TEMPORARY TABLE {table} (pair_id bigint PRIMARY KEY, label text NOT NULL, "
        "posterior_json text NOT NULL, posterior_tsv text NOT NULL)"
    )
    buffer = io.StringIO()
    rows = csv.writer(buffer, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    for pair_pk, (label, posterior) in aggregated.items():
        rows.writerow((pair_pk, label, snapshot_format.json_value(posterior), snapshot_format.tsv_value(posterior)))
    buffer.seek(0)
    cursor.copy_expert(
        f"COPY pg_temp.{table} ({', '.join(database_lines.AGGREGATED_COLUMNS)}) FROM STDIN (FORMAT csv)", buffer
    )


def _report(snapshot: Snapshot, done: int, rows_total: int, progress: Progress | None, *, save: bool = True) -> None:
    fraction = done / rows_total if rows_total else 1.0
    if save:
        # Never 1.0 before the files are in place: "done" is the status, not the progress bar.
        Snapshot.objects.filter(pk=snapshot.pk).update(progress=min(fraction, 0.99))
    if progress is not None:
        progress(done, rows_total)


def exclude_from_snapshots(pairs: QuerySet[Pair], *, researcher: Any, reason: str) -> tuple[int, int, str]:
    """Keep every pair of a selection (the pair browser's result) out of the snapshots exported from
    now on, in one transaction with its audit entry: (pairs excluded, pairs already
    excluded, the batch token `include_again` takes). The pairs keep their gold labels."""
    reason = (reason or "").strip()[:100]
    if not reason:
        raise ValidationError("Say why (a reason of up to 100 characters): the exclusion is kept with it.")
    token = uuid.uuid4().hex[:12]
    with transaction.atomic():
        chosen = pairs.order_by()
        total = chosen.count()
        ids = list(
            chosen.exclude(Exists(SnapshotExclusion.objects.filter(pair=OuterRef("pk")))).values_list("pk", flat=True)
        )
        SnapshotExclusion.objects.bulk_create(
            [SnapshotExclusion(pair_id=pk, token=token, reason=reason, researcher=researcher) for pk in ids]
        )
        audit.record_batch(
            "snapshot.pairs_excluded", Pair.objects.filter(pk__in=ids), actor=researcher, reason=reason, token=token
        )
    return len(ids), total - len(ids), token


def include_again(token: str, *, researcher: Any) -> int:
    """Lift a batch of `exclude_from_snapshots`: its pairs are in the next snapshots again. The count."""
    with transaction.atomic():
        batch = SnapshotExclusion.objects.filter(token=token)
        pairs = Pair.objects.filter(pk__in=list(batch.values_list("pair_id", flat=True)))
        audit.record_batch(
            "snapshot.pairs_included", pairs, actor=researcher, reason="undo of a bulk exclusion", token=token
        )
        undone, _ = batch.delete()
    return undone
