"""The correlated-error check inside an aggregation run (docs/quality.md "Correlated errors"): the
run's label table goes to `quality.correlated`, and what it finds is written in the run's
transaction, one `CorrelatedWorkerGroup` per group and one `GroupDecidedPair` per pair whose gold
rests on a group's votes (the adjudication queue `correlated` of each dataset's latest finished run).
"""

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import Count

from corpus.models import Worker
from corpus.scope import EVERYTHING, Scope

from .models import AggregationRun, CorrelatedWorkerGroup, GroupDecidedPair

if TYPE_CHECKING:
    import pandas as pd

    from .correlated import CorrelatedCheck

WRITE_BATCH = 5000


@dataclass(frozen=True)
class CheckedLabels:
    check: "CorrelatedCheck"
    at_risk: "pd.DataFrame"  # gold_at_risk's rows (task = pair pk)
    seconds: float


def check_labels(data: "pd.DataFrame") -> CheckedLabels:
    """The groups and the pairs at risk in a run's label table (crowd-kit layout, task = pair pk)."""
    from . import correlated

    started = time.perf_counter()
    found = correlated.find_correlated_groups(data)
    at_risk = correlated.gold_at_risk(data, found)
    return CheckedLabels(check=found, at_risk=at_risk, seconds=round(time.perf_counter() - started, 2))


def _worker_pk(name: str) -> int | None:
    # Labels without a worker are one-label workers named "anon-<label pk>" and never reach a group.
    return int(name) if name.isdigit() else None


def save_check(run: AggregationRun, checked: CheckedLabels) -> dict[str, Any]:
    """Write the groups and the pairs at risk for the run (inside the run's transaction); returns its figures."""
    groups: dict[int, CorrelatedWorkerGroup] = {}
    memberships: list[Any] = []
    for group in checked.check.groups:
        row = CorrelatedWorkerGroup.objects.create(
            run=run,
            number=group.number,
            shared=group.shared,
            disagreements=group.disagreements,
            expected_disagreements=group.expected_disagreements,
            co_errors=group.co_errors,
            evidence=[edge.as_dict() for edge in group.edges],
        )
        groups[group.number] = row
        memberships.extend(
            CorrelatedWorkerGroup.members.through(correlatedworkergroup_id=row.pk, worker_id=pk)
            for member in group.members
            if (pk := _worker_pk(member)) is not None
        )
    CorrelatedWorkerGroup.members.through.objects.bulk_create(memberships, batch_size=WRITE_BATCH)
    GroupDecidedPair.objects.bulk_create(
        (
            GroupDecidedPair(
                run=run, pair_id=int(task), group=groups[int(number)], gold_label=gold, reason=str(reason)[:200]
            )
            for task, number, gold, reason in checked.at_risk[["task", "group", "gold", "reason"]].itertuples(
                index=False
            )
        ),
        batch_size=WRITE_BATCH,
    )
    held = hold_money_of_members(run, list(groups.values()))
    return {
        **checked.check.figures(),
        "pairs_to_adjudicate": len(checked.at_risk),
        "sessions_held": held,
        "seconds": checked.seconds,
    }


# The hold kind of a correlated group's members (registered by quality.guessers with the others).
CORRELATED = "correlated"


def group_reason(group: CorrelatedWorkerGroup) -> str:
    return (
        f"Labels agree with other ids far beyond their accuracy (correlated group {group.number} of "
        f"aggregation run {group.run_id}: {group.co_errors} same wrong labels)."
    )


def hold_money_of_members(run: AggregationRun, groups: list[CorrelatedWorkerGroup]) -> int:
    """Hold the completed, undecided sessions of each group's members in the run's dataset's studies
    that hold codes (`hold_code_at_chance`): a group is found after its members finished, so the
    hold keeps their bonuses and payment waiting for a researcher (crowd.holds.money_may_go), as a
    hold at completion would have. Sessions held already add the group's reason to theirs; those a
    researcher decided are left as decided. Returns how many sessions were held now."""
    from crowd.holds import hold
    from crowd.models import CodeHold, StudySession

    held = 0
    for group in groups:
        for session in StudySession.objects.filter(
            worker__in=group.members.all(),
            study__dataset_id=run.dataset_id,
            study__hold_code_at_chance=True,
            completed_at__isnull=False,
        ).exclude(pk__in=CodeHold.objects.exclude(decision="").values("session_id")):
            held += hold(session, CORRELATED, group_reason(group)) is not None
    return held


def correlated_group_of(worker: Worker, dataset_id: int) -> CorrelatedWorkerGroup | None:
    """The group this worker belongs to in the latest finished aggregation run of the dataset, or None."""
    from base.long_tasks import JobStatus

    latest = (
        AggregationRun.objects.filter(status=JobStatus.DONE, dataset_id=dataset_id).order_by("-pk").values("pk")[:1]
    )
    return CorrelatedWorkerGroup.objects.filter(run_id__in=latest, members=worker).select_related("run").first()


# --- reads for the pages -------------------------------------------------------------------------


def latest_run_ids(scope: Scope = EVERYTHING) -> list[int]:
    """The latest finished aggregation run of each dataset in scope, in one statement."""
    from base.long_tasks import JobStatus

    runs = scope.filter(AggregationRun.objects.filter(status=JobStatus.DONE))
    return sorted(runs.order_by("dataset_id", "-pk").distinct("dataset_id").values_list("pk", flat=True))


def groups_of_runs(run_ids: list[int]) -> list[dict[str, Any]]:
    """The groups of these runs, each with its members (id, name, labels read), evidence, pairs
    waiting in the adjudication queue and its run. A run's groups, members and pairs are written in
    its transaction (`save_check`) and never after, so a finished run's answer stays as it was."""
    groups = list(
        CorrelatedWorkerGroup.objects.filter(run_id__in=run_ids)
        .select_related("run__dataset")
        .annotate(pairs=Count("decided_pairs"))
        .order_by("run__dataset__slug", "number")
    )
    members: dict[int, list[Worker]] = {}
    through = CorrelatedWorkerGroup.members.through.objects.filter(correlatedworkergroup_id__in=[g.pk for g in groups])
    for link in through.select_related("worker__user").order_by("worker_id"):
        members.setdefault(link.correlatedworkergroup_id, []).append(link.worker)
    return [
        {
            "group": group,
            "dataset": group.run.dataset,
            "members": members.get(group.pk, []),
            "evidence": group.evidence,
            "pairs": group.pairs,
        }
        for group in groups
    ]
