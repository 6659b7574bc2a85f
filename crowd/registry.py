"""What the crowd layer needs of the apps above it, registered into it at start (docs/architecture.md).

The crowd layer runs studies of every kind of task but sits beneath the apps that serve the tasks
and the app that judges who may take them (quality), so it never names them. It declares here what
it needs of them (`TaskApps`), and the composition root (`annotation_site.wiring.register`, called
in every process that sets Django up) registers the task apps into it.

A process that never registered the task apps (SiteConfig left out of INSTALLED_APPS) fails
loudly at the first use rather than releasing no claims or paying flagged workers unseen.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.exceptions import ImproperlyConfigured

from . import access, arrival, selectors
from .models import TaskClaim

if TYPE_CHECKING:
    from django.http import HttpRequest

    from corpus.models import Worker

    from .models import Study, StudySession


@dataclass(frozen=True)
class TaskApps:
    """The task apps as the crowd layer knows them.

    - `next_task_url`: the URL name of the next task of a study of each kind ({crowd.TaskKind: name});
    - `grammaticality_url`: DNC's grammaticality task, offered beside a validation study's batches;
    - `claim_models`: every concrete `TaskClaim`, whose open claims the crowd layer releases when a
      worker starts another study session, is excluded or their submission ends on the market;
    - `qualification_check`: the check of studies with access "qualified" (`crowd.access`);
    - `consent_check`: whether a visit agreed to its study's information sheet: every task door asks;
    - `worker_flags`: {worker pk: [words]} of the flags the approval and bonus lists show;
    - `researcher_namespaces`: the researchers' pages, whose writing requests a preview refuses;
    - `catch_shortfall`: why a study's catch-trial share cannot be met, in words, or None;
    - `market_confirms`: whether the study's market confirms each participant id: a paid study
      launches only with it or signed links. Unregistered: no market confirms anyone.

    No list of task pages: a researcher's preview serves every page with nothing saved, a task
    app's that nothing registers included (`crowd.preview`, fail-closed).
    """

    next_task_url: Mapping[str, str]
    grammaticality_url: str
    claim_models: tuple[type[TaskClaim], ...]
    qualification_check: access.AdmissionCheck
    consent_check: access.ConsentCheck
    worker_flags: selectors.MarkSource
    # Django's admin is every site's; the root adds its own researchers' pages.
    researcher_namespaces: frozenset[str] = frozenset({"admin"})
    catch_shortfall: Callable[["Study"], str | None] = lambda study: None
    market_confirms: Callable[["Study"], bool] = lambda study: False


_registered: list[TaskApps] = []


def register(task_apps: TaskApps) -> None:
    """Register the task apps (the composition root, at start); a second call replaces the first."""
    _registered[:] = [task_apps]


def registered() -> TaskApps:
    if not _registered:
        raise ImproperlyConfigured(
            "The crowd layer has no task apps registered: annotation_site.apps.SiteConfig must be in INSTALLED_APPS."
        )
    return _registered[0]


def next_task_url(task_kind: str) -> str:
    return registered().next_task_url[task_kind]


def admission_refusal(study: "Study", worker: "Worker | None") -> access.Refusal | None:
    """None when `worker` may work on `study` now, else the crowd.access.Refusal to show (or follow)."""
    return access.admission_refusal(study, worker, qualification_check=registered().qualification_check)


def consent_refusal(request: "HttpRequest", study_session: "StudySession") -> access.Refusal | None:
    """None when the visit may be given a task as far as its study's information sheet goes, else
    the Refusal to follow (the sheet, the page for those who declined) or show (it withdrew)."""
    return registered().consent_check(request, study_session)


def worker_marks(worker_ids: Iterable[int], *, team_id: int | None) -> dict[int, list[str]]:
    """`selectors.worker_marks` with the registered flags."""
    return selectors.worker_marks(worker_ids, team_id=team_id, flagged=registered().worker_flags)


def release_open_claims_of_workers(worker_ids: Iterable[int], team_ids: Iterable[int]) -> int:
    """Release every open claim of these workers (excluded ones) on the datasets of these teams (the
    teams that excluded them), of every task app; returns how many."""
    return arrival.release_open_claims(
        registered().claim_models, worker__in=list(worker_ids), on_teams=sorted(set(team_ids))
    )


def release_open_claims_of_session(session: "StudySession") -> int:
    """Release the open claims made in one study session, of every task app; returns how many."""
    return arrival.release_open_claims(registered().claim_models, worker__in=[session.worker_id], study_session=session)


def catch_shortfall(study: "Study") -> str | None:
    return registered().catch_shortfall(study)


def market_confirms(study: "Study") -> bool:
    return registered().market_confirms(study)


def launch_refusal(study: "Study") -> str | None:
    """Why the paid `study` may not take participants (its ids unverified, no open-link choice), or None."""
    return arrival.launch_refusal(study, market_confirms=market_confirms(study))
