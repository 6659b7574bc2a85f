"""Who may work on a study (Study.access) and on which tasks a study visit may be spent.

- open: anyone with the link, but the study's block list (`Study.blocked_workers`, every access);
- closed: only the workers on the study's list (`Study.allowed_workers`);
- qualified: only workers who passed the study's qualification test. The test lives in the quality
  app, above this one, so the caller passes the check (`qualification_check`, registered in
  `crowd.registry`), and a study that needs the test admits nobody without one (the safe default).

A check returns None (admitted) or a `Refusal`: a polite message for the worker, or a URL to send
them to first (the qualification test).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .models import StudyAccess, TaskKind

if TYPE_CHECKING:
    from django.http import HttpRequest

    from corpus.models import Worker

    from .models import Study, StudySession


@dataclass(frozen=True)
class Refusal:
    message: str = ""
    url: str = ""
    title: str = "This study is not open to you"


AdmissionCheck = Callable[["Study", "Worker | None"], Refusal | None]
# Whether a visit answered its study's information sheet (the consent app, above this one): None
# when it may be given a task, else the Refusal to follow (the sheet) or show (it withdrew).
ConsentCheck = Callable[["HttpRequest", "StudySession"], Refusal | None]

CLOSED_MESSAGE = (
    "Thank you for your interest. This study is open only to a list of invited participants, and your "
    "account is not on it. Please return the study on the crowd platform; you will not be penalised."
)
BLOCKED_MESSAGE = (
    "Thank you for your interest. This study is not open to your account. Please return the study on the "
    "crowd platform; you will not be penalised."
)
NO_TEST_MESSAGE = (
    "Thank you for your interest. This study asks for a qualification test that is not ready yet. "
    "Please return the study on the crowd platform; you will not be penalised."
)
KIND_LABEL: dict[str, str] = {
    TaskKind.WRITING: "writing sentences",
    TaskKind.VALIDATION: "judging sentence pairs",
    TaskKind.MPE_JUDGMENT: "judging sentences against four captions (MPE)",
    TaskKind.ADVERSARIAL: "writing sentences that fool a model",
    TaskKind.PREMISE_LABELS: "judging sentences against one caption at a time (MPE)",
}


def block_list_refusal(study: "Study", worker: "Worker | None") -> Refusal | None:
    """Refused when the worker is on the study's block list (checked at arrival, every access)."""
    if worker is not None and study.blocked_workers.filter(pk=worker.pk).exists():
        return Refusal(BLOCKED_MESSAGE)
    return None


def closed_list_refusal(study: "Study", worker: "Worker | None") -> Refusal | None:
    if study.access != StudyAccess.CLOSED:
        return None
    if worker is not None and study.allowed_workers.filter(pk=worker.pk).exists():
        return None
    return Refusal(CLOSED_MESSAGE)


def admission_refusal(
    study: "Study", worker: "Worker | None", *, qualification_check: AdmissionCheck | None = None
) -> Refusal | None:
    """None when `worker` may work on `study` now, else the Refusal to show (or follow);
    `qualification_check(study, worker)` answers for studies with access 'qualified'."""
    if study.access == StudyAccess.OPEN:
        return None
    if study.access == StudyAccess.CLOSED:
        return closed_list_refusal(study, worker)
    if qualification_check is None:
        return Refusal(NO_TEST_MESSAGE)
    return qualification_check(study, worker)


def other_kind_refusal(study_session: "StudySession | None", task_kind: str) -> Refusal | None:
    """A visit is spent on its study's own tasks: a participant who arrived to write sentences
    cannot take validation tasks outside that study, nor a validator writing tasks."""
    if study_session is None or study_session.study.task_kind == task_kind:
        return None
    joined = KIND_LABEL.get(study_session.study.task_kind, study_session.study.task_kind)
    asked = KIND_LABEL.get(task_kind, task_kind)
    return Refusal(
        f"You joined the study “{study_session.study.name}” for {joined}. Tasks of another kind "
        f"({asked}) are not part of it and would not count for it. Please carry on with the study's own tasks.",
        title="Not part of your study",
    )


def closed_visit_refusal(study_session: "StudySession") -> Refusal | None:
    """A visit the market closed (returned, timed out, rejected) takes no more tasks."""
    if study_session.closed_at is None:
        return None
    return Refusal(
        "This visit to the study has ended on the crowd platform (the submission was returned, timed out or "
        "rejected there), so it takes no more tasks. To take part again, open the study from the platform.",
        title="This visit has ended",
    )
