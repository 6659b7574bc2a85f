"""Worker quality: per worker, in a few statements whatever the crowd's size (docs/quality.md,
"Worker quality from SQL").

Per worker: validation labels given and their distribution, leave-one-out agreement, catch-trial
accuracy, median seconds per item, and for writers the share of their five-label pairs whose gold
differs from their label; the flags of `quality.flags` come from the same figures.
`worker_quality` reads them from the maintained tally (`corpus.worker_tally`) and the catch
answers; `label_figures`, `median_seconds` and `writer_figures` group them from the labels
themselves, the truth the tally is checked against.
"""

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from django.db import connection
from django.db.models import Count, F, Q, QuerySet

from base.subquery import sql_of
from corpus.labels import THREE_WAY_SCHEME
from corpus.models import (
    AUTHOR_POSITION,
    LABELS_PER_PAIR,
    NO_GOLD,
    THREE_WAY,
    GrammaticalityJudgment,
    Pair,
    ValidationLabel,
    Worker,
)
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import answers_of_counted_workers, labels_that_count
from corpus.worker_tally import (
    bucket_bounds,
    leave_one_out_gold,
    scored_labels,
    worker_sums,
    writer_sums,
    written_label_counts,
)
from crowd.models import CodeHold, Study
from crowd.selectors import shared_device_ids

from . import flags as flag_rules
from . import sequential
from .models import CatchTrialAnswer, QualificationAnswer, ReferenceLabel

LABELS = [label.value for label in THREE_WAY]
# The columns of a worker the rows' readers use (the name, the market, the exclusion): the rows are
# kept in the figure cache, and whole workers and users would double the time to pickle them.
WORKER_COLUMNS = ("id", "user_id", "market", "external_id", "is_trusted", "user__id", "user__username")


@dataclass
class WorkerQuality:
    worker: Worker
    labels_given: int = 0
    label_counts: dict[str, int] = field(default_factory=dict)
    # The same over three-way datasets only: a two-way dataset stores "not-entailed" as neutral.
    three_way_counts: dict[str, int] = field(default_factory=dict)
    loo_items: int = 0
    loo_agreements: int = 0
    loo_own_label_counts: dict[str, int] = field(default_factory=dict)
    loo_gold_counts: dict[str, int] = field(default_factory=dict)
    timed_items: int = 0
    median_seconds: float | None = None
    catch_seen: int = 0
    catch_matched: int = 0
    pairs_written: int = 0
    written_gold_differs: int = 0
    flags: list[flag_rules.WorkerFlag] = field(default_factory=list)

    @property
    def loo_agreement(self) -> float | None:
        return self.loo_agreements / self.loo_items if self.loo_items else None

    @property
    def catch_accuracy(self) -> float | None:
        return self.catch_matched / self.catch_seen if self.catch_seen else None

    @property
    def written_gold_differs_share(self) -> float | None:
        return self.written_gold_differs / self.pairs_written if self.pairs_written else None

    @property
    def label_shares(self) -> dict[str, float | None]:
        """Entailment / neutral / contradiction shares of the worker's labels on three-way datasets."""
        given = sum(self.three_way_counts.values())
        return {label: (self.three_way_counts.get(label, 0) / given if given else None) for label in LABELS}

    @property
    def two_way_shares(self) -> dict[str, float] | None:
        """Entailed / not-entailed shares of the worker's labels on two-way (and ordinal) datasets;
        None when they gave none."""
        counts = {label: self.label_counts.get(label, 0) - self.three_way_counts.get(label, 0) for label in LABELS}
        given = sum(counts.values())
        if not given:
            return None
        return {"entailed": counts["entailment"] / given, "not_entailed": counts["neutral"] / given}

    def figures(self) -> flag_rules.WorkerFigures:
        """The pure flags' input (`quality.flags.WorkerFigures`): its fields as this row has them."""
        names = [each.name for each in fields(flag_rules.WorkerFigures) if each.name != "worker"]
        taken = {name: getattr(self, name) for name in names}
        return flag_rules.WorkerFigures(worker=self.worker.pk, **taken)


def _validation_labels(scope: Scope = EVERYTHING) -> QuerySet[ValidationLabel]:
    return scope.filter(scored_labels(), via="pair__dataset")


