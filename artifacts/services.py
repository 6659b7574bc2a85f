"""Writes of the artifacts app: tagging jobs (queue, run with progress) and what new pairs set off.

spaCy (and the torch it imports) is loaded only in `run_tagging_job`, which runs in a Celery
worker or a management command, never on a web request: services queue the job by task name.
"""

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from base.long_tasks import JobStatus, heartbeat
from base.plain_rows import insert_rows, update_rows
from base.task_queue import enqueue, enqueue_coalesced
from corpus.models import Dataset, Pair, Premise
from corpus.scope import Scope
from corpus.selectors import pairs_in

from . import tag_tally
from .models import PairTags, TaggingJob
from .phenomena import PHENOMENON_NAMES
from .phenomenon_tagger import (
    MODEL_PACKAGES,
    PhenomenonTagger,
    TaggerUnavailable,
    chunks,
    installed_model_packages,
    load_tagger,
)

logger = logging.getLogger(__name__)

TAG_TASK = "artifacts.tag_pairs"
ARRIVAL_TASK = "artifacts.pairs_arrived"
BATCH_SIZE = 500

_tagger: PhenomenonTagger | None = None  # one loaded pipeline per process
Parses = dict[int, tuple[str, str]]  # {pk: (Penn tree, binary parse)} of pairs or premises


def get_tagger() -> PhenomenonTagger:
    """The process's PhenomenonTagger, loaded on first use (TaggerUnavailable names the package)."""
    global _tagger
    packages = tuple(getattr(settings, "ARTIFACTS_TAGGER_PACKAGES", MODEL_PACKAGES))
    parse = getattr(settings, "ARTIFACTS_PARSE_TREES", True)
    if _tagger is None or _tagger.package not in packages or _tagger.parses != parse:
        _tagger = load_tagger(packages, parse=parse)
    return _tagger


def pairs_to_tag(dataset: Dataset | None = None, *, retag: bool = False) -> QuerySet[Pair]:
    pairs = pairs_in(Scope.of_dataset(dataset))
    return pairs if retag else pairs.filter(phenomenon_tags__isnull=True)


def start_tagging(dataset: Dataset | None = None, *, retag: bool = False, queue: bool = True) -> TaggingJob:
    """A queued TaggingJob; unless `queue=False` (the command runs it itself) it goes to Celery
    once the transaction commits. A queued or running job of the same scope is reused."""
    with transaction.atomic():
        job = (
            TaggingJob.objects.select_for_update()
            .filter(dataset=dataset, retag=retag, status__in=[JobStatus.QUEUED, JobStatus.RUNNING])
            .first()
        )
        if job is not None:
            return job
        job = TaggingJob.objects.create(
            dataset=dataset, retag=retag, total=tag_tally.untagged_pairs(dataset, retag=retag)
        )
        if queue:
            transaction.on_commit(lambda: enqueue(TAG_TASK, job.pk))
    return job


