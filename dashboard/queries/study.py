"""The study pages: per study, its sessions' funnel, time per task, hourly pay against the
payment, live claims, what is left in its pool and what it costs; the sessions as a CSV. What each
figure counts: docs/dashboard.md, *Studies*.

Every figure is one statement, whatever the study's size, and starts from the sessions that
count, decided in one place (`counted_sessions`).
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.postgres.expressions import ArraySubquery
from django.db import connection
from django.db.models import Count, Exists, F, IntegerField, Max, Min, OuterRef, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from base.subquery import EqualsAny, sql_of
from collection.models import WritingClaim
from collection.selectors import pool_premises
from consent.selectors import ConsentOverview, consent_counts, current_sheet, study_withdrawals
from corpus.models import LABELS_PER_PAIR, Pair, PairTally
from crowd import claiming
from crowd.holds import ever_held, hold_texts, hold_waits, money_may_go
from crowd.models import ClaimStatus, SessionEnding, Study, StudyAccess, StudySession, TaskClaim, TaskKind
from crowd.selectors import counted_sessions, counted_sessions_filter, pool_limits
from crowd.stranding import stranded_filter
from markets.connections import connection_of
from markets.identity import ArrivalChecks, arrival_checks
from markets.models import ReviewDecision, ReviewState
from quality.models import QualificationAttempt
from teams.access import scoped
from validation.models import PremiseLabelClaim, ValidationClaim

from ..figure_cache import cached_for_study, refreshable_for_study
from .study_costs import costs, hourly, payment_per_session

# The claim model of each kind of study, and whether its task is a batch of claims (paid once).
CLAIMS_OF_KIND: dict[str, tuple[type[TaskClaim], bool]] = {
    TaskKind.WRITING: (WritingClaim, False),
    TaskKind.ADVERSARIAL: (WritingClaim, False),
    TaskKind.VALIDATION: (ValidationClaim, True),
    TaskKind.MPE_JUDGMENT: (ValidationClaim, True),
    TaskKind.PREMISE_LABELS: (PremiseLabelClaim, True),
}

# The batched claim models' batch id (a field of the concrete models, not of TaskClaim).
BATCH_FIELD = "batch"
# A validation pool's pairs (or pair tally rows) still short of their labels.
WANTING_LABELS = {"needs_validation": True, "stopped_early": False, "label_count__lt": LABELS_PER_PAIR}

SESSION_CSV_COLUMNS = [
    "participant",
    "market",
    "started_at",
    "completed_at",
    "closed_at",
    "status",
    "tasks_done",
    "minutes",
    "hold_reason",
    "closed_reason",
]


def study(slug: str) -> Study | None:
    """With its market connection: `markets.connections.connection_of` reads it from here."""
    return Study.objects.select_related("dataset", "market_connection").filter(slug=slug).first()


def studies_with_counts(user: Any) -> list[Study]:
    """Every study of the user's teams with its counts of sessions (one statement)."""
    counted = counted_sessions_filter("sessions__")
    return list(
        scoped(Study.objects.all(), user)
        .select_related("dataset")
        .annotate(
            n_sessions=Count("sessions", filter=counted & Q(sessions__pk__isnull=False)),
            n_completed=Count("sessions", filter=counted & Q(sessions__completed_at__isnull=False)),
            n_open=Count(
                "sessions", filter=counted & Q(sessions__completed_at__isnull=True, sessions__closed_at__isnull=True)
            ),
        )
        .order_by("-is_active", "slug")
    )


def _admission(of_study: Study) -> tuple[dict[str, Exists], Q]:
    """The annotations and the filter over them that say a session's worker is admitted now (crowd.access)."""
    worker = OuterRef("worker_id")
    through = Study.blocked_workers.through.objects
    annotations = {"on_block_list": Exists(through.filter(study_id=of_study.pk, worker_id=worker))}
    admitted = Q(on_block_list=False)
    if of_study.access == StudyAccess.CLOSED:
        allowed = Study.allowed_workers.through.objects.filter(study_id=of_study.pk, worker_id=worker)
        annotations["on_allow_list"] = Exists(allowed)
        admitted &= Q(on_allow_list=True)
    if of_study.access == StudyAccess.QUALIFIED:
        passed = QualificationAttempt.objects.filter(test__study_id=of_study.pk, passed=True, worker_id=worker)
        annotations["passed_test"] = Exists(passed)
        admitted &= Q(passed_test=True)
    return annotations, admitted


