"""Participants stranded when the pool runs out mid-visit: they did some of their tasks, none is
left for them, so they cannot earn the completion code. They are told so and given the study's
partial-completion path: its partial-completion code, or asked to return the study.

A stranded visit that finds a task again (another participant's hold ran out) may still finish:
completing it wins over being stranded, on the participant's page and the researcher's.
"""

from dataclasses import dataclass
from urllib.parse import quote

from django.db.models import Q
from django.utils import timezone

from corpus.models import Market

from .models import StudySession


@dataclass(frozen=True)
class StrandedPath:
    """What a stranded participant's page says: the tasks done of the batch's, and the partial code
    with the market's completion address for it (blank: they are asked to return the study)."""

    tasks_done: int
    tasks_per_batch: int
    code: str
    return_url: str
    on_mturk: bool


def stranded_filter(prefix: str = "") -> Q:
    """The stranded sessions, as a filter: told they cannot finish and neither completed nor closed since."""
    return Q(
        **{
            f"{prefix}stranded_at__isnull": False,
            f"{prefix}completed_at__isnull": True,
            f"{prefix}closed_at__isnull": True,
        }
    )


def strand(study_session: StudySession | None) -> StrandedPath | None:
    """For a visit just told there is no task: when it did some tasks and is still open, record it
    stranded (the first time) and return its path; else None. A preview is never stranded."""
    if (
        study_session is None
        or study_session.pk is None
        or study_session.is_preview
        or study_session.tasks_done == 0
        or study_session.completed_at is not None
        or study_session.closed_at is not None
    ):
        return None
    if study_session.stranded_at is None:
        StudySession.objects.filter(pk=study_session.pk, stranded_at__isnull=True).update(stranded_at=timezone.now())
    study = study_session.study
    code = study.partial_completion_code
    return_url = ""
    if code and study.completion_url and study_session.worker.market != Market.MTURK:
        return_url = study.completion_url.replace("{code}", quote(code, safe=""))
    return StrandedPath(
        tasks_done=study_session.tasks_done,
        tasks_per_batch=study.tasks_per_batch,
        code=code,
        return_url=return_url,
        on_mturk=study_session.worker.market == Market.MTURK,
    )
