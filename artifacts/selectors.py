"""Reads of the artifacts app: tag figures (MultiNLI Tables 6-7), give-away words, the jobs.

Every tag figure is one aggregate query over the PairTags columns; nothing here loads spaCy.
"""

from collections import Counter
from collections.abc import Iterator
from typing import Any, Protocol

from django.db.models import QuerySet

from base.long_tasks import JobStatus
from corpus import labels as scheme_labels
from corpus import tallies
from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP, counted_label, giveaway_words, ranked, tokenize
from corpus.labels import LABELS, NO_GOLD
from corpus.models import Genre, Worker
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import pairs_in

from . import tag_tally
from .models import MonitorRefresh, PairTags, TaggingJob
from .phenomena import PHENOMENA, PHENOMENON_NAMES

ID_CHUNK = 5000
LETTER_LABEL = {"e": "entailment", "n": "neutral", "c": "contradiction"}


class _Run(Protocol):
    """What `run_tag_accuracy` reads of a training run (modeling is a higher layer: not imported)."""

    results: Any
    snapshot: Any


def tag_figures(scope: Scope = EVERYTHING) -> dict[str, Any]:
    """Share of pairs with each tag, overall and per genre (Table 7), and per tag the count of
    each gold label with the most frequent one. Shares are over tagged pairs; `untagged` says how
    many pairs in scope still wait for the tagger.

    Summed from the maintained tag tally (artifacts.tag_tally: tagged pairs per genre, gold label
    and tag) and the pairs in scope from corpus's maintained aggregates: two grouped reads of a
    few hundred rows, no tag is read (the page used to join every tag to its pair on a render).
    """
    counted = ("pairs", *PHENOMENON_NAMES)
    overall = dict.fromkeys(counted, 0)
    genre_sums: dict[str, dict[str, Any]] = {}
    by_gold: dict[str, dict[str, int]] = {}
    for slug, name, gold_label, tag, n in tag_tally.tag_counts(scope):
        column = "pairs" if tag == tag_tally.TAGGED else tag
        genre = genre_sums.setdefault(slug, {"slug": slug, "name": name})
        gold = by_gold.setdefault(gold_label, {})
        overall[column] += n
        genre[column] = genre.get(column, 0) + n
        gold[column] = gold.get(column, 0) + n
    for genre in genre_sums.values():
        for column in counted:
            genre.setdefault(column, 0)
    per_genre = [genre_sums[slug] for slug in sorted(genre_sums)]
    in_scope = sum(n for _, n in tallies.pair_counts(scope, by=("dataset_id",)))
    tagged = overall["pairs"]
    genres = [{"slug": row["slug"], "name": row["name"], "pairs": row["pairs"]} for row in per_genre]
    # A two-way or ordinal dataset's gold labels in its own words: entailed / not-entailed.
    scheme = scope.one.label_scheme if scope.one is not None else None
    categories = scheme_labels.stored_categories(scheme)
    rows = []
    for phenomenon in PHENOMENA:
        name = phenomenon.name
        counts = {label: by_gold.get(label, {}).get(name, 0) for label in (*categories, NO_GOLD)}
        gold = {scheme_labels.to_scheme(scheme, label): n for label, n in counts.items()}
        ordered = [scheme_labels.to_scheme(scheme, label) for label in categories]
        labelled = {label: gold[label] for label in ordered if gold[label]}
        most_frequent = min(labelled, key=lambda label: (-labelled[label], ordered.index(label))) if labelled else None
        rows.append(
            {
                "tag": name,
                "label": phenomenon.label,
                "kind": phenomenon.kind,
                "description": phenomenon.description,
                "pairs": overall[name],
                "share": overall[name] / tagged if tagged else None,
                "per_genre": [
                    {
                        "genre": row["slug"],
                        "pairs": row[name],
                        "share": row[name] / row["pairs"] if row["pairs"] else None,
                    }
                    for row in per_genre
                ],
                "gold": gold,
                "most_frequent_gold": most_frequent,
                "most_frequent_gold_share": labelled[most_frequent] / sum(labelled.values()) if most_frequent else None,
            }
        )
    return {"tagged": tagged, "untagged": in_scope - tagged, "genres": genres, "tags": rows}


