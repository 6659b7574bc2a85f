"""Reads behind the dashboard pages: aggregate SQL over pairs, premises, claims and labels.

Every figure is a GROUP BY in the database, never a Python loop over rows; per-pair counters
(Pair.label_count, *_votes, gold_label) stand in for counting the label table. The few
expensive aggregates go through `cached()`: a few seconds in Django's cache, keyed by the
page, dataset and split, so a dashboard left open by several researchers costs one query
per interval while the figures still follow the data without a restart. On a large corpus
(settings.DASHBOARD_LARGE_PAIRS) a stale figure is shown at once and a Celery task
(`dashboard.tasks.refresh_figure`) recomputes it, so no page waits for an aggregate.
"""
import math
import time
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, F, Q, Value
from django.db.models.functions import Length, Mod, Replace, Trim, TruncHour
from django.utils import timezone

from collection.models import (
    NO_GOLD,
    THREE_WAY,
    ClaimStatus,
    Pair,
    Premise,
    PremiseStatus,
    Worker,
    WritingClaim,
)
from validation.models import ValidationClaim, ValidationLabel

from . import overlap

HOURS_SHOWN = 48


def cache_seconds():
    return getattr(settings, "DASHBOARD_CACHE_SECONDS", 5)


# Figures a task can recompute by name: name -> function(dataset, split).
REFRESHABLE = {}
# How long a figure is kept to be shown while it is being recomputed.
STALE_KEEP_SECONDS = 24 * 3600
REFRESH_LOCK_SECONDS = 300


def refreshable(name):
    def register(function):
        REFRESHABLE[name] = function
        return function

    return register


def cache_key(name, dataset, split):
    return f"dashboard:{name}:{dataset.pk if dataset else 'all'}:{split or 'all'}"


def corpus_is_large():
    # The highest pair id stands in for the count: an index lookup, not a scan.
    highest = Pair.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return highest >= getattr(settings, "DASHBOARD_LARGE_PAIRS", 200_000)


def store(key, value):
    cache.set(key, {"value": value, "at": time.time()}, STALE_KEEP_SECONDS)


def cached(name, dataset, split, compute):
    """compute() once per few seconds per (figure, dataset, split); on a large corpus, refreshed by a task."""
    seconds = cache_seconds()
    if seconds <= 0:
        return compute()
    key = cache_key(name, dataset, split)
    entry = cache.get(key)
    if entry is not None:
        if time.time() - entry["at"] < seconds:
            return entry["value"]
        if name in REFRESHABLE and corpus_is_large():
            schedule_refresh(name, dataset, split)
            return entry["value"]
    value = compute()
    store(key, value)
    return value


def schedule_refresh(name, dataset, split):
    """Queue one recompute of a figure; while one is pending, further requests queue nothing."""
    if cache.add(cache_key(name, dataset, split) + ":refreshing", 1, REFRESH_LOCK_SECONDS):
        from .tasks import refresh_figure

        refresh_figure.delay(name, dataset.pk if dataset else None, split or "")


def refresh_figure_now(name, dataset_id, split):
    from collection.models import Dataset

    dataset = Dataset.objects.filter(pk=dataset_id).first() if dataset_id else None
    key = cache_key(name, dataset, split)
    try:
        store(key, REFRESHABLE[name](dataset, split or None))
    finally:
        cache.delete(key + ":refreshing")


def pairs_in(dataset=None, split=None):
    pairs = Pair.objects.all()
    if dataset is not None:
        pairs = pairs.filter(dataset=dataset)
    if split:
        pairs = pairs.filter(premise__split=split)
    return pairs


def premises_in(dataset=None, split=None):
    premises = Premise.objects.all()
    if dataset is not None:
        premises = premises.filter(dataset=dataset)
    if split:
        premises = premises.filter(split=split)
    return premises


def word_count(field):
    """Words in a text column, in SQL: spaces + 1 (the same expression on PostgreSQL and SQLite).

    Three passes of "two spaces -> one" first, so runs of up to eight spaces count as one gap.
    """
    text = Trim(field)
    for _ in range(3):
        text = Replace(text, Value("  "), Value(" "))
    return Length(text) - Length(Replace(text, Value(" "), Value(""))) + 1


# --- collection ---------------------------------------------------------------------------------