def _claim_model(of_study: Study) -> tuple[type[TaskClaim], bool]:
    return CLAIMS_OF_KIND.get(of_study.task_kind, (ValidationClaim, True))


def _claimed(of_study: Study) -> Exists:
    """Whether a session claimed a task of the study (released or expired claims too)."""
    claim_model, _ = _claim_model(of_study)
    return Exists(claim_model._default_manager.filter(study_session_id=OuterRef("pk")))


def _ending(ending: SessionEnding) -> Q:
    return Q(closed_at__isnull=False, ended_as=ending)


def funnel(of_study: Study) -> dict[str, int]:
    return {**session_funnel(of_study), **task_money(of_study)}


def session_funnel(of_study: Study) -> dict[str, int]:
    """Where the sessions got to; one aggregate, with a claimed-task check per session."""
    admission, admitted = _admission(of_study)
    sessions = counted_sessions(of_study).annotate(claimed=_claimed(of_study), **admission)
    # Told the pool ran out before their last task (crowd.stranding): apart from those in progress.
    stranded = stranded_filter()
    started = Q(claimed=True) | Q(tasks_done__gt=0)
    completed = Q(completed_at__isnull=False)
    figures = sessions.aggregate(
        arrived=Count("pk"),
        qualified=Count("pk", filter=admitted),
        started=Count("pk", filter=started),
        completed=Count("pk", filter=completed),
        held=Count("pk", filter=completed & ever_held()),
        returned=Count("pk", filter=_ending(SessionEnding.RETURNED)),
        timed_out=Count("pk", filter=_ending(SessionEnding.TIMED_OUT)),
        rejected=Count("pk", filter=_ending(SessionEnding.REJECTED)),
        in_progress=Count("pk", filter=Q(completed_at__isnull=True, closed_at__isnull=True) & started & ~stranded),
        stranded=Count("pk", filter=stranded),
    )
    return {key: int(value or 0) for key, value in figures.items()}


def task_money(of_study: Study) -> dict[str, int]:
    """The tasks by where their money stands and whether a market is connected; no claim is read."""
    completed = Q(completed_at__isnull=False)
    figures = counted_sessions(of_study).aggregate(
        market_connected=Count("study__market_connection"),
        tasks=Coalesce(Sum("tasks_done"), 0),
        # Money follows holds (crowd.holds): a refused hold's tasks are in neither figure.
        payable_tasks=Coalesce(Sum("tasks_done", filter=money_may_go()), 0),
        **{
            f"tasks_{state}": Coalesce(Sum("tasks_done", filter=among), 0)
            for state, among in task_payment_states(of_study).items()
        },
        held_tasks=Coalesce(Sum("tasks_done", filter=hold_waits()), 0),
        # Completed sessions left out of the times and the hourly pay: held, waiting or refused.
        held_apart=Count("pk", filter=completed & ~money_may_go()),
    )
    return {key: int(value or 0) for key, value in figures.items()}


def task_payment_states(of_study: Study) -> dict[str, Q]:
    """Where the money of a session's tasks stands, as filters over sessions. Owed: complete, or
    stranded with the study's partial-completion code, and not decided on the market; paid: only a
    market's confirmed approval. A rejection, a refused hold, a session closed unfinished and a
    stranded one asked to return owe nothing; a held code's tasks wait apart (`hold_waits`)."""
    stranded = stranded_filter()
    complete = Q(completed_at__isnull=False) & money_may_go()
    if of_study.partial_completion_code:
        complete |= stranded
    approve = Q(market_review__decision=ReviewDecision.APPROVE)
    return {
        "running": Q(completed_at__isnull=True, closed_at__isnull=True) & ~stranded,
        "stranded": stranded,
        "owed": complete & (Q(market_review__isnull=True) | Q(market_review__state=ReviewState.FAILED)),
        "approved": complete & approve & Q(market_review__state=ReviewState.SENT),
        "paid": complete & approve & Q(market_review__state=ReviewState.CONFIRMED),
    }


