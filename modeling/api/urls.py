"""/api/: snapshots and their files, pairs, agreement statistics, training runs, the node API of
GPU nodes, the schema and its Swagger UI.

Token authentication: `python manage.py drf_create_token <username>`, then
`Authorization: Token <key>`; the browser session works too. Researchers only, except the
node API and the snapshot file download, which GPU nodes reach with a node token
(`python manage.py create_node_token <name>`, then `Authorization: Worker <key>`).
"""

from django.urls import path
from rest_framework.routers import DefaultRouter

from .node import (
    NodeRunCheckpoint,
    NodeRunFail,
    NodeRunFinish,
    NodeRunLease,
    NodeRunProgress,
    NodeRunStatus,
)
from .pairs import PairViewSet
from .run_tags import RunTagAccuracyView
from .schema import ResearcherSchemaView, ResearcherSwaggerView
from .snapshots import SnapshotFileDownload, SnapshotViewSet
from .stats import AgreementStatsView
from .training_runs import TrainingRunViewSet

router = DefaultRouter()
router.register("snapshots", SnapshotViewSet, basename="snapshot")
router.register("pairs", PairViewSet, basename="pair")
# Training runs: list, launch, read, and download a checkpoint (modeling/api/training_runs.py).
router.register("training-runs", TrainingRunViewSet, basename="training-run")

urlpatterns = [
    path("snapshots/<int:pk>/files/<str:name>", SnapshotFileDownload.as_view(), name="snapshot-file"),
    path("stats/", AgreementStatsView.as_view(), name="agreement-stats"),
    # Under /api/artifacts/ beside the other phenomenon figures; the run is this app's (run_tags.py).
    path("artifacts/training-runs/<int:run_id>/tags/", RunTagAccuracyView.as_view(), name="artifacts-run-tags"),
    # The node API (GPU nodes with a node token; modeling/api/node.py). Its paths, URL names and
    # JSON keys ("claim", X-Claim) keep the words they had before leases were called leases.
    path("worker/runs/<int:pk>/", NodeRunStatus.as_view(), name="worker-run"),
    path("worker/runs/<int:pk>/claim/", NodeRunLease.as_view(), name="worker-run-claim"),
    path("worker/runs/<int:pk>/progress/", NodeRunProgress.as_view(), name="worker-run-progress"),
    path("worker/runs/<int:pk>/checkpoint/", NodeRunCheckpoint.as_view(), name="worker-run-checkpoint"),
    path("worker/runs/<int:pk>/finish/", NodeRunFinish.as_view(), name="worker-run-finish"),
    path("worker/runs/<int:pk>/fail/", NodeRunFail.as_view(), name="worker-run-fail"),
    path("schema/", ResearcherSchemaView.as_view(), name="api-schema"),
    path("docs/", ResearcherSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    *router.urls,
]