def collection_overview(dataset=None, split=None):
    return cached("collection", dataset, split, lambda: _collection_overview(dataset, split))


@refreshable("collection")
def _collection_overview(dataset, split):
    now = timezone.now()
    # One GROUP BY: premises (distinct) and their pairs per genre and split.
    rows = list(
        premises_in(dataset, split)
        .values("genre__slug", "genre__name", "genre__is_training", "split")
        .annotate(premises=Count("id", distinct=True), pairs=Count("pairs"))
        .order_by("genre__slug", "split")
    )
    totals = {"premises": sum(row["premises"] for row in rows), "pairs": sum(row["pairs"] for row in rows)}

    open_writing = WritingClaim.objects.filter(status=ClaimStatus.OPEN, expires_at__gt=now)
    open_validation = ValidationClaim.objects.filter(status=ClaimStatus.OPEN, expires_at__gt=now)
    if dataset is not None:
        open_writing = open_writing.filter(premise__dataset=dataset)
        open_validation = open_validation.filter(pair__dataset=dataset)
    if split:
        open_writing = open_writing.filter(premise__split=split)
        open_validation = open_validation.filter(pair__premise__split=split)

    return {
        "rows": rows,
        "totals": totals,
        "writing_claims_open": open_writing.count(),
        "validation_claims_open": open_validation.count(),
        "held_premises": premises_in(dataset, split).filter(status=PremiseStatus.HELD).count(),
        "hourly": pairs_per_hour(dataset, split, now),
    }


def recent_imports(limit=10):
    """The latest premise and corpus imports, newest first, with their progress (read fresh: they move)."""
    from collection.models import PremiseImport
    from corpora.models import CorpusImport

    premise_imports = PremiseImport.objects.select_related("dataset", "genre")[:limit]
    corpus_imports = CorpusImport.objects.select_related("dataset")[:limit]
    rows = [
        {"kind": "premises", "source": run.source, "target": f"{run.dataset.slug} / {run.genre.slug}",
         "status": run.status, "progress": run.progress, "started_at": run.started_at, "error": run.error,
         "summary": f"{run.kept:,} kept of {run.sentences_read:,} sentences, {run.dropped:,} dropped"}
        for run in premise_imports
    ] + [
        {"kind": "pairs", "source": run.source, "target": f"{run.dataset.slug} / {run.split or 'split from file'}",
         "status": run.status, "progress": run.progress, "started_at": run.started_at, "error": run.error,
         "summary": f"{run.pairs_created:,} pairs and {run.labels_created:,} labels added, "
                    f"{run.already_present:,} already present, {run.malformed_count:,} malformed lines"}
        for run in corpus_imports
    ]
    return sorted(rows, key=lambda row: row["started_at"], reverse=True)[:limit]


def pairs_per_hour(dataset=None, split=None, now=None, hours=HOURS_SHOWN):
    """Pairs written per hour over the last `hours` hours, oldest first, empty hours included."""
    now = now or timezone.now()
    last_hour = now.replace(minute=0, second=0, microsecond=0)
    first_hour = last_hour - timedelta(hours=hours - 1)
    counts = {
        row["hour"]: row["n"]
        for row in pairs_in(dataset, split)
        .filter(created_at__gte=first_hour)
        .annotate(hour=TruncHour("created_at"))
        .values("hour")
        .annotate(n=Count("id"))
        .order_by()
    }
    return [(first_hour + timedelta(hours=i), counts.get(first_hour + timedelta(hours=i), 0)) for i in range(hours)]


# --- validation ---------------------------------------------------------------------------------

def label_count_distribution(dataset=None, split=None):
    """Pairs by labels so far (1–5), from the per-pair counter, never from the label table."""
    counts = dict(
        pairs_in(dataset, split).values_list("label_count").annotate(n=Count("id")).order_by()
    )
    return [(labels, counts.get(labels, 0)) for labels in range(1, 6)]


def validation_overview(dataset=None, split=None):
    return cached("validation", dataset, split, lambda: _validation_overview(dataset, split))


@refreshable("validation")
def _validation_overview(dataset, split):
    from validation.stats import agreement_stats

    return {
        "label_counts": label_count_distribution(dataset, split),
        "agreement": agreement_stats(dataset=dataset, split=split),
    }


