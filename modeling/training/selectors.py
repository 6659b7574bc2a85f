"""Reads about training runs that several doors share: which snapshot a node may read, which runs
may label pairs, and how far a node's reported accuracy can be trusted."""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from modeling.models import NodeToken, RunStatus, TrainingRun


def live_leases(node_token: NodeToken) -> QuerySet[TrainingRun]:
    """The runs this node token holds now: running under its lease, heartbeat younger than the
    window after which the reaper calls the node lost (settings.TRAINING_STALE_MINUTES)."""
    fresh_since = timezone.now() - timedelta(minutes=float(settings.TRAINING_STALE_MINUTES))
    return TrainingRun.objects.filter(node_token=node_token, status=RunStatus.RUNNING, heartbeat_at__gte=fresh_since)


def node_may_read_snapshot(node_token: NodeToken, snapshot_id: int) -> bool:
    """Whether a node may download this snapshot's files: only while it holds a live lease on a run
    that trains on it. A token that never leased a run, or whose lease ended, reads nothing."""
    return live_leases(node_token).filter(snapshot_id=snapshot_id).exists()


def runs_fit_to_label() -> QuerySet[TrainingRun]:
    """Finished runs whose checkpoint the platform scored itself on the snapshot's dev split: the
    only runs a model annotator may use (a node's own figures are claims)."""
    return TrainingRun.objects.filter(status=RunStatus.DONE, remeasured_accuracy__isnull=False).exclude(
        checkpoint_name=""
    )


def accuracy_check(run: TrainingRun) -> dict[str, Any]:
    """The run's dev accuracy as the pages and the API show it (TrainingRun.accuracy_check)."""
    return run.accuracy_check
