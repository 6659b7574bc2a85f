"""Admin for snapshots and training runs (researchers only).

Both are made by the dashboard or the API and written by Celery tasks; once done they are
records of what happened, so the admin shows them read only. The dashboard, above this app, adds
the link to a run's results page (dashboard/admin.py).
"""

from django.contrib import admin
from django.utils.html import format_html
from django.utils.safestring import SafeString

from corpus.admin_base import ReadOnlyInline, RecordAdmin

from .models import Snapshot, SnapshotFile, TrainingRun


class SnapshotFileInline(ReadOnlyInline[SnapshotFile, Snapshot], admin.TabularInline[SnapshotFile, Snapshot]):
    model = SnapshotFile
    fields = ("name", "split", "rows", "bytes", "sha256", "download")

    @admin.display(description="download")
    def download(self, file: SnapshotFile) -> SafeString:
        return format_html('<a href="/api/snapshots/{}/files/{}">{}</a>', file.snapshot_id, file.name, file.name)


@admin.register(Snapshot)
class SnapshotAdmin(RecordAdmin[Snapshot]):
    list_display = [
        "id",
        "created_at",
        "created_by",
        "datasets",
        "status",
        "progress_percent",
        "row_count",
        "short_hash",
    ]
    list_filter = ["status"]
    list_select_related = ["created_by"]
    search_fields = ["content_hash"]
    inlines = [SnapshotFileInline]

    @admin.display(description="progress")
    def progress_percent(self, snapshot: Snapshot) -> str:
        return f"{snapshot.progress * 100:.0f}%"

    @admin.display(description="content hash")
    def short_hash(self, snapshot: Snapshot) -> str:
        return snapshot.content_hash[:12]


@admin.register(TrainingRun)
class TrainingRunAdmin(RecordAdmin[TrainingRun]):
    list_display = [
        "id",
        "model",
        "snapshot",
        "status",
        "epoch",
        "total_epochs",
        "dev_accuracy",
        "created_at",
    ]
    list_filter = ["status", "model"]
    list_select_related = ["snapshot", "created_by"]
    search_fields = ["snapshot_hash", "celery_task_id", "node_hostname"]
    # The link to a run's results page is the dashboard's (dashboard/admin.py adds it).