def run_tag_accuracy(run: _Run, *, split: str | None = None) -> dict[str, Any] | None:
    """Accuracy per phenomenon tag of a finished run (MultiNLI Table 6).

    The run stores each evaluated pair's pairID, gold and prediction (modeling's
    `evaluate.pair_predictions`); the tags come from PairTags of the snapshot's datasets. The
    split is the test split(s) when the run has them, else dev: all files of that phase pooled.
    Pairs without gold are not scored, as in the run's own accuracy. None when the run holds no
    predictions (finished before they were recorded) or none of its pairs is tagged.
    """
    stored = (run.results or {}).get("predictions") or {}
    if not stored:
        return None
    phases = [split] if split else ["test", "dev"]
    chosen: list[str] = []
    for phase in phases:
        chosen = [name for name in stored if name == phase or name.startswith(phase + "_")]
        if chosen:
            break
    if not chosen:
        return None
    predicted: dict[str, bool] = {}
    for name in chosen:
        block = stored[name]
        for pair_id, gold, guess in zip(block["pair_ids"], block["gold"], block["predicted"], strict=True):
            if gold in LETTER_LABEL:
                predicted[pair_id] = gold == guess
    slugs = list(run.snapshot.datasets or [])
    ids = list(predicted)
    columns: list[tuple[Any, ...]] = []
    for start in range(0, len(ids), ID_CHUNK):  # a statement takes at most 65,535 parameters
        tags = PairTags.objects.filter(pair__pair_id__in=ids[start : start + ID_CHUNK])
        if slugs:
            tags = tags.filter(pair__dataset__slug__in=slugs)
        columns += tags.values_list("pair__pair_id", *PHENOMENON_NAMES)
    # A pairID that two datasets of the snapshot share cannot be told apart: left out.
    seen = Counter(row[0] for row in columns)
    totals = {name: [0, 0] for name in PHENOMENON_NAMES}
    overall = [0, 0]
    for pair_id, *flags in columns:
        if seen[pair_id] > 1:
            continue
        hit = predicted[pair_id]
        overall[0] += 1
        overall[1] += hit
        for name, flag in zip(PHENOMENON_NAMES, flags, strict=True):
            if flag:
                totals[name][0] += 1
                totals[name][1] += hit
    if not overall[0]:
        return None
    return {
        "splits": chosen,
        "scored": len(predicted),
        "tagged": overall[0],
        "accuracy": overall[1] / overall[0],
        "tags": [
            {
                "tag": p.name,
                "label": p.label,
                "pairs": totals[p.name][0],
                # MultiNLI's "Dev. Freq.": the share of the scored, tagged pairs that have the tag.
                "share": totals[p.name][0] / overall[0],
                "accuracy": totals[p.name][1] / totals[p.name][0] if totals[p.name][0] else None,
            }
            for p in PHENOMENA
        ],
    }


def latest_tagging_jobs(scope: Scope = EVERYTHING, *, limit: int = 5) -> list[TaggingJob]:
    """The latest tagging jobs (of a team's datasets: `scope`; otherwise every job)."""
    jobs = TaggingJob.objects.select_related("dataset")
    if scope.teams is not None:
        jobs = scope.filter(jobs)
    return list(jobs[:limit])


# --- give-away words ---------------------------------------------------------------------------


