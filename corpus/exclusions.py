"""Labels that stop counting after they were written: a team's exclusion of workers
(`set_workers_excluded`; `follow_team_exclusions` when a dataset changes team) and a participant's
erasure (`labels_left`, after privacy.services deleted their labels). The pairs are recounted from
the label table (`corpus.recompute`), stopped pairs whose gold is no longer decided go back to the
queue, and a model's vote that rested on a lost label is withdrawn.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery

from audit import services as audit

from . import tallies, worker_tally
from .gold_moves import gold_recounted
from .models import (
    Adjudication,
    AdjudicationAction,
    AdjudicationSource,
    Dataset,
    Pair,
    ValidationLabel,
    Worker,
    WorkerExclusion,
)
from .recompute import RECOUNT_CHUNK, heal_pairs, lock_pairs, recount_locked
from .selectors import excluded_in
from .stopping_policies import requeue_undecided_stopped


def _withdraw_model_votes(pair_ids: list[int]) -> int:
    """A model's vote stopped a pair on two human labels agreeing with it; a requeued pair lost one
    of them, so the vote's decision is withdrawn. Returns how many decisions were withdrawn."""
    from .adjudication import adjudicate  # the adjudication writes audit and gold moves of its own

    if not pair_ids:
        return 0
    latest = Adjudication.objects.filter(pair=OuterRef("pk")).order_by("-pk")
    voted = (
        Pair.objects.filter(pk__in=pair_ids)
        .exclude(adjudicated_label="")
        .annotate(standing=Subquery(latest.values("source")[:1]))
        .filter(standing=AdjudicationSource.MODEL_VOTE)
    )
    withdrawn = 0
    for pair in voted.order_by("pk"):
        adjudicate(
            pair,
            "",
            source=AdjudicationSource.MODEL_VOTE,
            reason="a human label of the model's vote was excluded",
            action=AdjudicationAction.WITHDRAW,
        )
        withdrawn += 1
    return withdrawn


def follow_team_exclusions(dataset: Dataset) -> int:
    """After a dataset moved to another team: its labels marked as that team's exclusions say (the
    old team's decisions leave with it), its pairs recounted. Returns the pairs whose counters moved."""
    excluded = excluded_in([dataset.team_id]).values("worker_id")
    labels = ValidationLabel.objects.filter(pair__dataset=dataset, worker__isnull=False)
    marking = labels.filter(worker_id__in=excluded, excluded=False)
    clearing = labels.filter(excluded=True).exclude(worker_id__in=excluded)
    with transaction.atomic():
        touched = set(marking.values_list("pair_id", flat=True)) | set(clearing.values_list("pair_id", flat=True))
        lock_pairs(sorted(touched))  # the pairs first, as every writer of their labels locks them
        marking.update(excluded=True)
        clearing.update(excluded=False)
    if not touched:
        return 0
    fixed = heal_pairs(sorted(touched))
    _withdraw_model_votes(requeue_undecided_stopped(sorted(touched)))
    gold_recounted()
    return fixed


@dataclass
class ExclusionOutcome:
    changed: int  # workers whose standing in one of the teams changed
    pairs_fixed: int = 0  # pairs whose counters or gold label moved with it
    teams: tuple[int, ...] = ()