@dataclass
class Spread:
    """Median and interquartile range of some seconds; n of them."""

    n: int = 0
    median: float | None = None
    q1: float | None = None
    q3: float | None = None
    # When the figures are of a sample: of the latest this many sessions only (the page says "about").
    sample_sessions: int = 0


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return max((end - start).total_seconds(), 0.0)


def paid_sessions(of_study: Study) -> QuerySet[StudySession]:
    """The times and the hourly pay are theirs, so a held session never makes the pay look better."""
    return counted_sessions(of_study).filter(money_may_go())


# Time per task is read from the claims of at most this many sessions: a study's quartiles move
# little past a few thousand tasks, and it may have hundreds of thousands of claims.
TASK_TIME_SESSIONS = 40


def task_times(of_study: Study, *, sessions: int = TASK_TIME_SESSIONS) -> Spread:
    """Time per submitted task (a batch: first claim to last submit) of the latest `sessions` whose
    money may go (`sample_sessions` says when there are more), so sized by the sample, not the study."""
    claim_model, batched = _claim_model(of_study)
    latest = paid_sessions(of_study).order_by("-pk").values("pk")
    claims = claim_model._default_manager.filter(
        # Each sampled session's claims by its key (`= ANY(ARRAY(...))`): as `IN (subquery)` the
        # planner hashed the sample and read every claim of the study against it.
        EqualsAny(F("study_session_id"), ArraySubquery(latest[:sessions])),
        status=ClaimStatus.SUBMITTED,
        submitted_at__isnull=False,
    )
    rows: Any
    if batched:
        rows = (
            claims.values(BATCH_FIELD)
            .annotate(start=Min("created_at"), end=Max("submitted_at"))
            .values_list("start", "end")
        )
    else:
        rows = claims.values_list("created_at", "submitted_at")
    # Whether the study has more sessions than the sample, asked in the same statement.
    more = sql_of(latest[sessions : sessions + 1])
    spread = spread_in_sql(rows, more_than_sampled=more)
    if spread.sample_sessions:
        spread.sample_sessions = sessions
    return spread


def spread_in_sql(rows: QuerySet[Any], *, more_than_sampled: tuple[str, Sequence[Any]] | None = None) -> Spread:
    """The Spread of the seconds from each row's first column to its second (none below 0), in one
    row from the database (as `statistics.quantiles(method="inclusive")`). `more_than_sampled`: a
    statement whose rows, if any, say the rows are a sample (`sample_sessions` is then 1)."""
    found = sql_of(rows)
    if found is None:
        return Spread()
    sql, params = found
    sampled, sampled_params = ("false", ()) if more_than_sampled is None else more_than_sampled
    if more_than_sampled is not None:
        sampled = f"EXISTS ({sampled})"
    query = (
        f"SELECT count(*), percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY seconds), {sampled} FROM "
        f"(SELECT greatest(extract(epoch FROM (t.e - t.s)), 0)::float AS seconds FROM ({sql}) AS t(s, e)) AS d"
    )
    with connection.cursor() as cursor:
        cursor.execute(query, [*sampled_params, *params])
        n, quartiles, is_sample = cursor.fetchone()
    if not n:
        return Spread(sample_sessions=int(bool(is_sample)))
    q1, median, q3 = (float(value) for value in quartiles)
    return Spread(n, median, q1, q3, sample_sessions=int(bool(is_sample)))


def session_times(of_study: Study) -> Spread:
    """Time from arrival to completion of each completed session whose money may go."""
    rows = paid_sessions(of_study).filter(completed_at__isnull=False).values_list("started_at", "completed_at")
    return spread_in_sql(rows)


