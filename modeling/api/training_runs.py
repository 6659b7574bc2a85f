"""Training runs: list (newest first), launch one (202, queued on the `gpu` queue), read one, download its checkpoint."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import django_filters
from django.core.files import File
from django.db.models import QuerySet
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from base.api_strict import (
    KnownFieldsSerializer,
    KnownObjectFilter,
    NewestFirstCursorPagination,
    StrictQueryParamsMixin,
    validated,
)
from base.parsers import CheckedJSONParser
from base.permissions import LAUNCH_TRAINING, researcher_with
from modeling import refusals
from modeling.models import ModelKind, RunStatus, Snapshot, TrainingRun
from modeling.training.config import BOUNDS
from modeling.training.selectors import accuracy_check
from modeling.training.services import CancelRefused, LaunchRefused, cancel_training_run, launch_training_run
from modeling.training.storage import checkpoint_storage
from teams import access

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from rest_framework.permissions import _SupportsHasPermission  # what DRF's stubs say get_permissions gives


class TrainingRunSerializer(serializers.ModelSerializer[TrainingRun]):
    created_by: "serializers.SlugRelatedField[User]" = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    progress = serializers.FloatField(read_only=True)
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)
    checkpoint_url = serializers.SerializerMethodField()
    accuracy_check = serializers.SerializerMethodField(
        help_text="dev_accuracy beside the platform's own measurement of the checkpoint: state (not_remeasured: "
        "a GPU node's claim; confirmed; mismatch; failed; platform: trained here, still going), reported, "
        "remeasured, split, at, error, tolerance, by_node."
    )

    def get_accuracy_check(self, run: TrainingRun) -> dict[str, Any]:
        return accuracy_check(run)

    def get_checkpoint_url(self, run: TrainingRun) -> str | None:
        if not run.checkpoint_name:
            return None
        request: Request | None = self.context.get("request")
        path = f"/api/training-runs/{run.pk}/checkpoint/"
        return request.build_absolute_uri(path) if request else path

    class Meta:
        model = TrainingRun
        fields = [
            "id",
            "snapshot",
            "snapshot_hash",
            "model",
            "config",
            "status",
            "error",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            "duration_seconds",
            "heartbeat_at",
            "node_hostname",
            "device",
            "celery_task_id",
            "epoch",
            "total_epochs",
            "step",
            "total_steps",
            "progress",
            "loss",
            "dev_accuracy",
            "accuracy_check",
            "history",
            "results",
            "checkpoint_path",
            "checkpoint_bytes",
            "checkpoint_sha256",
            "checkpoint_url",
        ]
        read_only_fields = fields


NUMERIC_KEYS = frozenset(BOUNDS) | {"dropout", "mix_fraction"}


class TrainingRunRequestSerializer(KnownFieldsSerializer):
    """The request's shape; what it asks for is checked by the service (modeling.training.services.validate_launch)."""

    snapshot = serializers.IntegerField(min_value=1, help_text="Id of a done snapshot.")
    model = serializers.ChoiceField(choices=ModelKind.choices)
    config = serializers.DictField(
        required=False,
        default=dict,
        help_text="Optional: embedding_dim, hidden_dim, dropout, lr, batch_size, epochs, patience, max_len, seed, "
        "train_genre, mix_dataset, mix_fraction, device, embeddings, max_minutes, ... (unknown keys are refused).",
    )

    def validate_config(self, config: dict[str, Any]) -> dict[str, Any]:
        # JSON numbers for numeric keys: "3" is text, refused here as the schema says (the
        # command line's key=value settings go through the same service without this check).
        text = sorted(key for key, value in config.items() if key in NUMERIC_KEYS and isinstance(value, str))
        if text:
            raise serializers.ValidationError(f"config {', '.join(text)}: a JSON number, not text.")
        return config


