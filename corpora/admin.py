from django.contrib import admin

from .models import CorpusImport


@admin.register(CorpusImport)
class CorpusImportAdmin(admin.ModelAdmin):
    """Read-only: rows are written by `import_pairs` as it runs."""

    list_display = ("source", "dataset", "split", "status", "percent_read", "pairs_created", "already_present",
                    "malformed_count", "started_at", "finished_at")
    list_filter = ("status", "split", "dataset")
    list_select_related = ("dataset",)

    @admin.display(description="read")
    def percent_read(self, obj):
        return f"{100 * obj.progress:.0f}%"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
