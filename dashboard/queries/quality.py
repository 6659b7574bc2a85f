"""The researcher's labelling page and the bonus page: the pair's reference label, catch trials and pools."""

from collections.abc import Iterable
from typing import Any

from django.db.models import Q

from corpus.models import Dataset, Pair, Worker
from corpus.selectors import TeamDatasets, in_datasets
from crowd.models import Study, StudySession
from crowd.selectors import worker_marks
from quality.catch_trials import catch_pools
from quality.models import ReferenceLabel
from quality.selectors import WorkerQuality, flag_words, flagged_worker_ids, worker_quality
from teams.access import scoped
from validation.models import ValidationClaim

from ..figure_cache import cached, refreshable

CATCH_TRIALS_SHOWN = 20


def reference_label(pair: Pair | None) -> ReferenceLabel | None:
    return ReferenceLabel.objects.filter(pair=pair).first() if pair else None


def recent_catch_trials(
    among: Dataset | TeamDatasets | None = None, *, limit: int = CATCH_TRIALS_SHOWN
) -> list[ReferenceLabel]:
    """The latest catch trials (of the pairs of `among`, a team's datasets; None: every one)."""
    catch_trials = in_datasets(ReferenceLabel.objects.filter(is_catch_trial=True), among, via="pair__dataset")
    return list(catch_trials.select_related("pair").order_by("-updated_at")[:limit])


@refreshable("worker-quality")
def _worker_quality(dataset: Dataset | TeamDatasets | None, split: str | None = None) -> list[WorkerQuality]:
    return worker_quality(dataset)


def worker_quality_rows(dataset: Dataset | TeamDatasets | None = None) -> list[WorkerQuality]:
    """`quality.selectors.worker_quality` through the figure cache: the workers page and the
    adjudication page's flagged queue share one computation a few seconds (issue 53: it is the
    most of both pages at MultiNLI scale, and grows with the crowd's labels; on a large corpus a
    task recomputes it while the last one is shown). An exclusion makes it out of date at once."""
    return cached("worker-quality", dataset, None, lambda: _worker_quality(dataset))


def flagged_workers(datasets: Dataset | TeamDatasets | None = None) -> list[int]:
    """The workers the quality checks flag on the labels of `datasets` (a user's teams' datasets;
    None: every dataset), as the workers page of the same scope shows them: another team's labels
    never flag a worker on this team's pages. Kept in the figure cache as the ids alone: a page
    that needs only who is flagged does not unpickle every worker's row."""
    return cached("worker-quality-flagged", datasets, None, lambda: flagged_worker_ids(worker_quality_rows(datasets)))


def bonus_marks(worker_ids: Iterable[int], *, team_id: int | None) -> dict[int, list[str]]:
    """`crowd.registry.worker_marks` of the bonus page's workers ("excluded", and the quality
    flags), the flags read from the rows the workers page of every dataset shows (the figure
    cache's: one computation shared with the workers and adjudication pages, dropped at an
    exclusion), not computed afresh for each bonus page."""

    def flagged(ids: list[int]) -> dict[int, list[str]]:
        marks = cached("worker-flag-marks", None, None, _flag_marks)
        return {pk: marks[pk] for pk in ids if pk in marks}

    return worker_marks(worker_ids, team_id=team_id, flagged=flagged)


def _flag_marks() -> dict[int, list[str]]:
    """{worker pk: marks} of every flagged worker, from the shared worker-quality rows."""
    return {row.worker.pk: flag_words(row) for row in worker_quality_rows(None) if row.flags}


def catch_pools_of_active_studies(user: Any, action: str) -> list[dict[str, Any]]:
    """Each active study of the teams where the user may do `action` (teams.access): its
    catch-trial pool, pairs and servings left (a dry pool serves none)."""
    studies = scoped(Study.objects.filter(is_active=True), user, action).select_related("dataset")
    return catch_pools(studies, ValidationClaim.objects.all())


def bonus_recipients(study: Study) -> list[dict[str, Any]]:
    """The study's sessions a discretionary bonus may go to, as the bonus form lists them: each
    named by its participant and market session (the ids the pages show), never a preview. Plain
    rows of the columns the form shows (`worker`: the participant as the pages name them): the
    form lists every participant of a study, and whole sessions with their workers and users
    cost most of the bonus page."""
    rows = (
        StudySession.objects.filter(study=study, is_preview=False)
        .order_by("worker__external_id", "worker__user__username", "started_at")
        .values_list(
            "pk", "worker__external_id", "worker__user__username", "external_session_id", "tasks_done", "completed_at"
        )
    )
    return [
        {
            "pk": pk,
            "worker": Worker.named(external_id, username),
            "external_session_id": session_id,
            "tasks_done": tasks_done,
            "completed_at": completed_at,
        }
        for pk, external_id, username, session_id, tasks_done, completed_at in rows
    ]


def session_of_study(study: Study, session_id: int) -> StudySession | None:
    """The study's session of that id (a discretionary bonus's recipient), or None."""
    return StudySession.objects.filter(study=study, pk=session_id, is_preview=False).first()


def sessions_shown_as(study: Study, shown_id: str) -> list[StudySession]:
    """The study's sessions a typed id names, as the pages show it: the participant's id (the
    market's PROLIFIC_PID / workerId, else the account name) or the market's session id
    (SESSION_ID / assignmentId). Several when a participant came more than once."""
    shown_id = shown_id.strip()
    if not shown_id:
        return []
    named = (
        Q(external_session_id=shown_id)
        | Q(worker__external_id=shown_id)
        | Q(worker__external_id="", worker__user__username=shown_id)
    )
    return list(StudySession.objects.filter(named, study=study, is_preview=False).select_related("worker__user"))
