"""The researcher's labelling page and the bonus page: the pair's reference label, catch trials and pools."""

from typing import Any

from django.db.models import Q

from corpus.models import Dataset, Pair
from corpus.selectors import TeamDatasets, in_datasets
from crowd.models import Study, StudySession
from quality.catch_trials import catch_pools
from quality.models import ReferenceLabel
from quality.selectors import WorkerQuality, flagged_worker_ids, worker_quality
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
    never flag a worker on this team's pages."""
    return flagged_worker_ids(worker_quality_rows(datasets))


def catch_pools_of_active_studies(user: Any, action: str) -> list[dict[str, Any]]:
    """Each active study of the teams where the user may do `action` (teams.access): its
    catch-trial pool, pairs and servings left (a dry pool serves none)."""
    studies = scoped(Study.objects.filter(is_active=True), user, action).select_related("dataset")
    return catch_pools(studies, ValidationClaim.objects.all())


def bonus_recipients(study: Study) -> list[StudySession]:
    """The study's sessions a discretionary bonus may go to, as the bonus form lists them: each
    named by its participant and market session (the ids the pages show), never a preview."""
    return list(
        StudySession.objects.filter(study=study, is_preview=False)
        .select_related("worker__user")
        .order_by("worker__external_id", "worker__user__username", "started_at")
    )


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