def run_tagging_job(
    job_id: int,
    *,
    tagger: PhenomenonTagger | None = None,
    batch_size: int = BATCH_SIZE,
    processes: int | None = None,
    on_batch: Callable[[int], object] | None = None,
) -> TaggingJob:
    """Tag the job's pairs batch by batch; each batch's tags and the progress figure commit together.

    Pairs are read by primary key (keyset pages), so a job can be stopped and a new one picks up
    the pairs still untagged. When no English pipeline is installed the job fails with the
    message that says which package to install, and nothing else changes.

    ``processes`` tagging processes (spawned) tag while this process reads the next pairs and
    stores the last batch's tags, so a large job runs at the tagger's own speed instead of the
    tagger's plus the database's. 0
    tags in this process; None: as `job_processes` chooses.

    A tagger loaded with its parser (the default, settings.ARTIFACTS_PARSE_TREES) also writes
    the Penn tree and binary parse of each sentence of a pair written on the platform whose parse
    is empty, in the same transaction as its tags: the export reads them from the pair and the
    premise. Imported datasets keep the parses (or the empty ones) their files gave, so their
    pairs are tagged with the parser off, at the tagger's speed: only pairs that will get a parse
    pay for it.
    """
    job = TaggingJob.objects.select_related("dataset").get(pk=job_id)
    if job.status in (JobStatus.DONE, JobStatus.FAILED):
        return job
    try:
        tagger = tagger or get_tagger()
    except TaggerUnavailable as error:
        return _finish(job, JobStatus.FAILED, error=str(error))
    version = tagger.model_version
    total = tag_tally.untagged_pairs(job.dataset, retag=job.retag)
    job.status, job.tagger, job.total, job.done = JobStatus.RUNNING, version, total, 0
    job.heartbeat_at = timezone.now()
    job.save(update_fields=["status", "tagger", "total", "done", "heartbeat_at"])
    if processes is None:
        processes = job_processes(job, tagger)
    # (pk, the parse facts of a pair that wants parses, else None) of each pair sent to the
    # tagger, in order: its results come back in the same order.
    sent: deque[tuple[int, tuple[str, int, str] | None]] = deque()

    # A job the tallies see nothing for was started by someone who asked the tables (the hourly
    # sweep, the command): the tallies have drifted (tags deleted behind them), so it walks every pair.
    after = walked_to(job.dataset) if total and not job.retag else 0
    job.walked_to = after

    def items() -> Iterator[tuple[str, str, bool]]:
        for batch in untagged_batches(job.dataset, job.retag, batch_size, after=after, expected=total):
            wanted = _parses_wanted([pk for pk, _, _ in batch]) if tagger.parses else {}
            job.walked_to = max(job.walked_to, batch[-1][0]) if batch else job.walked_to
            for pk, premise, hypothesis in batch:
                sent.append((pk, wanted.get(pk)))
                yield premise, hypothesis, pk in wanted

    # A process killed mid-job stops the beat; the reaper queues the job again, and it tags what is still untagged.
    with heartbeat(TaggingJob, job.pk):
        try:
            results = tagger.tag_for_job(items(), batch_size=batch_size, processes=processes)
            for tagged in chunks(results, batch_size):
                with transaction.atomic():
                    done = _store_batch(tagger, [(*sent.popleft(), result) for result in tagged], job.retag)
                    job.done += done
                    TaggingJob.objects.filter(pk=job.pk).update(done=job.done)
                if on_batch:
                    on_batch(done)
        except Exception as error:
            _finish(job, JobStatus.FAILED, error=f"{type(error).__name__}: {error}")
            raise
        return _finish(job, JobStatus.DONE)


def job_processes(job: TaggingJob, tagger: PhenomenonTagger) -> int:
    """Tagging processes for a job: none below settings.ARTIFACTS_TAGGING_PROCESS_MIN_PAIRS pairs
    or for a pipeline of no installed package (the job's process tags; a spawned tagger takes a few
    seconds to start); one for tags alone (that reaches the tagger's own speed); and
    settings.ARTIFACTS_PARSING_PROCESSES (default two, fewer on fewer cores) when the job may parse,
    a tagger with its parser on pairs written on the platform: tag + parse is slower than the
    tagger per core, and two processes reach the tagger's speed where one does not
    (bench/RESULTS-scale-check.md)."""
    if job.total < settings.ARTIFACTS_TAGGING_PROCESS_MIN_PAIRS or not tagger_spawnable(tagger):
        return 0
    may_parse = tagger.parses and (job.dataset is None or not job.dataset.is_imported)
    return max(1, settings.ARTIFACTS_PARSING_PROCESSES) if may_parse else 1


def tagger_spawnable(tagger: PhenomenonTagger) -> bool:
    """Whether a spawned process can load this tagger's pipeline from its installed package."""
    return bool(tagger.package) and bool(installed_model_packages((tagger.package,)))


def _store_batch(
    tagger: PhenomenonTagger, batch: Sequence[tuple[int, tuple[str, int, str] | None, tuple[Any, ...]]], retag: bool
) -> int:
    """One batch's tags and parses, in the caller's transaction: (pk, parse facts or None, (tags,
    premise parses, hypothesis parses)) per pair. Returns the pairs counted done."""
    rows = [PairTags(pair_id=pk, tagger=tagger.model_version, **tag_columns(found)) for pk, _, (found, _, _) in batch]
    pair_parses: Parses = {}
    premise_parses: Parses = {}
    for pk, facts, (_, premise_parsed, hypothesis_parsed) in batch:
        if facts is None:
            continue
        parse, premise_id, premise_parse = facts
        if not parse:
            pair_parses[pk] = hypothesis_parsed
        if not premise_parse:
            premise_parses.setdefault(premise_id, premise_parsed)
    store_tags(rows, retag=retag)
    _write_parses(Pair, pair_parses)
    _write_parses(Premise, premise_parses)
    return len(rows)


