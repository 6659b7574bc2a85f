"""Agreement statistics (corpus.agreement.agreement_stats) as JSON."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation_site.api_strict import StrictQueryParamsMixin, validated
from artifacts.api import ScopeQuery
from corpus.agreement import agreement_stats


class AgreementStatsView(StrictQueryParamsMixin, APIView):
    extra_query_params = ("dataset", "split")

    @extend_schema(
        parameters=[ScopeQuery],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        return Response(agreement_stats(**validated(ScopeQuery, request.query_params)))