def live_claims(of_study: Study) -> dict[str, int]:
    """The study's open claims not yet expired, and the sessions holding them, looked up by the
    sessions' ids (`= ANY`, the open claims' session index): as a join, with statistics taken
    before the crowd's claims were open, each session of the study read every open claim."""
    claim_model, _ = _claim_model(of_study)
    sessions = ArraySubquery(counted_sessions(of_study).order_by().values("pk"))
    figures = (
        claim_model._default_manager.filter(claiming.live_claims(timezone.now()))
        .filter(EqualsAny(F("study_session_id"), sessions))
        .aggregate(claims=Count("pk"), sessions=Count("study_session", distinct=True))
    )
    return {key: int(value or 0) for key, value in figures.items()}


def pairs_wanting_labels(of_study: Study, limits: tuple[list[int], list[str]] | None = None) -> QuerySet[Pair]:
    """The pairs of the study's pool (crowd.selectors.pool_limits, or `limits`) still short of labels."""
    pairs = Pair.objects.filter(dataset_id=of_study.dataset_id, **WANTING_LABELS)
    genres, sources = limits if limits is not None else pool_limits(of_study)
    if genres:
        pairs = pairs.filter(premise__genre_id__in=genres)
    if sources:
        pairs = pairs.filter(premise__source__in=sources)
    return pairs


def what_is_left(of_study: Study) -> dict[str, Any]:
    """The work the study's pool still needs (the pre-launch check takes these figures); None
    figures for a kind not counted here. One statement: a validation pool's sums are the pair
    tally's (sized by its keys, not the pairs) but for a pool limited to import files, which the
    tally does not key."""
    kind = of_study.task_kind
    if kind in (TaskKind.VALIDATION, TaskKind.MPE_JUDGMENT):
        genres, sources = pool_limits(of_study)
        if sources:
            figures = pairs_wanting_labels(of_study, (genres, sources)).aggregate(
                items=Count("pk"),
                units=Coalesce(Sum(LABELS_PER_PAIR - F("label_count"), output_field=IntegerField()), 0),
            )
        else:
            queued = PairTally.objects.filter(dataset_id=of_study.dataset_id, **WANTING_LABELS)
            if genres:
                queued = queued.filter(genre_id__in=genres)
            missing = F("n") * (LABELS_PER_PAIR - F("label_count"))
            figures = queued.aggregate(
                items=Coalesce(Sum("n"), 0), units=Coalesce(Sum(missing, output_field=IntegerField()), 0)
            )
        return {**figures, "items_word": "pairs", "units_word": "labels"}
    if kind in (TaskKind.WRITING, TaskKind.ADVERSARIAL):
        per_premise = of_study.dataset.writings_per_premise
        wanting = Q(writings_done__lt=per_premise) & ~Q(split="")
        figures = pool_premises(of_study.dataset, of_study).aggregate(
            premises=Count("pk"),
            unassigned=Count("pk", filter=Q(split="")),
            items=Count("pk", filter=wanting),
            units=Coalesce(
                Sum(Value(per_premise) - F("writings_done"), filter=wanting, output_field=IntegerField()), 0
            ),
        )
        return {**figures, "items_word": "premises", "units_word": "writings"}
    return {"items": None, "units": None, "items_word": "", "units_word": ""}


def crowd_figures(of_study: Study) -> dict[str, Any]:
    """The figures sized by the study's crowd that are neither money nor a pre-launch check: the
    figure cache's (`cached_for_study`)."""
    return cached_for_study("study-crowd", of_study.pk, lambda: _crowd_figures(of_study))


@refreshable_for_study("study-crowd")
def _crowd_figures_of(study_id: int) -> dict[str, Any] | None:
    found = Study.objects.select_related("dataset", "market_connection").filter(pk=study_id).first()
    return _crowd_figures(found) if found is not None else None