def store_tags(rows: list[PairTags], *, retag: bool = False) -> int:
    """Save a batch's tag rows and count them in the tag tally, in the caller's transaction;
    returns the rows saved.

    The pairs are locked first (pk order, as every writer of counters locks them), so their gold
    labels cannot move between this read and the commit: a label added meanwhile waits, and then
    its `gold_moved` sees these tags and moves them. Without `retag`, a pair another job tagged
    meanwhile keeps its tags (and is not counted twice); with it, the old rows are taken out of
    the tally as they are replaced.
    """
    ids = sorted(row.pair_id for row in rows)
    facts = {
        pk: (dataset_id, split, genre_id, gold)
        for pk, dataset_id, split, genre_id, gold in Pair.objects.select_for_update(no_key=True, of=("self",))
        .filter(pk__in=ids)
        .order_by("pk")
        .values_list("pk", "dataset_id", "premise__split", "premise__genre_id", "gold_label")
    }
    existing = {tags.pair_id: tags for tags in PairTags.objects.filter(pair_id__in=ids)}
    if retag and existing:
        tag_tally.tags_counted(((facts[pk], tags.tag_names()) for pk, tags in existing.items() if pk in facts), sign=-1)
        PairTags.objects.filter(pair_id__in=list(existing)).delete()
        existing = {}
    new = [row for row in rows if row.pair_id in facts and row.pair_id not in existing]
    _insert_tags(new)
    tag_tally.tags_counted((facts[row.pair_id], row.tag_names()) for row in new)
    return len(new)


def _insert_tags(rows: Sequence[PairTags]) -> None:
    """Insert tag rows as multi-row INSERTs of plain values: a large job stores a batch while its
    tagging process tags the next, and building bulk_create's statement (sixteen prepared fields
    a row) cost more than running it."""
    tagged_at = connection.ops.adapt_datetimefield_value(timezone.now())
    insert_rows(
        PairTags._meta.db_table,
        ["pair_id", *PHENOMENON_NAMES, "tagger", "tagged_at"],
        [(row.pair_id, *(getattr(row, name) for name in PHENOMENON_NAMES), row.tagger, tagged_at) for row in rows],
    )


def walked_to(dataset: Dataset | None) -> int:
    """The highest pair a finished tagging job of this scope (or a sweep of every dataset) read:
    the next job starts after it."""
    scope = Q(dataset=None) if dataset is None else Q(dataset=dataset) | Q(dataset=None)  # a sweep reads every dataset
    done = TaggingJob.objects.filter(scope, retag=False, status=JobStatus.DONE)
    return done.aggregate(mark=Max("walked_to"))["mark"] or 0


def untagged_batches(
    dataset: Dataset | None, retag: bool, batch_size: int, *, after: int = 0, expected: int | None = None
) -> Iterator[list[tuple[int, str, str]]]:
    """Lists of (pk, premise text, hypothesis) still to tag, in pk order, of the pairs after pk
    `after` (the scope's last job's mark, `walked_to`).

    When those are fewer than the `expected` untagged pairs (the tallies' count), the pairs up to
    the mark are walked too: a transaction that committed its pairs after a later one's were
    tagged, or drift. Without the mark, finding the first untagged pair is an anti-join of every
    pair of the dataset against every tag, on every job.
    """
    found = 0
    for batch in _untagged_between(dataset, retag, batch_size, after, None):
        found += len(batch)
        yield batch
    if after and not retag and expected is not None and found < expected:
        yield from _untagged_between(dataset, retag, batch_size, 0, after)


