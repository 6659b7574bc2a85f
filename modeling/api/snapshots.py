"""Snapshots: list, start an export (202), read one, download its files."""

import mimetypes
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import django_filters
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from base.api_strict import (
    KnownFieldsSerializer,
    NewestFirstCursorPagination,
    StrictQueryParamsMixin,
    validated,
)
from base.long_tasks import JobStatus
from base.parsers import CheckedJSONParser
from base.permissions import CREATE_SNAPSHOTS, researcher_with
from corpus.models import LABELS_PER_PAIR, Split
from modeling import refusals
from modeling.models import NodeToken, Snapshot, SnapshotFile
from modeling.snapshots.files import missing_message, open_snapshot_file
from modeling.snapshots.format import MANIFEST_NAME
from modeling.snapshots.services import (
    UNVALIDATED_GOLD_CHOICES,
    create_snapshot,
    start_export,
)
from modeling.training.selectors import node_may_read_snapshot
from teams import access

from .node_auth import IsResearcherOrGpuNode, NodeTokenAuthentication

CONTENT_TYPES = {".jsonl": "application/x-ndjson", ".tsv": "text/tab-separated-values", ".json": "application/json"}

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from rest_framework.permissions import _SupportsHasPermission  # what DRF's stubs say get_permissions gives


class SnapshotFileSerializer(serializers.ModelSerializer[SnapshotFile]):
    url = serializers.SerializerMethodField()

    class Meta:
        model = SnapshotFile
        fields = ["name", "split", "rows", "bytes", "sha256", "url"]

    def get_url(self, obj: SnapshotFile) -> str:
        request: Request | None = self.context.get("request")
        path = f"/api/snapshots/{obj.snapshot_id}/files/{obj.name}"
        return request.build_absolute_uri(path) if request else path


class SnapshotSerializer(serializers.ModelSerializer[Snapshot]):
    created_by: "serializers.SlugRelatedField[User]" = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    files = SnapshotFileSerializer(many=True, read_only=True)

    class Meta:
        model = Snapshot
        fields = [
            "id",
            "status",
            "progress",
            "error",
            "datasets",
            "filters",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            "restarts",
            "content_hash",
            "row_count",
            "files",
        ]
        read_only_fields = fields


class SnapshotRequestSerializer(KnownFieldsSerializer):
    """What to export; the service checks the slugs and filters and names what is wrong."""

    datasets = serializers.ListField(child=serializers.CharField(max_length=50), required=False, default=list)
    filters = serializers.DictField(
        required=False,
        default=dict,
        help_text="Optional: genres (list), splits (train/dev/test), gold_only (bool), min_labels (0-5), "
        "unvalidated_gold ('author', '-' or 'author-all'), full_agreement, drop_ungrammatical, drop_test_fours, aggregation_run (a run id), "
        "label_rows (add labels.jsonl: one row per label, annotators pseudonymous), "
        "typing_flags (the author's typing flags in labels.jsonl; turns on label_rows).",
    )


class SnapshotFiltersSchema(serializers.Serializer[Any]):
    """The schema of `filters` (documentation: normalize_request checks the request itself, strictly typed)."""

    genres = serializers.ListField(
        child=serializers.CharField(min_length=1, max_length=50),
        required=False,
        help_text="Genre slugs (an unknown one answers 404).",
    )
    splits = serializers.ListField(child=serializers.ChoiceField(choices=Split.choices), required=False)
    gold_only = serializers.BooleanField(required=False)
    min_labels = serializers.IntegerField(min_value=0, max_value=LABELS_PER_PAIR, required=False)
    unvalidated_gold = serializers.ChoiceField(choices=[(c, c) for c in UNVALIDATED_GOLD_CHOICES], required=False)
    full_agreement = serializers.BooleanField(
        required=False, help_text="DNC's test-set rule: only pairs whose labels all agree."
    )
    drop_ungrammatical = serializers.BooleanField(
        required=False, help_text="Leave out pairs whose hypothesis most grammaticality judges marked 'major issues'."
    )
    drop_test_fours = serializers.BooleanField(
        required=False,
        help_text="DNC's test-set rule for ordinal data: leave out of the test split the not-entailed pairs rated 4.",
    )
    label_rows = serializers.BooleanField(
        required=False,
        help_text="Add labels.jsonl: one row per label with a pseudonymous annotator id, seconds, exclusion, "
        "catch-trial and flag marks.",
    )
    typing_flags = serializers.BooleanField(
        required=False,
        help_text="A typing_flags column in labels.jsonl (turns on label_rows): the typing flags of the author's hypothesis "
        "(e.g. pasted; [] when none or no record).",
    )
    aggregation_run = serializers.IntegerField(
        min_value=1,
        required=False,
        help_text="Add this finished aggregation run's label and posterior to every row (an unknown run answers 404).",
    )


class SnapshotRequestSchema(serializers.Serializer[Any]):
    datasets = serializers.ListField(
        child=serializers.CharField(min_length=1, max_length=50),
        required=False,
        help_text="Dataset slugs (all when left out; an unknown one answers 404).",
    )
    filters = SnapshotFiltersSchema(required=False)


class SnapshotFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=JobStatus.choices)

    class Meta:
        model = Snapshot
        fields = ["status"]


class SnapshotViewSet(
    StrictQueryParamsMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet[Snapshot],
):
    queryset = Snapshot.objects.select_related("created_by").prefetch_related("files")
    serializer_class = SnapshotSerializer
    pagination_class = NewestFirstCursorPagination
    filterset_class = SnapshotFilter
    parser_classes = [CheckedJSONParser]  # `filters` is an object: JSON only (the schema says so)

    def get_queryset(self) -> QuerySet[Snapshot]:
        # A snapshot's files are its team's data: the team's exporting roles only (teams.access).
        return access.scoped(super().get_queryset(), self.request.user, access.EXPORT)

    def get_permissions(self) -> Sequence["_SupportsHasPermission"]:
        # Reading is for any researcher; starting one needs its own permission.
        if self.action == "create":
            return [researcher_with(CREATE_SNAPSHOTS)()]
        return super().get_permissions()

    @extend_schema(request=SnapshotRequestSchema, responses={202: SnapshotSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incoming = validated(SnapshotRequestSerializer, request.data)
        try:
            snapshot = create_snapshot(request.user, **incoming)
        except DjangoValidationError as exc:
            if refusals.codes(exc) == {refusals.NOT_FOUND}:  # well formed, but names what is not there
                raise NotFound("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
            raise ValidationError(exc.message_dict) from exc
        data = SnapshotSerializer(snapshot, context=self.get_serializer_context()).data
        start_export(snapshot)
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": f"/api/snapshots/{snapshot.pk}/"})


class SnapshotFileDownload(StrictQueryParamsMixin, APIView):
    """One file of a done snapshot (or its manifest.json), streamed; researchers and GPU nodes (node token).

    `Range: bytes=N-` answers 206 with the rest of the file, so a node resumes an interrupted download.
    """

    # api_settings imports the classes the setting names; the stubs type it as the names.
    authentication_classes = [*api_settings.DEFAULT_AUTHENTICATION_CLASSES, NodeTokenAuthentication]  # type: ignore[list-item]
    permission_classes = [IsResearcherOrGpuNode]

    @extend_schema(
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            (206, "application/octet-stream"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="No such snapshot or file."),
            409: OpenApiResponse(description="The snapshot is not done yet."),
            416: OpenApiResponse(description="The range starts beyond the file's end."),
        }
    )
    def get(self, request: Request, pk: int, name: str) -> Response | FileResponse:
        snapshot = get_object_or_404(Snapshot, pk=pk)
        if isinstance(request.auth, NodeToken):
            # A node reads the snapshot of a run it holds a live lease on, and nothing else: any
            # other snapshot answers as one that does not exist (a node token is no team's member).
            if not node_may_read_snapshot(request.auth, snapshot.pk):
                raise NotFound("No Snapshot matches the given query.")
        else:
            access.checked(snapshot, request.user, access.EXPORT, missing="No Snapshot matches the given query.")
        if snapshot.status != JobStatus.DONE:
            return Response(
                {
                    "detail": f"Snapshot {snapshot.pk} is {snapshot.status}; its files can be downloaded once it is done."
                },
                status=status.HTTP_409_CONFLICT,
            )
        record = snapshot.files.filter(name=name).first()
        if record is None and name != MANIFEST_NAME:
            raise NotFound(f"Snapshot {snapshot.pk} has no file '{name}'.")
        handle = open_snapshot_file(snapshot, name)
        if handle is None:
            raise NotFound(f"File '{name}': {missing_message(snapshot)}.")
        start, size = requested_start(request), handle.size
        if start is not None and start >= size > 0:
            handle.close()
            response: Response | FileResponse = Response(
                {"detail": f"Range starts at {start}; '{name}' has {size} bytes."},
                status=status.HTTP_416_REQUESTED_RANGE_NOT_SATISFIABLE,
            )
            response["Content-Range"] = f"bytes */{size}"
            return response
        if start:
            handle.seek(start)
        response = FileResponse(
            handle,
            as_attachment=True,
            filename=name,
            content_type=CONTENT_TYPES.get(Path(name).suffix)
            or mimetypes.guess_type(name)[0]
            or "application/octet-stream",
        )
        response["Accept-Ranges"] = "bytes"
        if start:
            response.status_code = status.HTTP_206_PARTIAL_CONTENT
            response["Content-Range"] = f"bytes {start}-{size - 1}/{size}"
            response["Content-Length"] = str(size - start)
        if record is not None:
            response["ETag"] = f'"{record.sha256}"'
            response["X-Content-SHA256"] = record.sha256
        return response


def requested_start(request: Request) -> int | None:
    """N of a `Range: bytes=N-` header; None without one (other range forms are answered whole)."""
    match = re.fullmatch(r"\s*bytes=(\d+)-\s*", request.headers.get("Range", ""))
    return int(match.group(1)) if match else None
