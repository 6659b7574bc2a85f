"""Agreement statistics (corpus.agreement.agreement_stats) as JSON."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from artifacts.api import ScopeQuery, scoped_query
from base.api_strict import StrictQueryParamsMixin
from corpus.agreement import agreement_stats


class AgreementStatsView(StrictQueryParamsMixin, APIView):
    extra_query_params = ("dataset", "split")

    @extend_schema(
        parameters=[ScopeQuery],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        return Response(agreement_stats(**scoped_query(ScopeQuery, request)))