def _untagged_between(
    dataset: Dataset | None, retag: bool, batch_size: int, after: int, through: int | None
) -> Iterator[list[tuple[int, str, str]]]:
    """Each read is a range of the pair table's primary key (then the tags of just those pairs):
    asking the database for "the next untagged pairs" instead is an anti-join whose plan on a
    large corpus scans the tags table for every batch, which made the import's tagging run at a
    fraction of the tagger's speed.
    """
    pairs = pairs_in(Scope.of_dataset(dataset))
    if through is not None:
        pairs = pairs.filter(pk__lte=through)
    last_pk = after
    # From the first pair, jump to the first untagged one (after an import, every pair before its
    # first is tagged). After a mark there is nothing to jump: the anti-join would read the tags of
    # every pair from the first (a merge anti-join's scan of the whole tag index).
    if not retag and not after:
        first = pairs.filter(phenomenon_tags__isnull=True).order_by("pk").values_list("pk", flat=True).first()
        if first is None:
            return
        last_pk = first - 1
    while True:
        rows = list(pairs.filter(pk__gt=last_pk).order_by("pk").values_list("pk", flat=True)[: batch_size * 4])
        if not rows:
            return
        last_pk = rows[-1]
        if not retag:
            tagged = set(
                PairTags.objects.filter(pair_id__gte=rows[0], pair_id__lte=last_pk).values_list("pair_id", flat=True)
            )
            rows = [pk for pk in rows if pk not in tagged]
        for start in range(0, len(rows), batch_size):
            chunk = rows[start : start + batch_size]
            texts = {
                pk: (premise, hypothesis)
                for pk, premise, hypothesis in Pair.objects.filter(pk__in=chunk).values_list(
                    "pk", "premise__text", "hypothesis"
                )
            }
            yield [(pk, *texts[pk]) for pk in chunk if pk in texts]  # a pair deleted meanwhile is left out


def _parses_wanted(pair_ids: Sequence[int]) -> dict[int, tuple[str, int, str]]:
    """{pk: (parse, premise id, premise parse)} of the pairs that should get the tagger's parses:
    pairs of datasets written on the platform with an empty parse, of their own or their premise's."""
    rows = Pair.objects.filter(pk__in=pair_ids, dataset__is_imported=False).values_list(
        "pk", "parse", "premise_id", "premise__parse"
    )
    return {
        pk: (parse, premise_id, premise_parse)
        for pk, parse, premise_id, premise_parse in rows
        if not parse or not premise_parse
    }


def _write_parses(model: type[Pair] | type[Premise], parses: Parses) -> None:
    """Fill empty parse columns only: a parse written meanwhile (or an imported one) stays.

    Sent as a batch (UPDATE ... FROM a VALUES list). `bulk_update`'s CASE WHEN per row and column cost the tagging job's process
    more CPU than the tagging it waited for (bench/RESULTS-docstrings.md)."""
    rows = [(pk, tree, binary_tree) for pk, (tree, binary_tree) in parses.items()]
    update_rows(model._meta.db_table, ["parse", "binary_parse"], rows, only_where_empty="parse")  # Pair's or Premise's


def _finish(job: TaggingJob, status: str, error: str = "") -> TaggingJob:
    job.status, job.error, job.finished_at = status, error, timezone.now()
    job.save(update_fields=["status", "error", "finished_at", *(["walked_to"] if status == JobStatus.DONE else [])])
    if error:
        logger.warning("tagging job %s failed: %s", job.pk, error)
    return job


def tag_columns(tags: Iterable[str]) -> dict[str, bool]:
    """{column: bool} for a pair's set of tag names."""
    return {name: name in tags for name in PHENOMENON_NAMES}


def pairs_arriving(dataset_id: int) -> None:
    """The caller's transaction creates pairs of this dataset: once it commits, `ARRIVAL_TASK`
    tags them and refreshes the monitor, without waiting for the hourly sweep.

    The one call every creator of pairs makes (the end of a writing or adversarial task, corpus,
    MPE and DNC imports), when settings.ARTIFACTS_ON_ARRIVAL is on: by default only when a broker
    is configured, since in the embedded mode the task would load spaCy in the request. Queued at
    most once a window per process (ARTIFACTS_ARRIVAL_COALESCE_SECONDS): the run tags whatever is
    untagged then, so a burst of submits costs one task.
    """
    if settings.ARTIFACTS_ON_ARRIVAL:
        transaction.on_commit(
            lambda: enqueue_coalesced(ARRIVAL_TASK, dataset_id, seconds=settings.ARTIFACTS_ARRIVAL_COALESCE_SECONDS)
        )


def pairs_arrived(dataset_id: int | None = None) -> None:
    """New pairs were committed (`pairs_arriving` queued this by name): tag them in the background,
    and refresh the artifact monitor of a collected dataset every ARTIFACTS_MONITOR_EVERY_PAIRS pairs."""
    dataset = Dataset.objects.filter(pk=dataset_id).first() if dataset_id is not None else None
    if tag_tally.untagged_pairs(dataset):
        start_tagging(dataset)
    if dataset is not None and not dataset.is_imported:
        from .monitoring import refresh_if_due

        refresh_if_due(dataset)
