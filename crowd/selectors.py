"""Reads of the crowd app: what a worker has done so far, where a finished session goes back to,
and the completed sessions a researcher approves on the market."""

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import quote

from django.db.models import Q, QuerySet

from corpus.models import AUTHOR_POSITION, LabelScheme, Market, Worker
from corpus.selectors import excluded_in
from teams import access

from .holds import submits_while_held
from .models import ClaimStatus, DeviceSighting, Study, StudySession, TaskKind, WorkerLink

COMPLETION_CSV_COLUMNS = [
    "study",
    "market",
    "worker_id",
    "external_study_id",
    "external_session_id",
    "tasks_done",
    "started_at",
    "completed_at",
    "worker_marks",
    "completion_code",
]
EXCLUDED_MARK = "excluded"


NO_SUCH_STUDY = "No Study matches the given query."


def previewable_study(user: Any, slug: str) -> Study:
    """The study named `slug` that `user` may preview: one of their teams'. Another team's study
    answers 404 exactly as an unknown slug does, so a foreign slug tells nothing."""
    study = Study.objects.select_related("dataset").filter(slug=slug).first()
    return access.checked(study, user, access.VIEW, missing=NO_SUCH_STUDY)


def may_go_on_previewing(user: Any, study: Study) -> bool:
    """Whether a preview under way may serve its next page: the study is still of one of the
    user's teams (a membership ended or the study moved to another team since it began)."""
    return access.may(user, study.team_id, access.VIEW)


def pool_limits(study: Study) -> tuple[list[int], list[str]]:
    """The premises `study` may serve within its dataset: the genre pks and the import files it
    limits them to (an empty list limits nothing, so a claim keeps its fast path)."""
    return [genre.pk for genre in study.pool_genres.all()], list(study.pool_sources or [])


def worker_task_counts(worker: Worker | None) -> dict[str, int]:
    if worker is None:
        return {"pairs_written": 0, "premises_written": 0, "validation_labels": 0}
    return {
        "pairs_written": worker.pairs.count(),
        # A worker writes for a premise at most once, so the premises of their pairs are their writings.
        "premises_written": worker.pairs.values("premise_id").distinct().count(),
        # Catch trials count as validated pairs: they are judged like any other pair, and a count
        # that left them out would tell the participant how many a batch held.
        "validation_labels": worker.labels.filter(position__gt=AUTHOR_POSITION).count()
        + worker.validation_claims.filter(status=ClaimStatus.SUBMITTED, is_catch_trial=True).count(),
    }


TASK_DESCRIPTIONS = {
    TaskKind.WRITING: "You will read a line of text and write three short sentences about it: one that is "
    "definitely correct, one that might be correct, and one that is definitely incorrect.",
    TaskKind.VALIDATION: "You will read pairs of sentences and say whether the second is definitely correct, "
    "might be correct, or is definitely incorrect given the first.",
    TaskKind.MPE_JUDGMENT: "You will read four short descriptions of one scene and a sentence, and say whether the "
    "sentence is definitely correct, might be correct, or is definitely incorrect given all four descriptions.",
    TaskKind.PREMISE_LABELS: "You will read one description of a scene at a time and a sentence, and say whether the "
    "sentence is definitely correct, might be correct, or is definitely incorrect given that description.",
    TaskKind.ADVERSARIAL: "You will read a line of text and write sentences about it that a computer model gets "
    "wrong; other people then check your sentences.",
}
TWO_WAY_VALIDATION = (
    "You will read pairs of sentences and say whether the second is definitely correct given the first, or not."
)


def task_description(study: Study) -> str:
    """What a participant will do in this study, in plain words (the MTurk preview)."""
    if study.task_kind == TaskKind.VALIDATION and study.dataset.label_scheme != LabelScheme.THREE_WAY:
        return TWO_WAY_VALIDATION
    return TASK_DESCRIPTIONS.get(TaskKind(study.task_kind), TASK_DESCRIPTIONS[TaskKind.VALIDATION])


def completion_return(study_session: StudySession) -> tuple[str | None, Any]:
    """How a finished participant goes back to their market: ("url", href) for a completion URL
    (Prolific), ("mturk", (action, fields)) for MTurk's externalSubmit form, or (None, None). An
    MTurk assignment held until MTurk lists it (`crowd.holds.submits_while_held`) is submitted
    without its code, so that MTurk lists it and the check can vouch."""
    if submits_while_held(study_session) and study_session.turk_submit_to:
        fields = {"assignmentId": study_session.external_session_id}
        return "mturk", (f"{study_session.turk_submit_to}/mturk/externalSubmit", fields)
    if not study_session.completion_code:
        return None, None
    study = study_session.study
    # The market decides before the URL: a study may run on both, and an MTurk worker sent to
    # Prolific's completion URL would leave their HIT unsubmitted.
    if study_session.worker.market == Market.MTURK:
        if not study_session.turk_submit_to:
            return None, None
        fields = {"assignmentId": study_session.external_session_id, "completion_code": study_session.completion_code}
        return "mturk", (f"{study_session.turk_submit_to}/mturk/externalSubmit", fields)
    if study.completion_url:
        return "url", study.completion_url.replace("{code}", quote(study_session.completion_code, safe=""))
    return None, None


MarkSource = Callable[[list[int]], dict[int, list[str]]]