# --- corpus -------------------------------------------------------------------------------------

def corpus_overview(dataset=None, split=None):
    return cached("corpus", dataset, split, lambda: _corpus_overview(dataset, split))


def length_histogram(queryset, field):
    """{words: how many rows} in one GROUP BY over the word-count expression."""
    return dict(
        queryset.annotate(words=word_count(field)).values_list("words").annotate(n=Count("id")).order_by()
    )


def histogram_summary(histogram):
    total = sum(histogram.values())
    if not total:
        return {"count": 0, "mean": None, "max": None}
    return {
        "count": total,
        "mean": sum(words * n for words, n in histogram.items()) / total,
        "max": max(histogram),
    }


def overlap_sample_size():
    return getattr(settings, "DASHBOARD_OVERLAP_SAMPLE", 20000)


def edit_relations(dataset=None, split=None):
    """Hypothesis–premise relations (dashboard.overlap) over at most DASHBOARD_OVERLAP_SAMPLE pairs.

    Comparing words needs Python, so a large corpus is sampled systematically (every k-th pair
    by id); the page says how many pairs the shares rest on.
    """
    pairs = pairs_in(dataset, split)
    total = pairs.count()
    step = max(1, math.ceil(total / max(1, overlap_sample_size())))
    if step > 1:
        pairs = pairs.annotate(bucket=Mod(F("id"), Value(step))).filter(bucket=0)
    counts = overlap.relation_counts(pairs.values_list("premise__text", "hypothesis").iterator(chunk_size=2000))
    return {**counts, "total": total, "step": step}


@refreshable("corpus")
def _corpus_overview(dataset, split):
    """Two scans in all: premises by (genre, length) and pairs by (length, gold, author label).

    The word-count expression is the costly part, so each table is read once and the figures
    (histograms, per-genre means, label counts) are summed from the few hundred grouped rows.
    """
    labels = [label.value for label in THREE_WAY]
    premise_rows = (
        premises_in(dataset, split).annotate(words=word_count("text"))
        .values_list("genre__slug", "genre__name", "words").annotate(n=Count("id")).order_by()
    )
    premise_lengths, genres = {}, {}
    for slug, name, words, n in premise_rows:
        premise_lengths[words] = premise_lengths.get(words, 0) + n
        genre = genres.setdefault(slug, {"genre__slug": slug, "genre__name": name, "premises": 0, "words": 0})
        genre["premises"] += n
        genre["words"] += words * n
    per_genre = [
        {**genre, "mean_words": genre["words"] / genre["premises"]} for _, genre in sorted(genres.items())
    ]
    pair_rows = (
        pairs_in(dataset, split).annotate(words=word_count("hypothesis"))
        .values_list("words", "gold_label", "author_label").annotate(n=Count("id")).order_by()
    )
    hypothesis_lengths, gold, author = {}, dict.fromkeys(labels + [NO_GOLD], 0), dict.fromkeys(labels, 0)
    for words, gold_label, author_label, n in pair_rows:
        hypothesis_lengths[words] = hypothesis_lengths.get(words, 0) + n
        gold[gold_label] = gold.get(gold_label, 0) + n
        author[author_label] = author.get(author_label, 0) + n
    return {
        "gold": list(gold.items()),
        "author": list(author.items()),
        "per_genre": per_genre,
        "premise_lengths": premise_lengths,
        "hypothesis_lengths": hypothesis_lengths,
        "premise_summary": histogram_summary(premise_lengths),
        "hypothesis_summary": histogram_summary(hypothesis_lengths),
        "relations": edit_relations(dataset, split),
    }


# --- workers ------------------------------------------------------------------------------------

WORKER_COLUMNS = {
    # sort key: (column heading, is numeric)
    "worker": ("worker", False),
    "market": ("market", False),
    "pairs_written": ("pairs written", True),
    "author_gold": ("author = gold", True),
    "labels_given": ("labels given", True),
    "gold_agreement": ("agreement with gold", True),
    "median_writing_seconds": ("median s / writing task", True),
}


def workers_overview(dataset=None, split=None, sort="-pairs_written"):
    rows = cached("workers", dataset, split, lambda: _worker_rows(dataset, split))
    return sort_rows(rows, sort)


