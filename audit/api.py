"""/api/audit/: the audit log of the user's teams, filtered as on the dashboard, newest first.
Researchers only, and only their exporting roles' teams (teams.access.EXPORT): the log is an
export of who decided what."""

from typing import Any

from django.db.models import QuerySet
from rest_framework import serializers, viewsets

from base.api_strict import StrictCursorPagination, StrictQueryParamsMixin
from teams import access

from . import selectors
from .models import AuditEntry


class AuditEntrySerializer(serializers.ModelSerializer[AuditEntry]):
    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "at",
            "team_id",
            "actor",
            "action",
            "subject_type",
            "subject_id",
            "subject",
            "before",
            "after",
            "reason",
            "dataset_slugs",
        ]


class NewestFirst(StrictCursorPagination):
    ordering = "-id"


class AuditEntryViewSet(StrictQueryParamsMixin, viewsets.ReadOnlyModelViewSet[AuditEntry]):
    serializer_class = AuditEntrySerializer
    pagination_class = NewestFirst
    extra_query_params = ("action", "actor", "subject_type", "dataset")

    def get_queryset(self) -> QuerySet[AuditEntry]:
        params: Any = self.request.query_params
        return selectors.entries(
            access.team_ids(self.request.user, access.EXPORT),
            action=params.get("action", ""),
            actor=params.get("actor", ""),
            subject_type=params.get("subject_type", ""),
            dataset=params.get("dataset", ""),
        )
