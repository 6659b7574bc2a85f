from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from .models import MonitorRefresh, NudgeRecord, PairTags, StudyNudge, TaggingJob


@admin.register(TaggingJob)
class TaggingJobAdmin(admin.ModelAdmin[TaggingJob]):
    list_display = ("pk", "dataset", "retag", "status", "done", "total", "tagger", "created_at", "finished_at")
    list_filter = ("status",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # jobs come from tag_pairs, the tasks and the triggers

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(PairTags)
class PairTagsAdmin(admin.ModelAdmin[PairTags]):
    list_display = ("pair", "tagger", "tagged_at")
    raw_id_fields = ("pair",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(StudyNudge)
class StudyNudgeAdmin(admin.ModelAdmin[StudyNudge]):
    """The per-study switch of artifact-aware writing."""

    list_display = ("study", "enabled", "threshold")
    list_editable = ("enabled", "threshold")


@admin.register(MonitorRefresh)
class MonitorRefreshAdmin(admin.ModelAdmin[MonitorRefresh]):
    list_display = ("pk", "dataset", "trigger", "status", "pairs", "flagged", "seconds", "created_at")
    list_filter = ("status", "trigger")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(NudgeRecord)
class NudgeRecordAdmin(admin.ModelAdmin[NudgeRecord]):
    list_display = ("pk", "worker", "study", "label", "enabled", "shown", "revised", "created_at")
    list_filter = ("enabled", "shown", "revised", "label")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
