from django.contrib import admin

from corpus.admin_base import RecordAdmin

from .models import MonitorRefresh, NudgeRecord, PairTags, StudyNudge, TaggingJob


@admin.register(TaggingJob)
class TaggingJobAdmin(RecordAdmin[TaggingJob]):
    """Jobs come from tag_pairs, the tasks and the triggers."""

    list_display = ("pk", "dataset", "retag", "status", "done", "total", "tagger", "created_at", "finished_at")
    list_filter = ("status",)


@admin.register(PairTags)
class PairTagsAdmin(RecordAdmin[PairTags]):
    list_display = ("pair", "tagger", "tagged_at")
    raw_id_fields = ("pair",)


@admin.register(StudyNudge)
class StudyNudgeAdmin(admin.ModelAdmin[StudyNudge]):
    """The per-study switch of artifact-aware writing."""

    list_display = ("study", "enabled", "threshold")
    list_editable = ("enabled", "threshold")


@admin.register(MonitorRefresh)
class MonitorRefreshAdmin(RecordAdmin[MonitorRefresh]):
    list_display = ("pk", "dataset", "trigger", "status", "pairs", "flagged", "seconds", "created_at")
    list_filter = ("status", "trigger")


@admin.register(NudgeRecord)
class NudgeRecordAdmin(RecordAdmin[NudgeRecord]):
    list_display = ("pk", "worker", "study", "label", "enabled", "shown", "revised", "created_at")
    list_filter = ("enabled", "shown", "revised", "label")
