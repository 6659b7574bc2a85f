from typing import Any

from django.contrib import admin
from django.db.models import Q
from django.http import HttpRequest

from teams.access import team_ids

from .models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin[AuditEntry]):
    """Read-only for everyone, superusers included: the log is append-only."""

    list_display = ["at", "actor", "action", "subject", "reason"]
    list_filter = ["action", "subject_type"]
    search_fields = ["actor", "subject", "reason"]

    def get_queryset(self, request: HttpRequest) -> Any:
        # A researcher sees their teams' entries only (teams.access, the one place of scopes).
        teams = team_ids(request.user)
        rows = super().get_queryset(request)
        return rows if teams is None else rows.filter(Q(team_id__in=teams) | Q(team_id__isnull=True))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
