from django.contrib import admin

from corpus.admin_base import ImportRunAdmin

from .models import CorpusImport


@admin.register(CorpusImport)
class CorpusImportAdmin(ImportRunAdmin[CorpusImport]):
    list_display = (
        "source",
        "dataset",
        "split",
        "status",
        "percent_read",
        "pairs_created",
        "already_present",
        "malformed_count",
        "started_at",
        "finished_at",
    )
    list_filter = ("status", "split", "dataset")
    list_select_related = ("dataset",)