def _not_a_bad_request(refused: LaunchRefused) -> Response | None:
    """A refusal that is not about the request's form: what it names does not exist (404: a
    snapshot, a train_genre), or is not ready for it (409: the snapshot not done, its files
    missing, the genre left out or without training pairs). None: a 400 it is."""
    found = refusals.codes(refused)
    code: int
    if found == {refusals.NOT_FOUND}:
        code = status.HTTP_404_NOT_FOUND
    elif found == {refusals.NOT_READY}:
        code = status.HTTP_409_CONFLICT
    else:
        return None
    errors = refused.message_dict
    return Response({"detail": " ".join(m for ms in errors.values() for m in ms), **errors}, status=code)


class TrainingRunFilter(django_filters.FilterSet):
    snapshot = KnownObjectFilter(
        queryset=lambda request: access.scoped(Snapshot.objects.all(), request.user if request else None),
        help_text="Snapshot id.",
    )
    status = django_filters.ChoiceFilter(choices=RunStatus.choices)
    model = django_filters.ChoiceFilter(choices=ModelKind.choices)

    class Meta:
        model = TrainingRun
        fields = ["status", "model", "snapshot"]


class TrainingRunViewSet(
    StrictQueryParamsMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet[TrainingRun],
):
    queryset = TrainingRun.objects.select_related("created_by")
    serializer_class = TrainingRunSerializer
    pagination_class = NewestFirstCursorPagination
    filterset_class = TrainingRunFilter
    parser_classes = [CheckedJSONParser]  # `config` is an object: JSON only (the schema says so)

    def get_queryset(self) -> QuerySet[TrainingRun]:
        action = access.RESEARCH if self.action == "cancel" else access.VIEW
        return access.scoped(super().get_queryset(), self.request.user, action, via="snapshot__team")

    def get_permissions(self) -> Sequence["_SupportsHasPermission"]:
        # Reading is for any researcher; starting one needs its own permission.
        if self.action in ("create", "cancel"):
            return [researcher_with(LAUNCH_TRAINING)()]
        return super().get_permissions()

    @extend_schema(
        request=TrainingRunRequestSerializer,
        responses={
            202: TrainingRunSerializer,
            409: OpenApiResponse(
                description="The snapshot is not done, its files are missing from storage, or it lacks the genre."
            ),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incoming = validated(TrainingRunRequestSerializer, request.data)
        try:
            run = launch_training_run(user=request.user, **incoming)
        except LaunchRefused as refused:
            answer = _not_a_bad_request(refused)
            if answer is not None:
                return answer
            raise ValidationError(refused.message_dict) from refused
        data = TrainingRunSerializer(run, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": f"/api/training-runs/{run.pk}/"})

    @extend_schema(
        request=None,
        responses={
            200: TrainingRunSerializer,
            409: OpenApiResponse(description="The run has finished already: nothing to cancel."),
        },
    )
    @action(detail=True, methods=["post"], url_path="cancel")
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel a queued or running run: it ends as failed, "Cancelled by ..."; a running one stops at its next heartbeat."""
        run = self.get_object()
        try:
            run = cancel_training_run(run.pk, user=request.user)
        except CancelRefused as refused:
            return Response({"detail": refused.message}, status=status.HTTP_409_CONFLICT)
        return Response(TrainingRunSerializer(run, context=self.get_serializer_context()).data)

    @extend_schema(
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="The run has no checkpoint (yet)."),
        }
    )
    @action(detail=True, methods=["get"], url_path="checkpoint")
    def checkpoint(self, request: Request, pk: str | None = None) -> FileResponse:
        """The run's checkpoint (safetensors: weights, with model, config, vocabulary as JSON; docs/gpu-nodes.md loads it)."""
        run = self.get_object()
        if not run.checkpoint_name:
            raise NotFound(f"Run {run.pk} has no checkpoint; one is recorded when the run is done.")
        storage = checkpoint_storage()
        if not storage.exists(run.checkpoint_name):
            raise NotFound(f"The checkpoint of run {run.pk} is missing from the checkpoint storage.")
        handle = storage.open(run.checkpoint_name, "rb")
        response = FileResponse(
            handle if isinstance(handle, File) else File(handle),
            as_attachment=True,
            filename=f"run-{run.pk}-{run.model}.safetensors",
            content_type="application/octet-stream",
        )
        response["ETag"] = f'"{run.checkpoint_sha256}"'
        response["X-Content-SHA256"] = run.checkpoint_sha256
        return response
