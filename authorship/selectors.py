"""Reads of the authorship app: who writes like a machine, and who copies whom (the workers page)."""

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from corpus.models import Pair, Worker
from corpus.scope import EVERYTHING, Scope
from crowd.models import StudySession

from .flag_lookup import holds_any_flag
from .judgements import Flag
from .models import SenseScore, SentenceTally, TypingTally, WritingEvidence, WrittenSentence
from .sense import writer_low_sense


def evidence_with_any_flag(names: Iterable[str]) -> QuerySet[WritingEvidence]:
    """The typing records whose flags hold one of `names`, as one SQL/JSON path test. For a set of
    the Pairs page's filters (`flag_lookup.FLAG_FILTERS`) the set's partial index answers it, sized
    by the records that hold them; another set is a scan of the records."""
    return WritingEvidence.objects.filter(holds_any_flag(names))


# Outside a study, repeats are looked for among the writer's latest hypotheses.
EARLIER_HYPOTHESES_OUTSIDE_A_STUDY = 30


def typing_flags_by_worker(worker_ids: Iterable[int], scope: Scope = EVERYTHING) -> dict[int, dict[str, int]]:
    """Per worker: hypotheses with a typing record, how many are flagged or came with no evidence, and
    their sense (`sense_by_worker`), of the studies of `scope` (a worker shared by teams is seen by each
    through its own studies only). Summed from the maintained typing tally (`authorship.typing_tally`)."""
    worker_ids_list = list(worker_ids)
    rows = (
        _typing(scope)
        .filter(worker_id__in=worker_ids_list)
        .values("worker_id")
        .annotate(
            written=Sum("n"),
            flagged=Sum("n", filter=Q(flagged=True), default=0),
            no_evidence=Sum("n", filter=Q(has_evidence=False), default=0),
        )
        .order_by()
    )
    figures: dict[int, dict[str, int]] = {
        row["worker_id"]: {"written": row["written"], "flagged": row["flagged"], "no_evidence": row["no_evidence"]}
        for row in rows
        if row["written"]
    }
    # The sense of their hypotheses (authorship.sense), beside how they were typed: scored, low,
    # and the writer-level judgement (1 when more are low than honest writing gives by chance).
    for worker_id, sense in sense_by_worker(worker_ids_list, scope).items():
        figures.setdefault(worker_id, {"written": 0, "flagged": 0, "no_evidence": 0}).update(sense)
    return figures


def sense_by_worker(worker_ids: Iterable[int], scope: Scope = EVERYTHING) -> dict[int, dict[str, int]]:
    """Per writer: hypotheses with a sense score, how many are low, and `low_sense_writer` (1 when
    `authorship.sense.writer_low_sense` judges the count beyond honest writing's chance), of the
    pairs of `scope` (every score of every dataset)."""
    scores = SenseScore.objects.filter(worker_id__in=list(worker_ids))
    scores = scope.filter(scores, via="pair__dataset")
    rows = scores.values("worker_id").annotate(scored=Count("id"), low=Count("id", filter=Q(low_sense=True))).order_by()
    return {
        row["worker_id"]: {
            "sense_scored": row["scored"],
            "low_sense": row["low"],
            "low_sense_writer": int(writer_low_sense(row["low"], row["scored"])),
        }
        for row in rows
    }


# The judgements a snapshot's manifest counts: every flag a record can carry, so a manifest's
# `flagged` is always explained by its breakdown.
COUNTED_FLAGS = tuple(Flag)


def typing_evidence_counts(pair_ids: Any) -> dict[str, Any]:
    """Of these pairs (ids, or a query of them): how many have a typing record ("recorded"), how
    many of those came with the browser's evidence, how many are flagged, and how many carry each
    judgement's flag. One grouped read: the records are grouped by their flag list (a handful of
    distinct lists), the counts summed here."""
    rows = (
        WritingEvidence.objects.filter(pair_id__in=pair_ids)
        .values("has_evidence", "flagged", "flags")
        .annotate(n=Count("id"))
        .order_by()
    )
    per_flag = dict.fromkeys((flag.value for flag in COUNTED_FLAGS), 0)
    recorded = with_evidence = flagged = 0
    for row in rows:
        recorded += row["n"]
        with_evidence += row["n"] if row["has_evidence"] else 0
        flagged += row["n"] if row["flagged"] else 0
        for flag in set(row["flags"] or ()):
            if flag in per_flag:
                per_flag[flag] += row["n"]
    return {"recorded": recorded, "with_evidence": with_evidence, "flagged": flagged, "flags": per_flag}


