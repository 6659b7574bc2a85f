"""Erasure and retention of participants' personal data, driven by the register (`privacy.register`).

`remove_contributions` is the engine a withdrawal and an erasure share: a participant's labels and
written pairs leave the corpus, and every figure that counted them moves in the same transaction
through the corpus's own writers: there is no second recompute here.
"""

import gc
import hashlib
import hmac
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import F, Q
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from audit import services as audit
from audit.models import AuditEntry
from base.long_tasks import JobStatus
from base.subquery import EqualsAny
from corpus import recompute, tallies
from corpus.exclusions import labels_left
from corpus.models import Dataset, LengthTally, Pair, PairTally, Premise, ValidationLabel, WordTally, Worker
from corpus.tallies import LENGTH_KEY, PAIR_KEY, WORD_KEY
from corpus.tallies.worker_tally import EACH_PK
from crowd.models import ContributionsOnWithdrawal, SessionEnding, Study, StudySession
from crowd.registry import release_open_claims_of_session
from quality.aggregation_runs import request_aggregation
from quality.models import AggregationRun, BonusEntry

from .models import ErasureRecord
from .register import REGISTER, Action, Kind, PersonalField
from .selectors import datasets_of_team, participant_in_team
from .signals import participant_removed

PSEUDONYM_PREFIX = "p~"
ERASED_TEXT = "[erased]"
# Why a visit closed when its participant was erased (StudySession.closed_reason).
ERASED_REASON = "erased at the participant's request"


class ParticipantNotFound(LookupError):
    """No participant with this id among the team's: nothing was changed."""


def _key() -> bytes:
    # A key of its own, derived from SECRET_KEY: the hash names nobody without the server's secret.
    return hashlib.sha256(b"privacy.pseudonym:" + settings.SECRET_KEY.encode()).digest()


def pseudonym(value: str) -> str:
    """The keyed hash that replaces an id: the same id always gives the same pseudonym (a worker's
    rows stay linked to each other), and a pseudonym is left as it is (retention runs again)."""
    if not value or value.startswith(PSEUDONYM_PREFIX):
        return value
    return PSEUDONYM_PREFIX + hmac.new(_key(), value.encode(), hashlib.sha256).hexdigest()[:40]


def _model(entry: PersonalField) -> type[models.Model]:
    return apps.get_model(entry.model)


def _of_worker(entry: PersonalField, worker_pk: int) -> Q:
    return Q(**{entry.worker_path: worker_pk})


# --- contributions ------------------------------------------------------------------------------


def _pairs_leave_tallies(pairs: models.QuerySet[Pair]) -> None:
    """The corpus tallies' rows of these pairs, taken out before the pairs are deleted (the
    collection and artifacts tallies follow by their own delete receivers)."""
    for model, key, rows in (
        (PairTally, PAIR_KEY, tallies.pair_rows(pairs)),
        (LengthTally, LENGTH_KEY, tallies.length_rows(Premise.objects.none(), pairs)),
        (WordTally, WORD_KEY, tallies.word_rows(pairs)),
    ):
        tallies.insert_deltas(model, key, {row: -n for row, n in rows.items()})


def _labels_locked(worker: Worker, datasets: Sequence[int], authored_pks: Sequence[int]) -> tuple[list[int], list[int]]:
    """(pks of the worker's labels on pairs of `datasets` other than their own, those pairs), every
    pair they and `authored_pks` touch locked in pk order, as every writer locks them. Read by the
    worker's index, each pair looked up by its pk (`EACH_PK`): joined by dataset or to a set of pks,
    the planner weighed a pass over every pair, a cost that grew with the corpus, not the person."""
    own = list(ValidationLabel.objects.filter(worker=worker).order_by().values_list("pk", "pair_id"))
    authored = set(authored_pks)
    candidates = sorted({pair_id for _, pair_id in own} | authored)
    in_datasets = set(_lock_pairs_in(candidates, datasets))
    leaving = [(pk, pair_id) for pk, pair_id in own if pair_id in in_datasets and pair_id not in authored]
    return sorted(pk for pk, _ in leaving), sorted({pair_id for _, pair_id in leaving})


