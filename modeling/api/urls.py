"""/api/: snapshots, pairs, agreement statistics, the schema and its Swagger UI.

Token authentication: `python manage.py drf_create_token <username>`, then
`Authorization: Token <key>`; the browser session works too. Researchers only.
"""
from django.urls import path
from rest_framework.routers import DefaultRouter

from .pairs import PairViewSet
from .schema import ResearcherSchemaView, ResearcherSwaggerView
from .snapshots import SnapshotFileDownload, SnapshotViewSet
from .stats import AgreementStatsView
from .training_runs import TrainingRunViewSet

router = DefaultRouter()
router.register("snapshots", SnapshotViewSet, basename="snapshot")
router.register("pairs", PairViewSet, basename="pair")
# Training runs (modeling/api/training_runs.py, owned by the training work):
router.register("training-runs", TrainingRunViewSet, basename="training-run")

urlpatterns = [
    path("snapshots/<int:pk>/files/<str:name>", SnapshotFileDownload.as_view(), name="snapshot-file"),
    path("stats/", AgreementStatsView.as_view(), name="agreement-stats"),
    path("schema/", ResearcherSchemaView.as_view(), name="api-schema"),
    path("docs/", ResearcherSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    *router.urls,
]
