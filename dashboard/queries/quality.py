"""The researcher's labelling page and the bonus page: the pair's reference label, catch trials and pools."""

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Window

from corpus.models import Pair, Worker, WorkerExclusion
from corpus.scope import EVERYTHING, Scope
from crowd.models import Study, StudySession
from crowd.selectors import worker_marks
from quality import flag_rows
from quality.bonuses import CatchStanding, catch_standings
from quality.catch_trials import catch_pools
from quality.models import ReferenceLabel, WorkerFlagRow, WorkerFlagScope
from quality.selectors import WorkerQuality
from teams.access import team_ids
from validation.models import ValidationClaim

from ..figure_cache import (
    cache_seconds,
    cached,
    cached_for_study,
    corpus_is_large,
    figures_changed_at,
    refreshable,
    refreshable_for_study,
    schedule_refresh,
)

CATCH_TRIALS_SHOWN = 20


def reference_label(pair: Pair | None) -> ReferenceLabel | None:
    return ReferenceLabel.objects.filter(pair=pair).first() if pair else None


def recent_catch_trials(scope: Scope = EVERYTHING, *, limit: int = CATCH_TRIALS_SHOWN) -> list[ReferenceLabel]:
    catch_trials = scope.filter(ReferenceLabel.objects.filter(is_catch_trial=True), via="pair__dataset")
    return list(catch_trials.select_related("pair").order_by("-updated_at")[:limit])


def bonus_catch_standings(study: Study) -> dict[int, CatchStanding]:
    """The bonus page's catch figures of the study's workers: the figure cache's (the money beside
    them is read on every request)."""
    return cached_for_study("bonus-catch-standings", study.pk, lambda: catch_standings(study))


@refreshable_for_study("bonus-catch-standings")
def _bonus_catch_standings_of(study_id: int) -> dict[int, CatchStanding]:
    found = Study.objects.filter(pk=study_id).first()
    return catch_standings(found) if found is not None else {}


@refreshable("worker-flag-rows")
def _recompute_flag_rows(scope: Scope) -> datetime:
    return flag_rows.recompute(scope)


def worker_flags_as_of(scope: Scope) -> datetime:
    """When the maintained worker-flag rows of the scope (of every split) were computed, after
    making sure they are there: computed now when never computed; out of date (the figure cache's
    rules) recomputed now on a small corpus and by a task on a large one, shown meanwhile."""
    return _flags_with(scope)[0]


def _flags_with(scope: Scope, *fields: str, **expressions: Any) -> tuple[datetime, dict[str, Any] | None]:
    """`worker_flags_as_of`, and the kept scope row's `fields` and `expressions` read in the same
    statement: None when the rows were computed now (read them afresh), so a page asks the kept
    row once for its time and what it shows of it."""
    scope = scope.whole()
    found = (
        WorkerFlagScope.objects.filter(key=scope.datasets_key)
        .order_by("pk")
        .values("computed_at", *fields, **expressions)
        .first()
    )
    at = found["computed_at"] if found is not None else None
    if at is not None and at.timestamp() >= figures_changed_at() and time.time() - at.timestamp() < cache_seconds():
        return at, found
    # Asked on a first load too, so it reads the statements a later one does.
    large = corpus_is_large()
    if at is not None and large:
        schedule_refresh("worker-flag-rows", scope)
        return at, found  # the kept rows, shown meanwhile: their time and what is read with it agree
    return flag_rows.recompute(scope), None


def worker_quality_page(
    scope: Scope, number: str | int | None, per_page: int
) -> tuple[Page[WorkerQuality], datetime, set[int]]:
    """One page of the maintained worker-quality rows, whatever the crowd's size; when they were
    computed; and which of the page's workers are excluded in the scope's teams."""
    as_of, kept = _flags_with(scope, count=Count("rows"))
    if kept is None:  # the rows were computed now: their count is read with the page
        page: Page[Any] = Paginator(_quality_rows(scope), per_page).get_page(number)
        page.object_list, excluded = _as_shown(page.object_list)
        return page, as_of, excluded
    # The kept rows of that time, counted with it: the page's slice is the figure cache's, per
    # computation and page, out of date as soon as an exclusion is written.
    counted: Page[Any] = Paginator(range(kept["count"]), per_page).get_page(number)
    first = (counted.number - 1) * per_page
    counted.object_list, excluded = cached(
        "worker-quality-page",
        scope,
        lambda: _as_shown(_quality_rows(scope)[first : first + per_page]),
        part=f"{as_of.timestamp()}:{per_page}:{counted.number}",
    )
    return counted, as_of, excluded


def _quality_rows(scope: Scope) -> QuerySet[WorkerFlagRow]:
    """The scope's kept rows in order, each with whether its worker is excluded in the scope's teams."""
    exclusions = WorkerExclusion.objects.filter(worker_id=OuterRef("worker_id"))
    if scope.dataset is not None:
        exclusions = exclusions.filter(team_id__in=[scope.dataset.team_id])
    elif scope.teams is not None:
        exclusions = exclusions.filter(team_id__in=scope.teams)
    return flag_rows.rows_of(scope).annotate(excluded=Exists(exclusions))