def label_figures(scope: Scope = EVERYTHING) -> dict[int, dict[str, int]]:
    """Statement 1: {worker id: counts} over validation labels (positions 2 on), grouped from the
    labels: the truth of the tally's figures. The leave-one-out gold is computed once per label in a
    subquery and the outer query only counts (Django's aggregates would repeat the CASE in each)."""
    loo, others = leave_one_out_gold()
    inner = (
        _validation_labels(scope)
        .alias(**others)
        .annotate(loo=loo, scheme=F("pair__dataset__label_scheme"))
        .values("worker_id", "label", "seconds", "loo", "scheme")
    )
    found = sql_of(inner)
    if found is None:  # a scope of no dataset (a researcher in no team yet): no labels
        return {}
    sql, params = found
    counts = {
        "n": "TRUE",
        "timed": "seconds IS NOT NULL",
        "loo_items": "loo <> %s",
        "loo_agreements": "loo = label",
        **{f"own_{label}": "label = %s" for label in LABELS},
        **{f"three_way_{label}": "label = %s AND scheme = %s" for label in LABELS},
        **{f"loo_own_{label}": "label = %s AND loo <> %s" for label in LABELS},
        **{f"loo_gold_{label}": "loo = %s" for label in LABELS},
    }
    values = {
        "loo_items": [NO_GOLD],
        **{f"own_{label}": [label] for label in LABELS},
        **{f"three_way_{label}": [label, THREE_WAY_SCHEME] for label in LABELS},
        **{f"loo_own_{label}": [label, NO_GOLD] for label in LABELS},
        **{f"loo_gold_{label}": [label] for label in LABELS},
    }
    columns = ", ".join(f"count(*) FILTER (WHERE {condition}) AS {name}" for name, condition in counts.items())
    outer_params = [value for name in counts for value in values.get(name, [])]
    query = f"SELECT worker_id, {columns} FROM ({sql}) AS scored GROUP BY worker_id"
    with connection.cursor() as cursor:
        cursor.execute(query, [*outer_params, *params])
        names = [column[0] for column in cursor.description]
        return {row[0]: dict(zip(names, row, strict=False)) for row in cursor.fetchall()}


def median_seconds(scope: Scope = EVERYTHING) -> dict[int, float]:
    """Statement 2: {worker id: median seconds per validation item}, in SQL."""
    found = sql_of(_validation_labels(scope).filter(seconds__isnull=False).values("worker_id", "seconds"))
    return median_per_worker(*found) if found else {}


def median_per_worker(sql: str, params: Sequence[Any]) -> dict[int, float]:
    """{worker id: median of `seconds`} over the rows (worker_id, seconds) of the query `sql`, in SQL."""
    query = f"SELECT worker_id, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FROM ({sql}) s GROUP BY worker_id"
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return {worker_id: float(value) for worker_id, value in cursor.fetchall()}


def catch_figures(scope: Scope = EVERYTHING, study: Study | None = None) -> dict[int, tuple[int, int]]:
    """Statement 3: {worker id: (seen, matched)} of the catch-trial answers (of a dataset, of a study)."""
    answers = scope.filter(CatchTrialAnswer.objects.all(), via="pair__dataset")
    if study is not None:
        answers = answers.filter(study_session__study=study)
    return {
        row["worker_id"]: (row["seen"], row["matched"])
        for row in answers.values("worker_id")
        .annotate(seen=Count("id"), matched=Count("id", filter=Q(matched=True)))
        .order_by()
    }


def writer_figures(scope: Scope = EVERYTHING) -> dict[int, tuple[int, int]]:
    """Statement 4: {author id: (five-label pairs, of which gold differs from the author's label)}."""
    pairs = scope.filter(Pair.objects.filter(author__isnull=False, label_count=LABELS_PER_PAIR))
    return {
        row["author_id"]: (row["n"], row["differs"])
        for row in pairs.values("author_id")
        .annotate(n=Count("id"), differs=Count("id", filter=~Q(gold_label=F("author_label"))))
        .order_by()
    }


# Slack of the histogram's comparison with the too-fast threshold: a bucket's bounds are sums of
# floats, and a label exactly on a bound must not be decided by a rounding.
_BOUND_SLACK = 1e-9


