"""The node API (under /api/worker/, its old name, kept for nodes already deployed): what a GPU node
holding a node token may do (status, lease, heartbeat, checkpoint, finish, fail: urls.py), and
nothing else.

Snapshot files come from the researchers' download endpoint, which accepts a node token only for
the snapshot of a run it holds a live lease on (any other snapshot answers 404, as an unknown one).
A node is untrusted: every write goes through modeling.training.run_writes, the same functions the
database reporter calls, so only the attempt and lease that hold the run may write it, and only
with the node token that leased it; 409 tells a node that was taken over or reaped to stop. To
every other token a running or ended run answers 404, exactly as a run that does not exist.
Results and checkpoints are checked before a run finishes on them (docs/gpu-nodes.md).
"""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from base.api_strict import KnownFieldsSerializer, StrictQueryParamsMixin, validated
from base.parsers import CheckedJSONParser
from modeling.models import RunStatus, TrainingRun
from modeling.training.results_check import MAX_METRICS_BYTES, finish_body_limit, history_problems
from modeling.training.run_writes import (
    CheckpointRejected,
    FinishRefused,
    evaluation_rows,
    fail_run,
    finish_run,
    lease_run,
    record_progress,
    run_known_to_node,
    store_checkpoint,
)

from .node_auth import IsGpuNode, NodeTokenAuthentication, node_token_of

NOT_HOLDER = "Run {pk} is no longer running under this attempt (it was reaped, taken over or has ended); stop."
UNKNOWN_RUN = "No training run {pk}."
UNKNOWN = OpenApiResponse(description="No such run for this node token: it does not exist, or another node leased it.")
SHA256_CHARS = set("0123456789abcdef")


class NodeView(StrictQueryParamsMixin, APIView):
    authentication_classes = [NodeTokenAuthentication]
    permission_classes = [IsGpuNode]
    parser_classes = [CheckedJSONParser]  # what modeling.training.remote sends; the schema lists JSON only

    def known(self, request: Request, pk: int) -> bool:
        """Whether the run exists for this request's node token (run_writes.run_known_to_node)."""
        token = node_token_of(request)
        run = TrainingRun.objects.filter(pk=pk).only("status", "node_token").first()
        return run is not None and token is not None and run_known_to_node(run, token)

    def unknown(self, pk: int) -> Response:
        # One answer for a run that does not exist and a run another node holds: nothing tells
        # a node which runs other nodes train.
        return Response({"detail": UNKNOWN_RUN.format(pk=pk)}, status=status.HTTP_404_NOT_FOUND)

    def refused(self, request: Request, pk: int, detail: str | None = None) -> Response:
        """The answer to a call the service refused: 404 when the run is not this token's to know, else 409 (stop)."""
        if not self.known(request, pk):
            return self.unknown(pk)
        current = TrainingRun.objects.filter(pk=pk).values_list("status", flat=True).first()
        return Response(
            {"detail": detail or NOT_HOLDER.format(pk=pk), "status": current}, status=status.HTTP_409_CONFLICT
        )


class HeldSerializer(KnownFieldsSerializer):
    attempt = serializers.CharField(max_length=64)
    # The lease id; the key keeps the name it had before leases were called leases.
    claim = serializers.CharField(max_length=64, help_text="The lease id the lease answer gave.")


class LeaseSerializer(KnownFieldsSerializer):
    # Blank passes the serializer so that an old node sending "" gets the lease answer's 409, not a 400.
    attempt = serializers.CharField(
        max_length=64, allow_blank=True, help_text="The run's attempt: the Celery task id of the message."
    )
    hostname = serializers.CharField(max_length=200)


