"""/api/artifacts/training-runs/<id>/tags/: a training run's accuracy per phenomenon tag.

The figures are the artifacts app's (`artifacts.selectors.run_tag_accuracy`, on the judgement floor
beneath modeling); the run is this app's, so the view lives here. Its path stays under
/api/artifacts/ with the other phenomenon figures (modeling/api/urls.py).
"""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from artifacts.selectors import run_tag_accuracy
from modeling.models import TrainingRun
from teams import access


class RunTagAccuracyView(APIView):
    @extend_schema(
        summary="A training run's accuracy per phenomenon tag (MultiNLI Table 6)",
        responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(TrainingRun.objects.select_related("snapshot"), pk=run_id)
        access.checked(run, request.user, via="snapshot__team", missing="No TrainingRun matches the given query.")
        figures = run_tag_accuracy(run)
        if figures is None:
            return Response({"detail": "This run holds no per-pair predictions of tagged pairs."}, status=404)
        return Response({"run": run.pk, "model": run.model, **figures})
