from django.contrib import admin

from corpus.admin_base import RecordAdmin

from .models import WritingEvidence


@admin.register(WritingEvidence)
class WritingEvidenceAdmin(RecordAdmin[WritingEvidence]):
    """Read-only: the browser's record of how each sentence was written, with its flags."""

    list_display = [
        "pk",
        "worker",
        "field_name",
        "has_evidence",
        "flag_list",
        "keystrokes",
        "pasted_chars",
        "untrusted_chars",
        "interval_mean_ms",
        "interval_cv",
        "created_at",
    ]
    list_filter = ["flagged", "has_evidence", "field_name"]
    list_select_related = ["worker"]
    raw_id_fields = ["pair", "worker", "study_session"]
    search_fields = ["worker__external_id", "pair__pair_id"]

    @admin.display(description="flags")
    def flag_list(self, row: WritingEvidence) -> str:
        return ", ".join(row.flags) or "—"
