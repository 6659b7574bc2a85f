"""Agreement statistics (corpus.agreement.agreement_stats) as JSON."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation_site.api_strict import StrictQueryParamsMixin
from corpus.agreement import agreement_stats
from corpus.models import Dataset, Split


class StatsQuery(serializers.Serializer[Any]):
    dataset = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=Dataset.objects.all(),
        required=False,
        help_text="Dataset slug (default: all datasets; unknown: 404).",
    )
    split = serializers.ChoiceField(choices=Split.choices, required=False, help_text="Premise split (default: all).")


class AgreementStatsView(StrictQueryParamsMixin, APIView):
    extra_query_params = ("dataset", "split")

    @extend_schema(
        parameters=[StatsQuery],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        query = StatsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(agreement_stats(**query.validated_data))