def worker_marks(
    worker_ids: Iterable[int], *, team_id: int | None, flagged: MarkSource | None = None
) -> dict[int, list[str]]:
    """{worker pk: [words]} for the workers of a list a researcher approves or pays from, of one
    study of the team `team_id`: "excluded" (the team excluded them), and what `flagged` adds (the
    quality app's flags); workers with no mark are absent."""
    ids = sorted(set(worker_ids))
    marks: dict[int, list[str]] = {}
    if not ids:
        return marks
    teams = [] if team_id is None else [team_id]
    for pk in excluded_in(teams).filter(worker_id__in=ids).values_list("worker_id", flat=True):
        marks.setdefault(pk, []).append(EXCLUDED_MARK)
    if flagged is not None:
        for pk, words in flagged(ids).items():
            if pk in ids:
                marks.setdefault(pk, []).extend(words)
    return marks


# A completed session's columns `completion_rows` reads.
COMPLETION_ROW_COLUMNS = (
    "worker_id",
    "worker__market",
    "worker__external_id",
    "worker__user__username",
    "external_study_id",
    "external_session_id",
    "tasks_done",
    "started_at",
    "completed_at",
    "completion_code",
)


def completion_rows(studies: Iterable[Study], *, flagged: MarkSource | None = None) -> Iterator[list[Any]]:
    """One row per completed session of these studies, in COMPLETION_CSV_COLUMNS order, with its
    worker's marks, so a session is never approved unseen."""
    for study in studies:
        # Plain rows of the columns written: a study's list has hundreds of sessions, and each read
        # as a session with its worker and user cost most of the export.
        sessions = list(
            StudySession.objects.filter(study=study, completed_at__isnull=False)
            .order_by("completed_at", "pk")
            .values_list(*COMPLETION_ROW_COLUMNS)
        )
        marks = worker_marks((session[0] for session in sessions), team_id=study.dataset.team_id, flagged=flagged)
        for worker_id, market, external_id, username, *ids, tasks_done, started_at, completed_at, code in sessions:
            yield [
                study.slug,
                market,
                Worker.named(external_id, username),
                *ids,
                tasks_done,
                started_at.isoformat(),
                completed_at.isoformat() if completed_at else "",
                "; ".join(marks.get(worker_id, [])),
                code,
            ]


# --- the shared-device rule: ids seen on one device are one person ------------------------------
# The ids seen on any device the worker (the parameter) was seen on, the worker included.
SHARED_DEVICE_SQL = (
    "SELECT s.worker_id FROM crowd_devicesighting s WHERE s.device IN"
    " (SELECT m.device FROM crowd_devicesighting m WHERE m.worker_id = %s)"
)


def sightings_sharing_a_device(worker_ids: Iterable[int] | None = None) -> Any:
    """The sightings on the devices these workers were seen on (theirs included; every sighting
    with None): the ids in them are one person with these workers (`SHARED_DEVICE_SQL` in SQL)."""
    sightings = DeviceSighting.objects.all()
    if worker_ids is None:
        return sightings
    return sightings.filter(device__in=DeviceSighting.objects.filter(worker_id__in=list(worker_ids)).values("device"))


def shared_device_ids(*, worker_ids: Iterable[int] | None = None) -> dict[int, set[int]]:
    """{worker id: other worker ids seen on one of its devices}, for workers who share a device: one
    person under several participant ids, whose work is never checked by themselves."""
    sightings = sightings_sharing_a_device(worker_ids)
    by_device: dict[str, set[int]] = {}
    for device, worker_id in sightings.values_list("device", "worker_id"):
        by_device.setdefault(device, set()).add(worker_id)
    linked: dict[int, set[int]] = {}
    for ids in by_device.values():
        if len(ids) > 1:
            for worker_id in ids:
                linked.setdefault(worker_id, set()).update(ids - {worker_id})
    return linked


def linked_ids(*, worker_ids: Iterable[int]) -> dict[int, set[int]]:
    """{worker id: the other ids known to be the same person}: seen on one of its devices, or linked
    by the market (`WorkerLink`). Whose work is never checked by themselves."""
    ids = set(worker_ids)
    linked = shared_device_ids(worker_ids=ids)
    for worker_id, other in WorkerLink.objects.filter(worker_id__in=ids).values_list("worker_id", "linked_id"):
        linked.setdefault(worker_id, set()).add(other)
    return linked


PASTED_ID_SEPARATORS = re.compile(r"[\s,;]+")


def pasted_ids(text: str) -> list[str]:
    """The ids in pasted text, in the order given, each once."""
    return list(dict.fromkeys(part for part in PASTED_ID_SEPARATORS.split(text or "") if part))


def workers_by_pasted_ids(text: str) -> tuple[list[Worker], list[str]]:
    """(the workers the pasted ids name, the ids that name nobody), in one statement. An id is a
    market's participant id (Prolific PID, MTurk worker id) or an account's username."""
    ids = pasted_ids(text)
    if not ids:
        return [], []
    found = list(
        Worker.objects.filter(Q(external_id__in=ids) | Q(user__username__in=ids)).select_related("user").order_by("pk")
    )
    known = {w.external_id for w in found} | {w.user.get_username() for w in found}
    return found, [i for i in ids if i not in known]


def worker_list_text(workers: Iterable[Worker]) -> str:
    """A list of workers as the text a researcher pastes: one id per line (market id, else username)."""
    return "\n".join(sorted(w.external_id or w.user.get_username() for w in workers))


def counted_sessions_filter(prefix: str = "") -> Q:
    """The sessions every figure counts, as a filter (`prefix` reaches them through a relation):
    participants' sessions, never a researcher's preview (crowd.preview)."""
    return ~Q(**{f"{prefix}is_preview": True})


def counted_sessions(of_study: Study) -> QuerySet[StudySession]:
    return StudySession.objects.filter(counted_sessions_filter(), study=of_study)