class ProgressSerializer(HeldSerializer):
    epoch = serializers.IntegerField(min_value=0)
    total_epochs = serializers.IntegerField(min_value=0)
    step = serializers.IntegerField(min_value=0)
    total_steps = serializers.IntegerField(min_value=0)
    loss = serializers.FloatField(allow_null=True, min_value=0.0)
    dev_accuracy = serializers.FloatField(allow_null=True, min_value=0.0, max_value=1.0)
    history = serializers.ListField(child=serializers.DictField(), max_length=1_000)
    device = serializers.CharField(max_length=100, allow_blank=True)

    def validate_history(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        problems = history_problems(history)
        if problems:
            raise serializers.ValidationError("; ".join(problems[:10]))
        return history


class FinishSerializer(HeldSerializer):
    # Checked in full by the service (results_check), against the run's snapshot.
    results = serializers.DictField()


class FailSerializer(HeldSerializer):
    error = serializers.CharField(max_length=5000, trim_whitespace=False)


class NodeRunStatus(NodeView):
    @extend_schema(
        responses={
            200: inline_serializer(
                "NodeRunStatus", {"id": serializers.IntegerField(), "status": serializers.CharField()}
            ),
            404: UNKNOWN,
        }
    )
    def get(self, request: Request, pk: int) -> Response:
        if not self.known(request, pk):
            return self.unknown(pk)
        return Response({"id": pk, "status": TrainingRun.objects.filter(pk=pk).values_list("status", flat=True)[0]})


class NodeRunLease(NodeView):
    @extend_schema(
        request=LeaseSerializer,
        responses={
            200: OpenApiTypes.OBJECT,
            404: UNKNOWN,
            409: OpenApiResponse(
                description=(
                    "Nothing to do for this attempt: the attempt is not the run's, the run has ended, "
                    "or it ran out of restarts."
                )
            ),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        if not self.known(request, pk):
            return self.unknown(pk)
        data = validated(LeaseSerializer, request.data)
        run = lease_run(pk, data["hostname"], data["attempt"] or None, node_token=node_token_of(request))
        if run is None:
            return self.refused(request, pk, f"Nothing to do for run {pk} under this attempt.")
        return Response(
            {
                "id": run.pk,
                "attempt": run.celery_task_id,
                "claim": run.lease_id,
                "model": run.model,
                "config": run.config,
                "snapshot": run.snapshot_id,
                "snapshot_hash": run.snapshot_hash,
                "restarts": run.results.get("restarts", 0),
            }
        )


class NodeRunProgress(NodeView):
    @extend_schema(
        request=ProgressSerializer,
        responses={200: OpenApiTypes.OBJECT, 404: UNKNOWN, 409: OpenApiResponse(description=NOT_HOLDER)},
    )
    def post(self, request: Request, pk: int) -> Response:
        if not self.known(request, pk):
            return self.unknown(pk)
        data = validated(ProgressSerializer, request.data)
        attempt, lease = data.pop("attempt"), data.pop("claim")
        if not record_progress(pk, attempt, lease, data, node_token=node_token_of(request)):
            return self.refused(request, pk)
        return Response({"id": pk, "status": RunStatus.RUNNING})


class NodeRunCheckpoint(NodeView):
    @extend_schema(
        request={"application/octet-stream": OpenApiTypes.BINARY},
        responses={
            201: OpenApiTypes.OBJECT,
            400: OpenApiResponse(
                description="Missing headers, a damaged upload, or not a safetensors checkpoint that loads."
            ),
            404: UNKNOWN,
            409: OpenApiResponse(description=NOT_HOLDER),
        },
    )
    def put(self, request: Request, pk: int) -> Response:
        if not self.known(request, pk):  # before a byte of the body is read
            return self.unknown(pk)
        attempt, lease = request.headers.get("X-Attempt", ""), request.headers.get("X-Claim", "")
        sha256 = request.headers.get("X-Content-SHA256", "").lower()
        if not attempt or not lease or len(sha256) != 64 or not set(sha256) <= SHA256_CHARS:
            return Response(
                {"detail": "Send X-Attempt, X-Claim and X-Content-SHA256 (64 hex digits) with the checkpoint."},
                status=status.HTTP_400_BAD_REQUEST,
            )
        try:
            # The raw body, streamed: a checkpoint can be hundreds of megabytes.
            stored = store_checkpoint(
                pk, attempt, lease, request._request, sha256=sha256, node_token=node_token_of(request)
            )
        except CheckpointRejected as rejected:
            return Response({"detail": str(rejected)}, status=status.HTTP_400_BAD_REQUEST)
        if not stored:
            return self.refused(request, pk)
        run = TrainingRun.objects.get(pk=pk)
        return Response(
            {"id": pk, "bytes": run.checkpoint_bytes, "sha256": run.checkpoint_sha256}, status=status.HTTP_201_CREATED
        )


class NodeRunFinish(NodeView):
    @extend_schema(
        request=FinishSerializer,
        responses={
            200: OpenApiTypes.OBJECT,
            400: OpenApiResponse(
                description="No checkpoint that passed the check was uploaded, or the results hold unknown "
                "metrics, figures out of range or predictions that are not the snapshot's pairs."
            ),
            404: UNKNOWN,
            409: OpenApiResponse(description=NOT_HOLDER),
            413: OpenApiResponse(description="The results are larger than a run's metrics and predictions take."),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        if not self.known(request, pk):
            return self.unknown(pk)
        too_large = self.oversized(request, pk)  # before a byte of the body is parsed
        if too_large is not None:
            return too_large
        data = validated(FinishSerializer, request.data)
        try:
            finished = finish_run(
                pk, data["attempt"], data["claim"], data["results"], node_token=node_token_of(request)
            )
        except FinishRefused as refused:
            return Response({"detail": str(refused)}, status=status.HTTP_400_BAD_REQUEST)
        if not finished:
            return self.refused(request, pk)
        return Response({"id": pk, "status": RunStatus.DONE})

    def oversized(self, request: Request, pk: int) -> Response | None:
        """413 for a body larger than the run's metrics and its snapshot's predictions can take."""
        snapshot_id = TrainingRun.objects.filter(pk=pk).values_list("snapshot_id", flat=True).first()
        limit = finish_body_limit(sum((evaluation_rows(snapshot_id) or {}).values()) if snapshot_id else 0)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = limit + 1
        if length <= limit:
            return None
        return Response(
            {
                "detail": f"The results take {length} bytes; run {pk}'s metrics and predictions take at most {limit}. "
                f"Send the metrics the trainer computes (at most {MAX_METRICS_BYTES} bytes) and one prediction per pair."
            },
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )


class NodeRunFail(NodeView):
    @extend_schema(
        request=FailSerializer,
        responses={200: OpenApiTypes.OBJECT, 404: UNKNOWN, 409: OpenApiResponse(description=NOT_HOLDER)},
    )
    def post(self, request: Request, pk: int) -> Response:
        if not self.known(request, pk):
            return self.unknown(pk)
        data = validated(FailSerializer, request.data)
        if not fail_run(pk, data["attempt"], data["claim"], data["error"], node_token=node_token_of(request)):
            return self.refused(request, pk)
        return Response({"id": pk, "status": RunStatus.FAILED})