def _crowd_figures(of_study: Study) -> dict[str, Any]:
    arrivals = arrival_checks(of_study)
    return {
        "sessions": session_funnel(of_study),
        "task_times": task_times(of_study),
        "session_times": session_times(of_study),
        "live": live_claims(of_study),
        "arrival_counts": arrivals.counts,
        "refused_arrivals": arrivals.refused,
        "consent_counts": consent_counts(of_study),
        "withdrawals": list(study_withdrawals(of_study)),
    }


def overview(of_study: Study) -> dict[str, Any]:
    """Everything the study page shows; the pre-launch check takes its `left` and the consent's
    sheet. The crowd's figures are the cache's (`crowd_figures`); money, the pool and the sheet are
    read on every request, so a payment or a hold's decision shows at once."""
    crowd = crowd_figures(of_study)
    connection = connection_of(of_study)
    counts = {**crowd["sessions"], **task_money(of_study)}
    per_task, per_session = crowd["task_times"], crowd["session_times"]
    payment = payment_per_session(of_study)
    task_hourly = hourly(of_study.payment_per_task, per_task.median)
    connected = counts.pop("market_connected") > 0
    return {
        "funnel": counts,
        "task_times": per_task,
        "session_times": per_session,
        "payment_per_session": payment,
        "hourly_pay": hourly(payment, per_session.median),
        "task_hourly_pay": task_hourly,
        "live": crowd["live"],
        "left": what_is_left(of_study),
        "consent": ConsentOverview(current_sheet(of_study), crowd["consent_counts"], crowd["withdrawals"]),
        "arrival_checks": ArrivalChecks(
            connection.get_market_display() if connection else "", crowd["arrival_counts"], crowd["refused_arrivals"]
        ),
        # Without a connection the server never hears that anything was paid: the page says so.
        "has_market_connection": connected,
        "costs": costs(
            of_study,
            counts["payable_tasks"],
            counts["held_tasks"],
            {state: counts[f"tasks_{state}"] for state in task_payment_states(of_study)},
            connected=connected,
        ),
    }


# The endings a session's status names; a withdrawn or erased visit is "closed".
MARKET_ENDINGS = {
    ending.value: str(ending.label)
    for ending in (SessionEnding.RETURNED, SessionEnding.TIMED_OUT, SessionEnding.REJECTED)
}


def session_status(row: Mapping[str, Any]) -> str:
    if row["completed_at"] is not None:
        return "held" if row["hold_texts"] else "completed"
    if row["closed_at"] is not None:
        return MARKET_ENDINGS.get(row["ended_as"], "closed")
    if row.get("stranded_at") is not None:
        return "stranded"
    return "in progress" if row["tasks_done"] or row["claimed"] else "arrived"


def session_rows(of_study: Study) -> Iterator[list[Any]]:
    """The sessions for the CSV, oldest first. Participants are pseudonyms (`p<n>`, by first
    arrival): the file names no market id, so it can travel with the data."""
    rows = (
        counted_sessions(of_study)
        .annotate(claimed=_claimed(of_study), hold_texts=hold_texts())
        .order_by("started_at", "pk")
        .values(
            "claimed",
            "worker_id",
            "worker__market",
            "started_at",
            "completed_at",
            "closed_at",
            "ended_as",
            "closed_reason",
            "hold_texts",
            "tasks_done",
            "stranded_at",
        )
    )
    pseudonyms: dict[int, str] = {}
    for row in rows.iterator(chunk_size=2000):
        participant = pseudonyms.setdefault(row["worker_id"], f"p{len(pseudonyms) + 1}")
        end = row["completed_at"] or row["closed_at"]
        seconds = _seconds(row["started_at"], end)
        yield [
            participant,
            row["worker__market"],
            row["started_at"].isoformat(),
            row["completed_at"].isoformat() if row["completed_at"] else "",
            row["closed_at"].isoformat() if row["closed_at"] else "",
            session_status(row),
            row["tasks_done"],
            f"{seconds / 60:.1f}" if seconds is not None else "",
            row["hold_texts"] or "",
            row["closed_reason"],
        ]
