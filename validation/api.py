"""/api/validation/: MPE's per-premise labels (Lai et al. 2017 §5.2), read-only, for researchers.

In the style of modeling's /api/ (same rules from `base.api_strict`), researchers only. Worker
identities stay out: a premise pair's judgments are listed in the order they came, without who gave
them. Mounted by the composition root (annotation_site/urls.py).
"""

import django_filters
from django.db.models import Prefetch, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, views, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from artifacts.api import ScopeQuery, scoped_query
from base.api_strict import KnownObjectFilter, StrictCursorPagination, StrictQueryParamsMixin
from corpus.models import Dataset, ItemKind, Split
from quality.agreement_tables import TABLES, agreement_tables
from teams import access

from .models import PREMISE_LABELS_PER_PAIR, PremiseLabel, PremisePair


class PremisePairFilter(django_filters.FilterSet):
    dataset = KnownObjectFilter(
        field_name="item__dataset",
        to_field_name="slug",
        queryset=lambda request: access.scoped(
            Dataset.objects.filter(item_kind=ItemKind.MULTI_PREMISE), request.user if request else None
        ),
        help_text="Multi-premise (MPE) dataset slug.",
    )
    split = django_filters.ChoiceFilter(field_name="item__premise__split", choices=Split.choices)
    complete = django_filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="filter_complete",
        help_text=f"true: all {PREMISE_LABELS_PER_PAIR} judgments are in; false: not yet.",
    )

    class Meta:
        model = PremisePair
        fields = ["dataset", "split", "complete"]

    def filter_complete(self, queryset: QuerySet[PremisePair], name: str, value: str) -> QuerySet[PremisePair]:
        complete = queryset.filter(label_count__gte=PREMISE_LABELS_PER_PAIR)
        return complete if value == "true" else queryset.exclude(label_count__gte=PREMISE_LABELS_PER_PAIR)


class PremisePairSerializer(serializers.ModelSerializer[PremisePair]):
    itemID = serializers.CharField(source="item.pair_id", help_text="The MPE item's pairID.")
    dataset = serializers.CharField(source="item.dataset.slug")
    split = serializers.CharField(source="item.premise.split")
    premise_index = serializers.IntegerField(source="index", help_text="0-based position of the caption.")
    premise = serializers.SerializerMethodField(help_text="The caption judged alone with the hypothesis.")
    premise_source = serializers.SerializerMethodField(help_text="Where the caption came from (image#n).")
    hypothesis = serializers.CharField(source="item.hypothesis")
    judgments = serializers.SerializerMethodField(help_text="The judgments in the order they came.")
    mpe_gold_label = serializers.CharField(source="item.gold_label", help_text="The item's own (MPE) gold label.")

    class Meta:
        model = PremisePair
        fields = [
            "id",
            "itemID",
            "dataset",
            "split",
            "premise_index",
            "premise",
            "premise_source",
            "hypothesis",
            "judgments",
            "label_count",
            "entailment_votes",
            "neutral_votes",
            "contradiction_votes",
            "consensus",
            "mpe_gold_label",
        ]
        read_only_fields = fields

    def _sentence(self, pair: PremisePair) -> dict[str, str]:
        sentences = pair.item.premise.sentences or [{"text": pair.item.premise.text, "source": ""}]
        return sentences[pair.index] if pair.index < len(sentences) else {"text": "", "source": ""}

    def get_premise(self, pair: PremisePair) -> str:
        return str(self._sentence(pair).get("text", ""))

    def get_premise_source(self, pair: PremisePair) -> str:
        return str(self._sentence(pair).get("source", ""))

    def get_judgments(self, pair: PremisePair) -> list[str]:
        return [label.label for label in pair.labels.all()]  # prefetched by the view, in order


class PremiseLabelViewSet(StrictQueryParamsMixin, viewsets.ReadOnlyModelViewSet[PremisePair]):
    """Premise-hypothesis pairs of MPE items marked for per-premise labels, with their judgments
    and consensus (MPE §5.2, Table 4's inputs)."""

    serializer_class = PremisePairSerializer
    filterset_class = PremisePairFilter
    pagination_class = StrictCursorPagination
    queryset = PremisePair.objects.select_related("item__dataset", "item__premise").prefetch_related(
        Prefetch("labels", queryset=PremiseLabel.objects.only("premise_pair_id", "label").order_by("created_at", "id"))
    )

    def get_queryset(self) -> QuerySet[PremisePair]:
        return access.scoped(super().get_queryset(), self.request.user, access.EXPORT, via="item__dataset__team")


class AgreementQuery(ScopeQuery):
    table = serializers.ChoiceField(
        choices=[(name, name) for name in TABLES], required=False, help_text="One table (default: all of them)."
    )


class AgreementView(StrictQueryParamsMixin, views.APIView):
    """The agreement tables of a scope (quality.agreement_tables). `dataset` (slug) and `split`
    narrow it, `table` names one table (default: all); an unknown value is a 400, an unknown dataset
    (another team's included) a 404."""

    extra_query_params = ("dataset", "split", "table")

    @extend_schema(parameters=[AgreementQuery], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        # The user's teams' datasets only: another team's slug is unknown (404), and with none
        # named the tables are of every dataset of their teams (teams.access.figure_teams).
        query = scoped_query(AgreementQuery, request)
        scope = query["scope"]
        tables = (query["table"],) if query.get("table") else TABLES
        return Response(
            {
                "dataset": scope.one.slug if scope.one is not None else None,
                "split": scope.split,
                "tables": agreement_tables(scope, tables),
            }
        )