def histogram_medians(
    sums: dict[int, dict[str, Any]],
    scope: Scope = EVERYTHING,
    *,
    threshold: float = flag_rules.TOO_FAST_SECONDS,
    min_items: int = flag_rules.TOO_FAST_MIN_ITEMS,
) -> dict[int, float]:
    """{worker id: median seconds per item} from the histogram of `corpus.worker_tally.worker_sums`
    rows: the middle of the bounds the two middle labels' buckets put on the median (within 4.6%
    of it). Where the bounds leave open whether the median is below `threshold` (the
    too-fast flag's, for a worker with at least `min_items` timed labels), the exact median read
    from the labels of those workers (one statement, none when no worker is open): so the flag
    decides exactly as on the exact medians."""
    medians: dict[int, float] = {}
    open_workers = []
    for pk, row in sums.items():
        if not row["timed"]:
            continue
        lower, upper = bucket_bounds(row["lower_middle"]), bucket_bounds(row["upper_middle"])
        lowest, highest = (lower[0] + upper[0]) / 2, (lower[1] + upper[1]) / 2  # the median is in [lowest, highest)
        medians[pk] = lowest if highest == float("inf") else (lowest + highest) / 2
        decided = highest + _BOUND_SLACK <= threshold or lowest - _BOUND_SLACK >= threshold
        if row["timed"] >= min_items and not decided:
            open_workers.append(pk)
    if open_workers:
        timed = _validation_labels(scope).filter(seconds__isnull=False, worker_id__in=open_workers)
        if (found := sql_of(timed.values("worker_id", "seconds"))) is not None:
            medians.update(median_per_worker(*found))
    return medians


def worker_quality(scope: Scope = EVERYTHING, **flag_options: Any) -> list[WorkerQuality]:
    """Every worker with labels, catch trials or written pairs, with their figures and flags
    (`flag_options` go to `quality.flags.flag_workers`), flagged workers first, then by labels
    given. The figures are the maintained tally's; the median seconds per item is the histogram's
    (`histogram_medians`: within 4.6%, exact where the too-fast flag needs it)."""
    scope = scope.whole()  # a worker's figures are of every split
    labels = worker_sums(scope)
    medians = histogram_medians(
        labels,
        scope,
        threshold=flag_options.get("min_median_seconds", flag_rules.TOO_FAST_SECONDS),
        min_items=flag_options.get("too_fast_min_items", flag_rules.TOO_FAST_MIN_ITEMS),
    )
    catches = catch_figures(scope)
    writers = {pk: (row["five"], row["five_differs"]) for pk, row in writer_sums(scope).items() if row["five"]}
    ids = set(labels) | set(catches) | set(writers)
    rows: dict[int, WorkerQuality] = {}
    for worker in Worker.objects.filter(pk__in=ids).select_related("user").only(*WORKER_COLUMNS):
        row = labels.get(worker.pk, {})
        seen, matched = catches.get(worker.pk, (0, 0))
        written, differs = writers.get(worker.pk, (0, 0))
        rows[worker.pk] = WorkerQuality(
            worker=worker,
            labels_given=row.get("n", 0),
            label_counts={label: row[f"own_{label}"] for label in LABELS if row.get(f"own_{label}")},
            three_way_counts={label: row[f"three_way_{label}"] for label in LABELS if row.get(f"three_way_{label}")},
            loo_items=row.get("loo_items", 0),
            loo_agreements=row.get("loo_agreements", 0),
            loo_own_label_counts={label: row[f"loo_own_{label}"] for label in LABELS if row.get(f"loo_own_{label}")},
            loo_gold_counts={label: row[f"loo_gold_{label}"] for label in LABELS if row.get(f"loo_gold_{label}")},
            timed_items=row.get("timed", 0),
            median_seconds=medians.get(worker.pk),
            catch_seen=seen,
            catch_matched=matched,
            pairs_written=written,
            written_gold_differs=differs,
        )
    # Flags over validators only (the binomial test's BH correction runs over those tested).
    for flag in flag_rules.flag_workers([row.figures() for row in rows.values() if row.labels_given], **flag_options):
        rows[int(flag.worker)].flags.append(flag)  # the figures were named by Worker pk
    # Catch trials judged beside the ordinary labels: right on the catch trials, at chance elsewhere.
    catchers = [pk for pk, row in rows.items() if row.catch_seen]
    for pk, evidence in guesser_evidence_by_worker(catchers, catch_trials=False).items():
        catcher = rows[pk]
        caught = sequential.catch_only_flag(pk, catcher.catch_seen, catcher.catch_matched, evidence)
        if caught is not None:
            catcher.flags.append(caught)
    # One person under many ids: participant ids seen in one browser (researchers only), among the
    # scope's workers: an id that did nothing on these datasets (another lab's) is neither named nor
    # counted here.
    for pk, others in shared_device_ids(worker_ids=rows).items():
        others_in_scope = others & rows.keys()
        shared = flag_rules.many_ids_flag(pk, others_in_scope) if pk in rows and others_in_scope else None
        if shared is not None:  # shared_device_ids lists only ids with others
            rows[pk].flags.append(shared)
    return sorted(rows.values(), key=lambda row: (not row.flags, -row.labels_given, row.worker.pk))