def _as_shown(rows: Iterable[WorkerFlagRow]) -> tuple[list[WorkerQuality], set[int]]:
    """A slice of `_quality_rows` as the WorkerQuality rows it was, and its excluded workers."""
    read = list(rows)
    return flag_rows.as_quality(read), {row.worker_id for row in read if row.excluded}  # type: ignore[attr-defined]


def flagged_workers(scope: Scope = EVERYTHING) -> list[int]:
    """The workers the quality checks flag on the labels of `scope`, as its workers page shows them
    (another team's labels never flag a worker on this team's pages), without their pairs."""
    _, kept = _flags_with(scope, "flagged")
    if kept is None:  # the rows were computed now
        return flag_rows.flagged_ids(scope) or []
    return sorted(kept["flagged"])


def flagged_workers_as_of(scope: Scope = EVERYTHING) -> tuple[list[int], datetime, int]:
    """`flagged_workers`, when they were computed (the page says so) and how many pairs they had
    labelled then (`quality.flag_rows.pairs_labelled_by`: the flagged queue's count before decisions)."""
    as_of, kept = _flags_with(scope, "flagged", "flagged_pairs")
    if kept is None:
        flagged, pairs = flag_rows.flagged_with_pairs(scope) or ([], None)
    else:
        flagged, pairs = sorted(kept["flagged"]), kept["flagged_pairs"]
    if pairs is None:  # the first page since the rows were computed counts them, once
        pairs = flag_rows.count_flagged_pairs(scope, flagged, as_of)
    return flagged, as_of, pairs


def bonus_marks(worker_ids: Iterable[int], *, team_id: int | None) -> dict[int, list[str]]:
    """`crowd.selectors.worker_marks` of the bonus page's workers, the flags read from the
    maintained rows of every dataset for these workers only, not computed afresh for each page."""
    return worker_marks(worker_ids, team_id=team_id, flagged=flag_rows.flag_marks_of)


def bonus_flags_as_of() -> datetime:
    """When the flags the bonus page marks were computed (every dataset's rows), made sure of."""
    return worker_flags_as_of(EVERYTHING)


def catch_pools_of_active_studies(user: Any, action: str) -> list[dict[str, Any]]:
    """Each active study of the teams where the user may do `action`, with its catch-trial pool
    and servings left: no money, so the figure cache's."""
    scope = Scope.of_teams(team_ids(user, action))
    return cached("bonus-catch-pools", scope, lambda: _catch_pools_of(scope))


@refreshable("bonus-catch-pools")
def _catch_pools_of(scope: Scope) -> list[dict[str, Any]]:
    studies = Study.objects.filter(is_active=True)
    if scope.teams is not None:  # as `teams.access.scoped` narrows them: by the study's team
        studies = studies.filter(team__in=scope.teams)
    return catch_pools(studies.select_related("dataset"), ValidationClaim.objects.all())


# The discretionary bonus form's list: the study's latest sessions; any other is typed by its id.
RECIPIENTS_SHOWN = 200


def bonus_recipients(study: Study) -> dict[str, Any]:
    """The study's latest sessions a discretionary bonus may go to (`rows`, at most
    RECIPIENTS_SHOWN), never a preview, and how many sessions there are (`total`): the figure
    cache's (a session started since is given its bonus by its typed id)."""
    return cached_for_study("bonus-recipients", study.pk, lambda: _recipients_of(study.pk))


@refreshable_for_study("bonus-recipients")
def _recipients_of(study_id: int) -> dict[str, Any]:
    """Plain rows of the columns the form shows (`worker`: the participant as the pages name them),
    the latest sessions, listed by participant, with the count of all in the same statement."""
    rows = list(
        StudySession.objects.filter(study_id=study_id, is_preview=False)
        .annotate(total=Window(Count("pk")))
        .order_by("-started_at", "-pk")
        .values_list(
            "pk",
            "worker__external_id",
            "worker__user__username",
            "external_session_id",
            "tasks_done",
            "completed_at",
            "started_at",
            "total",
        )[:RECIPIENTS_SHOWN]
    )
    # Listed by participant, as the pages name them, then by when each session started.
    rows.sort(key=lambda row: (row[1] or "", row[2] or "", row[6]))
    shown = [
        {
            "pk": pk,
            "worker": Worker.named(external_id, username),
            "external_session_id": session_id,
            "tasks_done": tasks_done,
            "completed_at": completed_at,
            # The option's text, written once here.
            "label": f"{Worker.named(external_id, username)} · session {session_id or '(none)'} · {tasks_done} "
            f"task{'' if tasks_done == 1 else 's'}{' · complete' if completed_at else ''}",
        }
        for pk, external_id, username, session_id, tasks_done, completed_at, _started_at, _total in rows
    ]
    return {"rows": shown, "total": rows[0][-1] if rows else 0}


def session_of_study(study: Study, session_id: int) -> StudySession | None:
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