def set_workers_excluded(
    workers: QuerySet[Worker], excluded: bool, *, teams: Iterable[int], by: Any = None, reason: str = ""
) -> ExclusionOutcome:
    """Exclude (or include again) workers in these teams: their labels on the teams' datasets leave
    (or rejoin) gold labels, statistics and snapshots, and the pairs they labelled there are
    recounted; their labels on other teams' datasets stay as they are.

    The exclusion, its marks on the labels and its audit entries are one transaction; the pairs are
    recounted after it, a batch at a time (`corpus.recompute.heal_pairs`), so validators' submits
    go on meanwhile; a recount that stopped half-way is finished by the next recompute.
    """
    team_ids = sorted(set(teams))
    if not team_ids:
        return ExclusionOutcome(changed=0)
    with transaction.atomic():
        workers_named = dict(
            # NO KEY UPDATE, as a submit locks its worker: a FOR UPDATE would wait for the foreign-key
            # checks of the worker tally's deltas that name this worker (a submit on a pair they
            # labelled moves their leave-one-out gold), which commit holding the pairs' locks it
            # waits for next: a deadlock.
            Worker.objects.select_for_update(no_key=True)
            .filter(pk__in=workers.values("pk"))
            .values_list("pk", "external_id")
        )
        standing = set(
            WorkerExclusion.objects.filter(worker_id__in=workers_named, team_id__in=team_ids).values_list(
                "worker_id", "team_id"
            )
        )
        if excluded:
            moving = sorted((pk, team) for pk in workers_named for team in team_ids if (pk, team) not in standing)
            WorkerExclusion.objects.bulk_create(WorkerExclusion(worker_id=pk, team_id=team) for pk, team in moving)
        else:
            moving = sorted(standing)
            for pk, team in moving:
                WorkerExclusion.objects.filter(worker_id=pk, team_id=team).delete()
        labels_of = {
            (pk, team): ValidationLabel.objects.filter(worker_id=pk, pair__dataset__team_id=team) for pk, team in moving
        }
        # The pairs' worker figures move: read before and after under their row locks (the
        # workers' locks first, as a validator's submit takes them).
        touched = sorted(
            {
                pair
                for labels in labels_of.values()
                for pair in labels.exclude(excluded=excluded).values_list("pair_id", flat=True)
            }
        )
        lock_pairs(touched)
        worker_rows = worker_tally.read(touched)
        for (pk, team), labels in labels_of.items():
            datasets = sorted(set(labels.values_list("pair__dataset__slug", flat=True)))
            labels.exclude(excluded=excluded).update(excluded=excluded)
            # In the team's own log, naming the team's datasets whose labels it moves.
            audit.record(
                "worker.excluded" if excluded else "worker.readmitted",
                actor=by,
                team_id=team,
                subject_type="corpus.worker",
                subject_id=pk,
                subject_label=workers_named[pk],
                before={"excluded": not excluded},
                after={"excluded": excluded},
                reason=reason,
                datasets=datasets,
            )
        worker_tally.moved(worker_rows, touched)
    if not moving:
        return ExclusionOutcome(changed=0, teams=tuple(team_ids))
    fixed = heal_pairs(touched)
    requeued = requeue_undecided_stopped(touched)  # a stopped pair that lost a label may be undecided again
    _withdraw_model_votes(requeued)
    gold_recounted()
    return ExclusionOutcome(changed=len({pk for pk, _ in moving}), pairs_fixed=fixed, teams=tuple(team_ids))


def labels_left(pair_pks: Sequence[int], *, worker_rows: tallies.Truth, read_of: Sequence[int]) -> int:
    """After labels of these pairs were deleted (a participant's erasure), in the caller's
    transaction, the pairs locked by it: the pairs recounted (`corpus.recompute.recount_locked`), the
    worker figures moved from `worker_rows` (of the pairs `read_of`, read under their locks before
    anything was deleted), stopped pairs no longer decided requeued and the model votes they rested
    on withdrawn, as after an exclusion. Returns pairs recounted."""
    touched = sorted(pair_pks)
    stopped: list[int] = []  # the pairs recounted that were stopped early: the only ones to requeue
    fixed = recount_locked(touched, stopped=stopped)
    # After the recount: a label's worker figures read its pair's counters (leave-one-out gold).
    worker_tally.moved(worker_rows, read_of)
    requeued: list[int] = []
    for start in range(0, len(stopped), RECOUNT_CHUNK):  # a chunk a statement, looked up by index
        requeued += requeue_undecided_stopped(stopped[start : start + RECOUNT_CHUNK])
    _withdraw_model_votes(requeued)
    gold_recounted()
    return fixed
