"""Writes of the quality app: researchers' reference labels and catch trials; exclusions.

Bonus writes are in `bonuses.py`; catch-trial scoring in `catch_trials.py`.
"""

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from audit import services as audit
from corpus.exclusions import ExclusionOutcome, set_workers_excluded
from corpus.gold import VOTE_FIELD
from corpus.models import Pair, Worker
from corpus.scope import Scope
from corpus.selectors import excluded_in
from corpus.services import LabelRefused
from crowd.models import StudySession
from crowd.registry import release_open_claims_of_workers

from .models import ReferenceLabel
from .selectors import worker_quality


def set_reference_label(
    pair: Pair, label: str, *, by: User | None = None, is_catch_trial: bool = False, note: str = ""
) -> ReferenceLabel:
    """A researcher's label for a pair (replacing an earlier one), optionally marking it a catch trial.

    A catch trial's reference label is the answer validators are scored against; marking a pair
    leaves its own labels, counters and gold label as they are.
    """
    if label not in VOTE_FIELD:
        raise LabelRefused(f"'{label}' is not a label; choose one of {', '.join(VOTE_FIELD)}.")
    if len(note) > 300:
        raise LabelRefused("The note is limited to 300 characters.")
    with transaction.atomic():
        old = ReferenceLabel.objects.select_for_update().filter(pair=pair).first()
        before = {"label": old.label, "is_catch_trial": old.is_catch_trial} if old else {}
        reference, _ = ReferenceLabel.objects.update_or_create(
            pair=pair,
            defaults={"label": label, "labelled_by": by, "is_catch_trial": bool(is_catch_trial), "note": note},
        )
        audit.record(
            "gold.reference_label",
            actor=by,
            subject=pair,
            subject_label=pair.pair_id,
            team_id=pair.dataset.team_id,
            before=before,
            after={"label": label, "is_catch_trial": bool(is_catch_trial)},
            reason=note,
            datasets=[pair.dataset.slug],
        )
    return reference


def set_excluded(
    worker_ids: Iterable[int | str], excluded: bool, *, teams: Iterable[int], by: Any = None, reason: str = ""
) -> ExclusionOutcome:
    """Exclude (or include again) these workers in these teams; the teams' gold labels follow, and
    their pairs that lost a validation label go back to the validation pool (`corpus.services`)."""
    ids = sorted({int(pk) for pk in worker_ids})
    team_ids = sorted(set(teams))
    if not ids:
        raise LabelRefused("Choose at least one worker.")
    if not team_ids:
        raise LabelRefused("Choose a team to exclude them in.")
    outcome = set_workers_excluded(Worker.objects.filter(pk__in=ids), excluded, teams=team_ids, by=by, reason=reason)
    if excluded:
        # An excluded worker's open claims on the teams' data would hold their pairs and premises
        # until they expire.
        release_open_claims_of_workers(ids, team_ids)
    return outcome


def auto_exclude_flagged(**flag_options: Any) -> list[ExclusionOutcome]:
    """Exclude flagged workers who took part in a study that opted in (`Study.auto_exclude_flagged`),
    in the team of that study's dataset, on the flags of that team's labels.

    Nothing is excluded automatically otherwise; a researcher reviews the flags on the dashboard's
    workers page. Returns one ExclusionOutcome per team that excluded someone.
    """
    opted_in: dict[int, set[int]] = {}
    for worker_id, team_id in StudySession.objects.filter(study__auto_exclude_flagged=True).values_list(
        "worker_id", "study__dataset__team_id"
    ):
        opted_in.setdefault(team_id, set()).add(worker_id)
    outcomes = []
    for team_id, workers in sorted(opted_in.items()):
        excluded_already = set(excluded_in([team_id]).values_list("worker_id", flat=True))
        flagged = [
            row.worker.pk
            for row in worker_quality(Scope.of_teams([team_id]), **flag_options)
            if row.flags and row.worker.pk in workers and row.worker.pk not in excluded_already
        ]
        if flagged:
            outcomes.append(set_excluded(flagged, True, teams=[team_id]))
    return outcomes