def sort_rows(rows, sort):
    descending = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in WORKER_COLUMNS:
        key, descending = "pairs_written", True
    present = [row for row in rows if row[key] is not None]
    missing = [row for row in rows if row[key] is None]
    present.sort(key=lambda row: (row[key], row["worker"]) if not isinstance(row[key], str)
                 else (row[key].lower(), row["worker"]), reverse=descending)
    # Empty cells go last whichever way the column is sorted.
    return present + missing, ("-" if descending else "") + key


@refreshable("workers")
def _worker_rows(dataset, split):
    pairs = pairs_in(dataset, split).filter(author__isnull=False)
    written = {
        row["author_id"]: row
        for row in pairs.values("author_id").annotate(
            n=Count("id"),
            with_gold=Count("id", filter=~Q(gold_label=NO_GOLD)),
            author_is_gold=Count("id", filter=Q(author_label=F("gold_label"))),
        ).order_by()
    }
    labels = ValidationLabel.objects.filter(position__gte=2, worker__isnull=False)
    if dataset is not None:
        labels = labels.filter(pair__dataset=dataset)
    if split:
        labels = labels.filter(pair__premise__split=split)
    given = {
        row["worker_id"]: row
        for row in labels.values("worker_id").annotate(
            n=Count("id"),
            with_gold=Count("id", filter=~Q(pair__gold_label=NO_GOLD)),
            agree=Count("id", filter=Q(label=F("pair__gold_label"))),
        ).order_by()
    }
    medians = median_writing_seconds(dataset, split)
    active = set(written) | set(given) | set(medians)
    rows = []
    for worker in Worker.objects.filter(pk__in=active).select_related("user"):
        wrote = written.get(worker.pk, {})
        gave = given.get(worker.pk, {})
        rows.append({
            "id": worker.pk,
            "worker": str(worker),
            "username": worker.user.get_username(),
            "market": worker.market,
            "is_trusted": worker.is_trusted,
            "is_excluded": worker.is_excluded,
            "pairs_written": wrote.get("n", 0),
            "author_gold": ratio(wrote.get("author_is_gold", 0), wrote.get("with_gold", 0)),
            "labels_given": gave.get("n", 0),
            "gold_agreement": ratio(gave.get("agree", 0), gave.get("with_gold", 0)),
            "median_writing_seconds": medians.get(worker.pk),
        })
    return rows


def ratio(part, whole):
    return part / whole if whole else None


def median_writing_seconds(dataset=None, split=None):
    """{worker id: median seconds from claiming a premise to submitting it}, computed in SQL."""
    claims = WritingClaim._meta.db_table
    premises = Premise._meta.db_table
    where = ["c.status = %s", "c.submitted_at IS NOT NULL"]
    params = [ClaimStatus.SUBMITTED.value]
    if dataset is not None:
        where.append("p.dataset_id = %s")
        params.append(dataset.pk)
    if split:
        where.append("p.split = %s")
        params.append(split)
    scope = f"FROM {claims} c JOIN {premises} p ON p.id = c.premise_id WHERE {' AND '.join(where)}"
    if connection.vendor == "postgresql":
        sql = (
            "SELECT c.worker_id, percentile_cont(0.5) WITHIN GROUP "
            f"(ORDER BY EXTRACT(EPOCH FROM (c.submitted_at - c.created_at))) {scope} GROUP BY c.worker_id"
        )
    else:
        # No PERCENTILE_CONT elsewhere: the middle row(s) of each worker's sorted durations,
        # found with window functions (SQLite >= 3.25), still without leaving the database.
        seconds = "(julianday(c.submitted_at) - julianday(c.created_at)) * 86400.0"
        sql = (
            "SELECT worker_id, AVG(seconds) FROM ("
            f" SELECT c.worker_id AS worker_id, {seconds} AS seconds,"
            f"  ROW_NUMBER() OVER (PARTITION BY c.worker_id ORDER BY {seconds}) AS position,"
            "  COUNT(*) OVER (PARTITION BY c.worker_id) AS total"
            f" {scope}"
            ") ranked WHERE position IN ((total + 1) / 2, (total + 2) / 2) GROUP BY worker_id"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {worker_id: float(value) for worker_id, value in cursor.fetchall()}