def giveaway_words_for(
    scope: Scope = EVERYTHING,
    *,
    genre: Genre | None = None,
    worker: Worker | None = None,
    min_count: int = DEFAULT_MIN_COUNT,
    top: int | None = DEFAULT_TOP,
    recount: bool = False,
) -> dict[str, Any]:
    """p(label | word) over the hypotheses in scope, per label with counts (Poliak et al. §6),
    and the number of hypotheses counted per label.

    Without a writer, summed from the maintained word tally (corpus.tallies.word_counts: the
    hypotheses' words per counted label, kept by every writer of pairs and labels), so no
    hypothesis is read; a writer's listing tokenises that writer's hypotheses, and `recount` every
    hypothesis in scope (the figure the tally must equal)."""
    per_label: Counter[str] = Counter()
    if worker is None and not recount:
        # Plain dicts: a corpus's tally has tens of thousands of (label, word) sums, one row each.
        word_count: dict[str, int] = {}
        word_label: dict[str, dict[str, int]] = {}
        for label, word, n in tallies.word_counts(scope, genre_id=genre.pk if genre else None):
            if word == tallies.HYPOTHESES:
                per_label[label] += n
            elif label in LABELS:
                word_count[word] = word_count.get(word, 0) + n
                counts = word_label.get(word)
                if counts is None:
                    word_label[word] = counts = {}
                counts[label] = counts.get(label, 0) + n
        listing = ranked(word_count, word_label, min_count=min_count, top=top)
    else:
        pairs = pairs_in(scope)
        if genre is not None:
            pairs = pairs.filter(premise__genre=genre)
        if worker is not None:
            pairs = pairs.filter(author=worker)
        rows = pairs.values_list("hypothesis", "gold_label", "author_label", "label_count").iterator(chunk_size=5000)

        def counted() -> Iterator[tuple[list[str], str]]:
            for hypothesis, gold, author, count in rows:
                label = counted_label(gold, author, count)
                per_label[label] += 1
                yield tokenize(hypothesis), label

        listing = giveaway_words(counted(), min_count=min_count, top=top)
    scheme = scope.one.label_scheme if scope.one is not None else None
    categories = scheme_labels.stored_categories(scheme)
    if categories != LABELS:
        # Two-way (and ordinal) data in its own words: entailed / not-entailed, no contradiction.
        listing = {
            scheme_labels.to_scheme(scheme, label): words for label, words in listing.items() if label in categories
        }
    return {
        "min_count": min_count,
        "top": top,
        "hypotheses": sum(per_label[label] for label in categories),
        "per_label": {scheme_labels.to_scheme(scheme, label): per_label[label] for label in categories},
        "words": listing,
    }


# --- the monitor -------------------------------------------------------------------------------


def latest_refresh(scope: Scope = EVERYTHING) -> MonitorRefresh | None:
    """The scope's latest done monitor refresh (None: all datasets together)."""
    return _refreshes(scope).filter(status=JobStatus.DONE).order_by("-created_at").first()


def _refreshes(scope: Scope) -> QuerySet[MonitorRefresh]:
    """The monitor's refreshes of a scope: one dataset's, or those over all datasets together
    (None). A team's datasets have none of their own (a refresh over all datasets is other teams'
    data too), so a team's scope shows none."""
    if scope.teams is not None:
        return MonitorRefresh.objects.none()
    return MonitorRefresh.objects.filter(dataset=scope.one)


def monitor_overview(scope: Scope = EVERYTHING, *, trend_points: int = 20) -> dict[str, Any]:
    """The latest done refresh of the scope, its flagged writers (with names), and the trend:
    hypothesis-only accuracy against the majority class over the last refreshes, oldest first."""
    refreshes = _refreshes(scope)
    latest = latest_refresh(scope)
    trend = list(
        refreshes.filter(status=JobStatus.DONE)
        .order_by("-created_at")
        .values("pk", "created_at", "pairs", "overall", "flagged")[:trend_points]
    )[::-1]
    flagged: list[dict[str, Any]] = []
    if latest:
        flagged = [dict(w) for w in latest.writers if w["flagged"]]
        names = dict(Worker.objects.filter(pk__in=[w["writer"] for w in flagged]).values_list("pk", "user__username"))
        for writer in flagged:
            writer["name"] = names.get(writer["writer"], f"worker {writer['writer']}")
    failed = refreshes.filter(status=JobStatus.FAILED).order_by("-created_at").first()
    if failed and latest and failed.created_at < latest.created_at:
        failed = None  # a later refresh worked
    return {"latest": latest, "flagged": flagged, "trend": trend, "last_failed": failed}