def flagged_worker_ids(rows: list[WorkerQuality]) -> list[int]:
    """The workers of `worker_quality` rows that a check flags: the one rule for the flagged
    adjudication queue and its count, however the rows were read (cached or not)."""
    return sorted(row.worker.pk for row in rows if row.flags)


def next_pair_to_label(scope: Scope = EVERYTHING) -> Pair | None:
    """The next pair for a researcher to label: no reference label yet, pairs with all five labels
    first (the best catch trials are pairs the crowd has judged), then the rest; oldest first. Two
    reads that each stop at their first row (the partial index `pair_five_labels`, then the primary
    key): ordering every pair by its label count would read the whole pair table."""
    pairs = Pair.objects.exclude(pk__in=ReferenceLabel.objects.values("pair_id")).select_related("premise__genre")
    pairs = scope.filter(pairs)
    judged = pairs.filter(label_count__gte=LABELS_PER_PAIR).order_by("id").first()
    return judged or pairs.order_by("id").first()


def reference_label_counts(scope: Scope = EVERYTHING) -> dict[str, int]:
    references = scope.filter(ReferenceLabel.objects.all(), via="pair__dataset")
    return references.aggregate(labelled=Count("id"), catch_trials=Count("id", filter=Q(is_catch_trial=True)))


def sequential_evidence(worker: Worker) -> sequential.SequentialResult:
    """The sequential guesser test over every judgment this worker ever gave (every session, study,
    dataset and task kind that collects judgments): `guesser_evidence_by_worker`."""
    return guesser_evidence_by_worker([worker.pk])[worker.pk]


def guesser_evidence_by_worker(
    worker_ids: Iterable[int], *, catch_trials: bool = True
) -> dict[int, sequential.SequentialResult]:
    """The one guesser evidence of every task kind that collects judgments, per worker, so a
    guesser cannot hide in a task kind no test reads (docs/quality.md, "One set of checks for every
    task kind"). Each answer is compared with the best reference its item has, one stratum per kind
    of comparison: the written label (two-way datasets a stratum of their own), else a researcher's
    reference label, else the other judges' most common answer; catch-trial and qualification
    answers against the researcher's label unless `catch_trials` is False (the catch-only flag and
    the catch bonus ask about the *other* labels). Answers of excluded workers and of workers held
    for guessing are never a reference.
    """
    return {
        pk: sequential.combined_sequential_test(
            sequential.Stratum(
                own=counts.own,
                reference=counts.reference,
                agreements=counts.agreements,
                kappa=_KAPPA.get(kind, sequential.ORDINARY_KAPPA),
            )
            for (_source, kind), counts in by_stratum.items()
        )
        for pk, by_stratum in _tallies_by_worker(worker_ids, catch_trials=catch_trials).items()
    }