def _lock_pairs_in(pair_pks: Sequence[int], datasets: Sequence[int]) -> list[int]:
    """Lock the pairs among `pair_pks` (sorted) that belong to `datasets`, in pk order (the order
    of the array, each pk looked up on its own), and return their pks."""
    if not pair_pks:
        return []
    table = connection.ops.quote_name(Pair._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT locked.id FROM {EACH_PK} CROSS JOIN LATERAL (SELECT id FROM {table}"
            " WHERE id = each_pk.pk AND dataset_id = ANY(%s) OFFSET 0 FOR NO KEY UPDATE) AS locked",
            [list(pair_pks), list(datasets)],
        )
        return [pk for (pk,) in cursor.fetchall()]


def _delete_on_pairs_of(model: type[models.Model], rows: Sequence[tuple[int, int]], datasets: Sequence[int]) -> int:
    """Delete the rows of `model` among `rows` ((pk, pair pk), read by the worker's index) whose
    pair belongs to `datasets`, the pairs looked up by pk; returns rows deleted."""
    pair_pks = sorted({pair_id for _, pair_id in rows})
    wanted, in_datasets = set(datasets), set[int]()
    for start in range(0, len(pair_pks), recompute.RECOUNT_CHUNK):
        found = Pair.objects.filter(pk__in=pair_pks[start : start + recompute.RECOUNT_CHUNK])
        in_datasets.update(pk for pk, dataset_id in found.values_list("pk", "dataset_id") if dataset_id in wanted)
    leaving = sorted(pk for pk, pair_id in rows if pair_id in in_datasets)
    deleted = 0
    for start in range(0, len(leaving), recompute.RECOUNT_CHUNK):
        deleted += model._default_manager.filter(pk__in=leaving[start : start + recompute.RECOUNT_CHUNK]).delete()[0]
    return deleted


@contextmanager
def _cycle_collector_held() -> Iterator[None]:
    """Python's cycle collector held off for the block, then set back as it was. A person's thousands
    of pairs make tens of thousands of short-lived objects, and each full collector pass they set off
    walks every object of the process, several passes an erasure; none is in a cycle."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class Removed:
    labels: int = 0
    pairs: int = 0
    writings: int = 0
    others_labels_on_pairs: int = 0
    judgments: int = 0
    adversarial_tries: int = 0
    pairs_recounted: int = 0
    aggregation_reruns: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def remove_contributions(
    worker: Worker, *, studies: Iterable[Study] | None = None, team: int | None = None, policy: str
) -> Removed:
    """Take `worker`'s labels and written pairs on the datasets of `studies` (or of team `team`) out of
    the corpus when `policy` is "delete"; with "keep" they stay and count, pseudonymous once the
    erasure hashes the ids. Everything that counted them moves in this transaction, as an exclusion
    does; a written pair leaves with the other workers' labels on it. A submit of the same worker
    waits for the worker's lock taken first here, so it lands wholly before or wholly after."""
    if policy not in ContributionsOnWithdrawal.values:
        raise ValueError(f"Unknown policy {policy!r}: keep or delete.")
    participant_removed.send(sender=Worker, worker=worker)
    removed = Removed()
    if policy == ContributionsOnWithdrawal.KEEP:
        return removed
    if studies is not None:
        datasets = sorted({study.dataset_id for study in studies})
    elif team is not None:
        datasets = list(datasets_of_team(team))
    else:
        raise ValueError("Name the studies or the team whose contributions leave.")
    if not datasets:
        return removed
    # Imported only where used: the writers of these rows sit in the apps above the corpus.
    from adversarial.models import AdversarialTry
    from collection.services import writings_left
    from corpus.models import GrammaticalityJudgment
    from validation.models import PremiseLabel

    with transaction.atomic(), _cycle_collector_held():
        # NO KEY UPDATE, as a submit and an exclusion lock the worker (corpus.services).
        list(Worker.objects.select_for_update(no_key=True).filter(pk=worker.pk).values_list("pk", flat=True))
        # By the author's index alone, the datasets told apart here (as in `_labels_locked`).
        wanted = set(datasets)
        authored_pks = sorted(
            pk
            for pk, dataset_id in Pair.objects.filter(author=worker).values_list("pk", "dataset_id")
            if dataset_id in wanted
        )
        label_pks, labelled = _labels_locked(worker, datasets, authored_pks)
        touched = sorted(set(labelled) | set(authored_pks))
        worker_rows = recompute.worker_rows(touched)  # the worker figures before, read by index
        removed.labels = len(label_pks)
        removed.others_labels_on_pairs = (
            ValidationLabel.objects.filter(pair_id__in=authored_pks).exclude(worker=worker).count()
        )
        # One statement, the pks one array parameter (an IN list of thousands cost more to build
        # than to run), each label looked up by its own index.
        ValidationLabel.objects.filter(EqualsAny(F("pk"), RawSQL("%s::bigint[]", [label_pks]))).delete()
        # Found by the worker's index, their pairs' datasets by pk, as the labels are.
        judged = GrammaticalityJudgment.objects.filter(worker=worker).order_by().values_list("pk", "pair_id")
        removed.judgments = _delete_on_pairs_of(GrammaticalityJudgment, list(judged), datasets)
        premise_labels = (
            PremiseLabel.objects.filter(worker=worker).order_by().values_list("pk", "premise_pair__item_id")
        )
        removed.judgments += _delete_on_pairs_of(PremiseLabel, list(premise_labels), datasets)
        removed.adversarial_tries = AdversarialTry.objects.filter(
            task__worker=worker, round__study__dataset_id__in=datasets
        ).delete()[0]
        if authored_pks:
            leaving = Pair.objects.filter(pk__in=authored_pks)
            _pairs_leave_tallies(leaving)
            # The ledger keeps the money: a bonus earned on a pair outlives the pair.
            BonusEntry.objects.filter(pair_id__in=authored_pks).update(pair=None)
            removed.pairs = len(authored_pks)
            premises = set(leaving.values_list("premise_id", flat=True))
            for pair in leaving.order_by("pk"):
                pair.delete()  # one at a time: the delete receivers of the other tallies see each pair
            # Their premises can be written again: each counts the person's writing no more.
            removed.writings = writings_left(worker, premises)
        removed.pairs_recounted = labels_left(labelled, worker_rows=worker_rows, read_of=touched)
        if removed.labels or removed.pairs:
            removed.aggregation_reruns = _rerun_aggregations(datasets)
    return removed


def _rerun_aggregations(datasets: Sequence[int]) -> int:
    """The stored aggregation runs of these datasets counted labels that just left: each dataset with a
    run done or running gets a new run of the latest one's methods (queued once this transaction
    commits), so its pages show the fit without them once it ends. A dataset whose run is pending
    already is left to it: that run reads the labels as they are when it starts. Returns runs requested."""
    runs = AggregationRun.objects.filter(dataset_id__in=datasets)
    waiting = runs.filter(status=JobStatus.PENDING).values("dataset_id")
    latest: dict[int, list[str]] = {}
    counted = runs.filter(status__in=[JobStatus.DONE, JobStatus.RUNNING]).exclude(dataset_id__in=waiting)
    for dataset_id, methods in counted.order_by("created_at", "pk").values_list("dataset_id", "methods"):
        latest[dataset_id] = methods  # the latest run's methods win
    for dataset in Dataset.objects.filter(pk__in=sorted(latest)).order_by("pk"):
        request_aggregation(None, dataset, latest[dataset.pk])
    return len(latest)


# --- erasure ------------------------------------------------------------------------------------


def _words_of(worker: Worker, sessions: models.QuerySet[StudySession]) -> list[str]:
    """The person's ids as they appear in text: market id, user name, session and participant ids."""
    words = {worker.external_id, worker.user.get_username()}
    for session_id, participant in sessions.values_list("external_session_id", "market_participant_id"):
        words |= {session_id, participant}
    return sorted(word for word in words if word and not word.startswith(PSEUDONYM_PREFIX) and len(word) >= 4)


def _not_pseudonymised(entry: PersonalField, rows: models.QuerySet[Any]) -> models.QuerySet[Any]:
    return rows.exclude(**{entry.field: ""}).exclude(**{f"{entry.field}__startswith": PSEUDONYM_PREFIX})


def _not_reduced(model: type[models.Model], measurements: Sequence[str]) -> Q:
    not_yet = Q()
    for name in measurements:
        not_yet |= Q(**{f"{name}__isnull": False}) if model._meta.get_field(name).null else ~Q(**{name: 0})
    return not_yet


def _apply(entry: PersonalField, rows: models.QuerySet[Any], action: str, words: Sequence[str]) -> int:
    """Do `action` to the field of `entry` on `rows`; returns rows changed."""
    if action == Action.DELETE_ROW:
        return rows.delete()[0]
    if action == Action.BLANK:
        empty = ERASED_TEXT if entry.kind == Kind.FREE_TEXT else ""
        return rows.exclude(**{entry.field: empty}).exclude(**{entry.field: ""}).update(**{entry.field: empty})
    if action == Action.REDUCE_TO_FLAGS:
        cleared = {name: (None if rows.model._meta.get_field(name).null else 0) for name in entry.measurements}
        return rows.filter(_not_reduced(rows.model, entry.measurements)).update(**cleared)
    if action == Action.PSEUDONYMISE:
        changed = 0
        for pk, value in _not_pseudonymised(entry, rows).values_list("pk", entry.field):
            changed += rows.model._default_manager.filter(pk=pk).update(**{entry.field: pseudonym(value)})
        return changed
    if action == Action.REPLACE_ID_IN_TEXT:
        changed = 0
        containing = Q()
        for word in words:
            containing |= Q(**{f"{entry.field}__contains": word})
        if not words:
            return 0
        for pk, text in rows.filter(containing).values_list("pk", entry.field):
            for word in words:
                text = text.replace(word, pseudonym(word))
            changed += rows.model._default_manager.filter(pk=pk).update(**{entry.field: text})
        return changed
    return 0


def _redact_audit(team_id: int, worker: Worker, words: Sequence[str], by: Any) -> int:
    if not words:
        return 0
    names = Q(subject_type="corpus.worker", subject_id=str(worker.pk))
    for word in words:
        names |= Q(subject__contains=word) | Q(reason__contains=word)
        names |= Q(before_text__contains=word) | Q(after_text__contains=word)
    rows = AuditEntry.objects.filter(Q(team_id=team_id) | Q(team_id__isnull=True)).annotate(
        before_text=Cast("before", models.TextField()), after_text=Cast("after", models.TextField())
    )
    matching = AuditEntry.objects.filter(pk__in=rows.filter(names).values("pk"))
    if not matching.exists():
        return 0
    return audit.redact(matching, words, actor=by, reason="erasure of a participant's personal data")


def _elsewhere(worker: Worker, team_id: int) -> bool:
    """Whether the person took part in another team's studies or datasets: their account and
    market id are then that team's to erase too, and stay."""
    # The teams of the person's labels as a set, not `exists()`: with LIMIT 1 the planner walked the
    # label table for a first row instead of the worker's index, every label of the corpus read
    # when none was left (their labels here just deleted).
    label_teams = set(
        ValidationLabel.objects.filter(worker=worker)
        .order_by()
        .values_list("pair__dataset__team_id", flat=True)
        .distinct()
    )
    return (
        StudySession.objects.filter(worker=worker).exclude(study__team_id=team_id).exists()
        or bool(label_teams - {team_id})
        or Pair.objects.filter(author=worker).exclude(dataset__team_id=team_id).exists()
    )


def erase_participant(worker: Worker, *, team_id: int, by: Any = None, reason: str = "") -> ErasureRecord:
    """Erase what team `team_id` holds about `worker`, as the register says, and keep or delete their
    contributions as each study's policy says (`remove_contributions`, figures recomputed). One
    transaction: all of it, or (on any failure) none. The person's account and market id are hashed
    too unless they also took part in another team's work."""
    if not participant_in_team(worker, team_id):
        raise ParticipantNotFound("No participant with this id took part in this team's studies.")
    with transaction.atomic():
        list(Worker.objects.select_for_update(no_key=True).filter(pk=worker.pk).values_list("pk", flat=True))
        worker = Worker.objects.select_related("user").get(pk=worker.pk)
        sessions = StudySession.objects.filter(worker=worker, study__team_id=team_id)
        # An open browser must not add to what is being erased: the team's visits close and their
        # held tasks go back to the pool first.
        for open_visit in sessions.filter(closed_at__isnull=True):
            release_open_claims_of_session(open_visit)
        sessions.filter(closed_at__isnull=True).update(
            closed_at=timezone.now(), ended_as=SessionEnding.ERASED, closed_reason=ERASED_REASON
        )
        words = _words_of(worker, sessions)
        subject_hash = pseudonym(worker.external_id or worker.user.get_username())
        studies = list(Study.objects.filter(team_id=team_id, sessions__worker=worker).distinct())
        deleting = [study for study in studies if study.contributions_on_withdrawal == ContributionsOnWithdrawal.DELETE]
        policy = ContributionsOnWithdrawal.DELETE if deleting else ContributionsOnWithdrawal.KEEP
        counts: Counter[str] = Counter()
        removed = remove_contributions(worker, studies=deleting, policy=ContributionsOnWithdrawal.DELETE)
        counts.update({f"contributions.{name}": n for name, n in removed.as_dict().items() if n})
        keeps_identity = _elsewhere(worker, team_id)
        # Texts naming the ids first, then the ids themselves (the texts are found by the ids).
        ordered = sorted(REGISTER, key=lambda entry: entry.erasure != Action.REPLACE_ID_IN_TEXT)
        for entry in ordered:
            if entry.erasure in (Action.KEEP, Action.BY_POLICY, Action.REDACT):
                continue
            if not entry.team_paths and keeps_identity and not entry.derived:
                continue
            rows = _model(entry)._default_manager.all()
            if entry.worker_path:
                rows = rows.filter(_of_worker(entry, worker.pk))
                if entry.model == "crowd.WorkerLink":
                    rows = _model(entry)._default_manager.filter(Q(worker=worker) | Q(linked=worker))
            if entry.team_paths:
                rows = rows.filter(entry.in_team(team_id)).distinct()
                rows = _model(entry)._default_manager.filter(pk__in=list(rows.values_list("pk", flat=True)))
            changed = _apply(entry, rows, entry.erasure, words)
            if changed:
                counts[f"{entry.model}.{entry.field}"] += changed
        redacted = _redact_audit(team_id, worker, words, by)
        if redacted:
            counts["audit.AuditEntry"] += redacted
        record = ErasureRecord.objects.create(
            team_id=team_id, subject_hash=subject_hash, policy=policy, counts=dict(counts), erased_by=by
        )
        audit.record(
            "participant.erased",
            actor=by,
            team_id=team_id,
            subject_type="corpus.worker",
            subject_id=worker.pk,
            subject_label=subject_hash,
            after={"policy": policy, **counts},
            reason=reason,
        )
    return record


def erase_by_market_id(market_id: str, *, team_id: int, by: Any = None, reason: str = "") -> ErasureRecord:
    """`erase_participant` of the team's participant with this market id (or user name);
    ParticipantNotFound, with nothing changed, when the team has none."""
    candidates = Worker.objects.filter(Q(external_id=market_id) | Q(user__username=market_id))
    for worker in candidates.order_by("pk"):
        if participant_in_team(worker, team_id):
            return erase_participant(worker, team_id=team_id, by=by, reason=reason)
    raise ParticipantNotFound(f"No participant with the id {market_id!r} took part in this team's studies.")


# --- retention ----------------------------------------------------------------------------------

RETENTION_BATCH = 200  # workers (or sessions) one retention transaction rewrites


def expired_sessions(now: datetime | None = None) -> models.QuerySet[StudySession]:
    """Sessions whose personal data outlived their study's retention: the study is inactive and
    the visit ended more than `personal_data_retention_days` ago."""
    now = now or timezone.now()
    expired = Q(pk__in=[])
    for study_pk, days in Study.objects.filter(is_active=False).values_list("pk", "personal_data_retention_days"):
        expired |= Q(study_id=study_pk, ended__lt=now - timedelta(days=days))
    return StudySession.objects.annotate(ended=Coalesce("completed_at", "closed_at", "started_at")).filter(expired)


@dataclass
class RetentionReport:
    dry_run: bool
    changed: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        verb = "would change" if self.dry_run else "changed"
        if not self.changed:
            return "Nothing has expired." if not self.dry_run else "Nothing would change: nothing has expired."
        return "\n".join(f"{name}: {verb} {n}" for name, n in sorted(self.changed.items()))


def _pending(entry: PersonalField, rows: models.QuerySet[Any]) -> models.QuerySet[Any]:
    """The rows that retention's action on `entry` would still change (its runs are idempotent)."""
    if entry.retention == Action.PSEUDONYMISE:
        return _not_pseudonymised(entry, rows)
    if entry.retention == Action.REDUCE_TO_FLAGS:
        return rows.filter(_not_reduced(rows.model, entry.measurements))
    if entry.retention == Action.BLANK:
        return rows.exclude(**{entry.field: ""})
    return rows


def apply_retention(*, now: datetime | None = None, dry_run: bool = False) -> RetentionReport:
    """Pseudonymise what outlived its study's retention, as the register's retention column says: the
    expired sessions' rows, and a person's own ids once every visit of theirs expired. Each batch is a
    transaction of its own and only rows not yet done are read, so a run killed half-way and run again
    finishes the rest without doing anything twice. `dry_run` counts and writes nothing."""
    report = RetentionReport(dry_run=dry_run)
    expired = expired_sessions(now)
    session_pks = list(expired.order_by("pk").values_list("pk", flat=True))
    # The visits' own rows: reached through their session.
    for entry in REGISTER:
        if entry.retention in (Action.KEEP, Action.REPLACE_ID_IN_TEXT) or not entry.team_paths:
            continue
        through = _session_path(entry)
        if through is None:
            continue
        for start in range(0, len(session_pks), RETENTION_BATCH):
            batch = session_pks[start : start + RETENTION_BATCH]
            rows = _pending(entry, _model(entry)._default_manager.filter(**{f"{through}__in": batch}))
            with transaction.atomic():
                changed = rows.count() if dry_run else _apply(entry, rows, entry.retention, ())
                if changed and not dry_run:
                    _record_retention({f"{entry.model}.{entry.field}": changed})
            if changed:
                report.changed[f"{entry.model}.{entry.field}"] += changed
    # The person's own ids: once none of their visits is still within its retention.
    live = StudySession.objects.exclude(pk__in=expired.values("pk")).values("worker_id")
    workers = list(
        Worker.objects.filter(study_sessions__pk__in=session_pks)
        .exclude(pk__in=live)
        .exclude(external_id__startswith=PSEUDONYM_PREFIX)
        .distinct()
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for start in range(0, len(workers), RETENTION_BATCH):
        batch = workers[start : start + RETENTION_BATCH]
        if dry_run:
            report.changed["corpus.Worker.external_id"] += len(batch)
            continue
        with transaction.atomic():
            retired: Counter[str] = Counter()
            for worker in Worker.objects.select_related("user").filter(pk__in=batch).order_by("pk"):
                retired.update(_retire_identity(worker))
            if retired:
                _record_retention(dict(retired))
            report.changed.update(retired)
    return report


def _record_retention(changed: dict[str, int]) -> None:
    """The system's own entry for one retention batch, in the batch's transaction (no actor, no team:
    a batch spans the teams whose studies expired)."""
    audit.record(
        "privacy.retention_applied",
        subject_type="privacy.retention",
        subject_label=f"{sum(changed.values())} fields pseudonymised",
        after=changed,
        reason="personal data past its study's retention",
    )


def _session_path(entry: PersonalField) -> str | None:
    """The lookup from an entry's rows to their study session's pk, or None when they have none."""
    if entry.model == "crowd.StudySession":
        return "pk"
    for path in entry.team_paths:
        if path.startswith("study_session__"):
            return "study_session"
    return None


def _retire_identity(worker: Worker) -> Counter[str]:
    """Retention of one person whose visits all expired: their ids in the market's records, then
    the ids themselves (account, market id, devices), each to its keyed hash."""
    changed: Counter[str] = Counter()
    words = _words_of(worker, StudySession.objects.filter(worker=worker))
    ordered = sorted(REGISTER, key=lambda entry: entry.retention != Action.REPLACE_ID_IN_TEXT)
    for entry in ordered:
        if entry.retention == Action.KEEP or _session_path(entry) is not None:
            continue
        rows = _model(entry)._default_manager.all()
        if entry.retention == Action.REPLACE_ID_IN_TEXT:
            studies = Study.objects.filter(sessions__worker=worker).values("team_id")
            rows = rows.filter(Q(**{f"{entry.team_paths[0]}__in": studies}))
        elif entry.worker_path:
            rows = rows.filter(_of_worker(entry, worker.pk))
        else:
            continue
        n = _apply(entry, _pending(entry, rows), entry.retention, words)
        if n:
            changed[f"{entry.model}.{entry.field}"] += n
    return changed


def download_participant_data(worker: Worker, *, team_id: int, by: Any = None) -> dict[str, Any]:
    """The access download (`privacy.selectors.participant_data`), recorded in the team's audit log."""
    from .selectors import participant_data

    if not participant_in_team(worker, team_id):
        raise ParticipantNotFound("No participant with this id took part in this team's studies.")
    with transaction.atomic():
        data = participant_data(worker, team_id)
        audit.record(
            "participant.data_downloaded",
            actor=by,
            team_id=team_id,
            subject_type="corpus.worker",
            subject_id=worker.pk,
            subject_label=pseudonym(worker.external_id or worker.user.get_username()),
            after={"sections": len(data)},
        )
    return data
