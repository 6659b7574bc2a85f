"""Export tasks (default queue). modeling/tasks.py re-exports them for Celery's autodiscovery."""

import logging

from celery import shared_task

from modeling.models import Snapshot

from .services import EXPORT_TASK, ExportRefused, export_snapshot

logger = logging.getLogger(__name__)

__all__ = ["export_snapshot_task"]


@shared_task(name=EXPORT_TASK)
def export_snapshot_task(snapshot_id: int) -> str | None:
    """Run one snapshot's export; its status (running/done/failed + error) is kept on the row."""
    snapshot = Snapshot.objects.filter(pk=snapshot_id).first()
    if snapshot is None:
        logger.warning("snapshot %s no longer exists; nothing to export", snapshot_id)
        return None
    try:
        export_snapshot(snapshot)
    except ExportRefused as exc:
        # A done snapshot, or one already running: refusing is the correct outcome, not a task failure.
        logger.info("export of snapshot %s refused: %s", snapshot_id, exc)
        return None
    return snapshot.content_hash