def _tallies_by_worker(
    worker_ids: Iterable[int], *, catch_trials: bool = True
) -> dict[int, dict[tuple[str, str], "_Tally"]]:
    """{worker pk: {(source, kind): tally}}: every answer against the best reference its item has
    (`guesser_evidence_by_worker` says which); the chance test and the quality test weigh the same
    tallies, each by its own hypotheses."""
    wanted = list(dict.fromkeys(worker_ids))
    strata: dict[int, dict[tuple[str, str], _Tally]] = {pk: {} for pk in wanted}

    def tally(worker: int, stratum: tuple[str, str], own: str, reference: str, n: int = 1) -> None:
        counts = strata[worker].setdefault(stratum, _Tally())
        counts.own[own] = counts.own.get(own, 0) + n
        counts.reference[reference] = counts.reference.get(reference, 0) + n
        counts.agreements += n if own == reference else 0

    if not wanted:
        return {}
    # Validation labels (positions 2 on) on pairs written for a label: summed from the maintained
    # worker tally (`corpus.worker_tally`), which keeps each label's pair's written label.
    for worker, label, written, scheme, n in written_label_counts(wanted):
        tally(worker, ("written", "two" if scheme != THREE_WAY_SCHEME else "three"), label, written, n)
    # Items without a written label (no author either: their first judgment takes position 1): a
    # researcher's label, else the other judges'. Read from those pairs (the partial index
    # `pair_unwritten`), not from every label of the workers joined to its pair: on a corpus of
    # written pairs there are none, and the read would grow with the crowd's labels.
    unwritten = list(
        ValidationLabel.objects.filter(worker_id__in=wanted)
        .exclude(pair__author_label__in=LABELS)
        .values_list("worker_id", "pair_id", "label", "pair__reference_label__label")
    )
    others = _others_answers(
        ValidationLabel.objects.all(), [pair for _, pair, _, reference in unwritten if not reference], "label"
    )
    for worker, pair, label, reference in unwritten:
        if reference:
            tally(worker, ("reference", "three"), label, reference)
        elif (common := _most_common_of_others(others.get(pair, []), worker)) is not None:
            tally(worker, ("others", common[1]), label, common[0])
    if catch_trials:
        for worker, label, expected, scheme, n in (
            CatchTrialAnswer.objects.filter(worker_id__in=wanted)
            .values("worker_id", "label", "expected", "pair__dataset__label_scheme")
            .annotate(n=Count("id"))
            .order_by()
            .values_list("worker_id", "label", "expected", "pair__dataset__label_scheme", "n")
        ):
            tally(worker, ("catch", "three" if scheme == THREE_WAY_SCHEME else "two"), label, expected, n)
        # Qualification answers (every try, passed or not) against the researchers' labels: known
        # answers the worker did not help make, weighed as catch trials are, so a study with a
        # qualification test has evidence before its first batch.
        for worker, label, expected, n in (
            QualificationAnswer.objects.filter(attempt__worker_id__in=wanted)
            .values("attempt__worker_id", "label", "reference__label")
            .annotate(n=Count("id"))
            .order_by()
            .values_list("attempt__worker_id", "label", "reference__label", "n")
        ):
            tally(worker, ("qualification", "three"), label, expected, n)
    judged = list(
        GrammaticalityJudgment.objects.filter(worker_id__in=wanted).values_list("worker_id", "pair_id", "judgment")
    )
    grammar = _others_answers(GrammaticalityJudgment.objects.all(), [pair for _, pair, _ in judged], "judgment")
    for worker, pair, judgment in judged:
        if (common := _most_common_of_others(grammar.get(pair, []), worker)) is not None:
            tally(worker, ("grammaticality", common[1]), judgment, common[0])
    return strata


def quality_evidence(
    worker: Worker,
    *,
    poor: float = sequential.DEFAULT_POOR_ACCURACY,
    acceptable: float = sequential.DEFAULT_ACCEPTABLE_ACCURACY,
    more: Iterable[sequential.QualityStratum] = (),
) -> sequential.QualityResult:
    """The quality test over every judgment this worker ever gave: `quality_evidence_by_worker`."""
    results = quality_evidence_by_worker([worker.pk], poor=poor, acceptable=acceptable, more={worker.pk: list(more)})
    return results[worker.pk]


def quality_evidence_by_worker(
    worker_ids: Iterable[int],
    *,
    poor: float = sequential.DEFAULT_POOR_ACCURACY,
    acceptable: float = sequential.DEFAULT_ACCEPTABLE_ACCURACY,
    more: dict[int, list[sequential.QualityStratum]] | None = None,
) -> dict[int, sequential.QualityResult]:
    """The quality test of "accuracy at the `poor` level" against "at the `acceptable` level", per
    worker, over the strata of the guesser evidence (`guesser_evidence_by_worker`: the same answers,
    the same references), each weighted by how often its kind of reference is right
    (`sequential.REFERENCE_ACCURACY`), plus the worker's speed (median seconds per validation item: too
    fast to read is evidence of "poor") and `more` strata a task app adds (MPE's per-premise labels,
    which this app cannot read: validation sits above it)."""
    tallies = _tallies_by_worker(worker_ids)
    speeds = _timing_by_worker(list(tallies))
    results = {}
    for pk, by_stratum in tallies.items():
        strata = [
            sequential.QualityStratum(
                own=counts.own,
                reference=counts.reference,
                agreements=counts.agreements,
                reference_accuracy=sequential.REFERENCE_ACCURACY[kind if source in _BY_OTHERS else source],
                labels=2 if kind == "two" else 3,
            )
            for (source, kind), counts in by_stratum.items()
        ]
        timed, median = speeds.get(pk, (0, None))
        results[pk] = sequential.sequential_quality_test(
            [*strata, *(more or {}).get(pk, [])],
            poor=poor,
            acceptable=acceptable,
            timed_items=timed,
            median_seconds=median,
        )
    return results