def typing_flags_of_pairs(pair_ids: Any) -> dict[int, list[str]]:
    """{pair id: its hypothesis's typing flags, sorted}, for the pairs (ids, or a query of them)
    whose record has some."""
    rows = WritingEvidence.objects.filter(pair_id__in=pair_ids).values_list("pair_id", "flags")
    return {pair_id: sorted(flags) for pair_id, flags in rows if flags}


# The flagged share over time shows the last weeks, not a study's whole history on one page.
SHARE_OVER_TIME_DAYS = 30


def _typing(scope: Scope) -> QuerySet[TypingTally]:
    """The typing tally's rows of the studies of `scope` (every row of every dataset)."""
    return scope.filter(TypingTally.objects.all())


def _sentences(scope: Scope) -> QuerySet[WrittenSentence]:
    """Written sentences of the pairs of `scope` (every one of every dataset)."""
    return scope.filter(WrittenSentence.objects.all())


def typing_flagged_share_by_study_day(
    scope: Scope = EVERYTHING, *, days: int = SHARE_OVER_TIME_DAYS
) -> list[dict[str, Any]]:
    """Per study and day (UTC, the last `days` days, newest first): hypotheses with a typing record,
    how many are flagged and their share. One grouped read of the maintained typing tally; records
    outside a study are left out."""
    since = (timezone.now() - timedelta(days=days)).astimezone(UTC).date()
    rows = (
        _typing(scope)
        .filter(study__isnull=False, day__gte=since)
        .values("study__slug", "study__name", "day")
        .annotate(written=Sum("n"), flagged=Sum("n", filter=Q(flagged=True), default=0))
        .order_by("-day", "study__slug")
    )
    return [
        {
            "study": row["study__slug"],
            "study_name": row["study__name"],
            "day": row["day"],
            "written": row["written"],
            "flagged": row["flagged"],
            "share": row["flagged"] / row["written"],
        }
        for row in rows
        if row["written"]
    ]


# The copies section shows the writers with most copies and the largest clusters, not every one.
COPY_ROWS_SHOWN = 50


def _writer_name(worker_id: int, external_id: str, username: str) -> str:
    return external_id or username or f"worker {worker_id}"


def _tallied(scope: Scope) -> QuerySet[SentenceTally]:
    """The sentence tally's rows of the datasets of `scope` (every row of every dataset)."""
    return scope.filter(SentenceTally.objects.all())


def copies_by_writer(scope: Scope = EVERYTHING, *, limit: int = COPY_ROWS_SHOWN) -> list[dict[str, Any]]:
    """Writers with copies (authorship.copies), most first: their sentences, how many copy another
    writer's, how many repeat their own from another session, and their sessions, of `scope`. Two
    grouped reads of the maintained sentence tally: the writers ranked, then the `limit` shown summed."""
    tallied = _tallied(scope)
    ranked = list(
        tallied.filter(copies_other_writer__isnull=False)
        .values("worker_id", "worker__external_id", "worker__user__username")
        .annotate(
            of_others=Sum("n", filter=Q(copies_other_writer=True), default=0),
            own_repeats=Sum("n", filter=Q(copies_other_writer=False), default=0),
        )
        .filter(Q(of_others__gt=0) | Q(own_repeats__gt=0))
        .order_by("-of_others", "-own_repeats", "worker_id")[:limit]
    )
    written: Counter[int] = Counter()
    sessions: Counter[int] = Counter()
    for worker_id, study_session_id, sentences in _sentences_by_session(
        tallied.filter(worker_id__in=[row["worker_id"] for row in ranked]), "worker_id"
    ):
        written[worker_id] += sentences
        sessions[worker_id] += study_session_id is not None
    return [
        {
            "worker_id": row["worker_id"],
            "writer": _writer_name(row["worker_id"], row["worker__external_id"], row["worker__user__username"]),
            "written": written[row["worker_id"]],
            "of_others": row["of_others"],
            "own_repeats": row["own_repeats"],
            "sessions": sessions[row["worker_id"]],
        }
        for row in ranked
    ]


def _sentences_by_session(tallied: QuerySet[SentenceTally], *by: str) -> list[tuple[Any, ...]]:
    """[(*by, study session id, sentences)] of these tally rows, the keys with sentences left."""
    return list(
        tallied.values_list(*by, "study_session_id").annotate(sentences=Sum("n")).filter(sentences__gt=0).order_by()
    )