# Strata whose reference is other judges' answers: their reference accuracy is by kind (how many agree).
_BY_OTHERS = ("others", "grammaticality")


def _timing_by_worker(worker_ids: list[int]) -> dict[int, tuple[int, float | None]]:
    """{worker pk: (timed validation items, median seconds per item)}: the speed evidence."""
    if not worker_ids:
        return {}
    timed_labels = ValidationLabel.objects.filter(
        worker_id__in=worker_ids, position__gt=AUTHOR_POSITION, seconds__isnull=False
    )
    counts = dict(timed_labels.values("worker_id").annotate(n=Count("id")).order_by().values_list("worker_id", "n"))
    found = sql_of(timed_labels.values("worker_id", "seconds"))
    medians = median_per_worker(*found) if found else {}
    return {pk: (counts[pk], medians.get(pk)) for pk in counts}


@dataclass
class _Tally:
    own: dict[str, int] = field(default_factory=dict)
    reference: dict[str, int] = field(default_factory=dict)
    agreements: int = 0


def _others_answers(answers: QuerySet[Any], pair_ids: list[int], column: str) -> dict[int, list[tuple[int, str]]]:
    """{pair pk: [(worker pk, answer), ...]} of these pairs' answers by workers neither excluded nor
    held at chance already (a completion code held for guessing): a guesser's answers are no
    reference for the next judge."""
    found: dict[int, list[tuple[int, str]]] = {}
    if not pair_ids:
        return found
    held = CodeHold.objects.values("session__worker_id")
    # Validation labels also wait for a market's word (awaiting_market_session); other answer tables do not.
    counted = labels_that_count() if answers.model is ValidationLabel else answers_of_counted_workers()
    for pair, worker, answer in (
        answers.filter(counted, pair_id__in=list(set(pair_ids)), worker__isnull=False)
        .exclude(worker_id__in=held)
        .values_list("pair_id", "worker_id", column)
        .order_by()
    ):
        found.setdefault(pair, []).append((worker, answer))
    return found


def _most_common_of_others(answers: list[tuple[int, str]], worker: int) -> tuple[str, str] | None:
    """(the other judges' most common answer of an item, "agreeing" when two or more gave it, else
    "one other"), or None (no other judge, or a tie)."""
    counted = Counter(answer for judge, answer in answers if judge != worker).most_common(2)
    if not counted or (len(counted) == 2 and counted[0][1] == counted[1][1]):
        return None
    return counted[0][0], "agreeing" if counted[0][1] >= 2 else "one other"


# The kappa of an ordinary judge against each kind of reference (`sequential.ordinary_agreement`).
_KAPPA = {"agreeing": sequential.AGREEING_OTHERS_KAPPA, "one other": sequential.OTHERS_KAPPA}


def flag_marks(worker_ids: Iterable[int]) -> dict[int, list[str]]:
    """{worker pk: ["flagged: <flag>", ...]} for those of these workers the quality checks flag (the
    workers page's flags): the marks of the approval and bonus lists (`crowd.registry.worker_marks`)."""
    wanted = set(worker_ids)
    if not wanted:
        return {}
    return {row.worker.pk: flag_words(row) for row in worker_quality() if row.worker.pk in wanted and row.flags}


def flag_words(row: WorkerQuality) -> list[str]:
    """A flagged worker's marks on the approval and bonus lists: "flagged: <flag>" per flag."""
    return flag_kind_words(flag.kind for flag in row.flags)


def flag_kind_words(kinds: Iterable[str]) -> list[str]:
    """`flag_words` of the flags of these kinds."""
    return [f"flagged: {kind.replace('_', ' ')}" for kind in kinds]