def copy_clusters(scope: Scope = EVERYTHING, *, limit: int = COPY_ROWS_SHOWN) -> list[dict[str, Any]]:
    """The largest groups of copies, largest first: each its first sentence and the ids that wrote it
    or a copy of it (how many times, in how many sessions). With `scope` only its sentences count and
    show (a group first written in another team's: its first of the scope's stands first). From the
    maintained sentence tally (`authorship.sentence_tally`), the first sentences by their keys."""
    tallied = _tallied(scope)
    groups = list(
        tallied.filter(cluster_root__isnull=False)
        .values("cluster_root_id")
        .annotate(copies=Sum("n"))
        .filter(copies__gt=0)
        .order_by("-copies", "cluster_root_id")[:limit]
    )
    roots: list[int] = [group["cluster_root_id"] for group in groups]
    # Per group and writer: their sentences and sessions, the copies' from the tally and the first
    # sentence's (when it is of the scope) from its row.
    sentences: Counter[tuple[int, int]] = Counter()
    sessions: dict[tuple[int, int], set[int]] = {}
    names: dict[int, str] = {}
    copies = tallied.filter(cluster_root_id__in=roots).values_list(
        "cluster_root_id", "worker_id", "worker__external_id", "worker__user__username", "study_session_id"
    )
    for root, worker_id, external_id, username, study_session_id, n in copies.annotate(n=Sum("n")).order_by():
        if n > 0:
            names[worker_id] = _writer_name(worker_id, external_id, username)
            sentences[root, worker_id] += n
            sessions.setdefault((root, worker_id), set()).add(study_session_id)
    # The first sentences by their keys alone, kept when of the scope: beside the scope's datasets,
    # a planner whose statistics predate the sentences combined the keys with the datasets' whole
    # index, a read sized by the corpus for a page of rows.
    of_scope = scope.dataset_ids()
    firsts = WrittenSentence.objects.filter(pk__in=roots)
    first_pairs: dict[int, int] = {}
    for root, worker_id, external_id, username, study_session_id, pair_id, dataset_id in firsts.values_list(
        "pk", "worker_id", "worker__external_id", "worker__user__username", "study_session_id", "pair_id", "dataset_id"
    ):
        if of_scope is not None and dataset_id not in of_scope:
            continue
        names[worker_id] = _writer_name(worker_id, external_id, username)
        sentences[root, worker_id] += 1
        sessions.setdefault((root, worker_id), set()).add(study_session_id)
        first_pairs[root] = pair_id
    # A group whose first sentence is another team's: its earliest copy of the scope stands first.
    if others := [root for root in roots if root not in first_pairs]:
        first_pairs.update(
            _sentences(scope)
            .filter(cluster_root_id__in=others)
            .order_by("cluster_root_id", "pk")
            .distinct("cluster_root_id")
            .values_list("cluster_root_id", "pair_id")
        )
    # The pairs are read by key: joined, the planner may walk every pair on stale statistics.
    hypotheses = dict(Pair.objects.filter(pk__in=first_pairs.values()).values_list("pk", "hypothesis"))
    writers: dict[int, list[dict[str, Any]]] = {}
    for (root, worker_id), count in sorted(sentences.items(), key=lambda item: (item[0][0], -item[1], item[0][1])):
        writers.setdefault(root, []).append(
            {
                "worker_id": worker_id,
                "writer": names[worker_id],
                "sentences": count,
                "sessions": len(sessions[root, worker_id] - {None}),
            }
        )
    return [
        {
            "root": root,
            "text": hypotheses.get(first_pairs.get(root, 0), ""),
            "sentences": group["copies"] + 1,
            "writers": writers.get(root, []),
        }
        for root, group in zip(roots, groups, strict=True)
    ]


def earlier_hypotheses_query(worker: Worker, study_session: StudySession | None) -> QuerySet[Any]:
    """The (premise, hypothesis) of the writer's hypotheses a new one is checked for repeats against:
    those of the study session, or outside a study the latest (index `evidence_worker_latest`)."""
    rows = WritingEvidence.objects.filter(worker=worker, pair__isnull=False)
    if study_session is not None:
        rows = rows.filter(study_session=study_session)
    else:
        rows = rows.order_by("-pk")[:EARLIER_HYPOTHESES_OUTSIDE_A_STUDY]
    return rows.values_list("pair__premise_id", "pair__hypothesis")
