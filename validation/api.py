"""/api/validation/: MPE's per-premise labels (Lai et al. 2017 §5.2), read-only, for researchers.

In the style of modeling's /api/ (same rules from `annotation_site.api_strict`): cursor pagination by
id, filters checked (an unknown parameter or an empty value is a 400, an unknown dataset a 404),
researchers only (the project's default permission), token or session auth. Worker identities stay
out: a premise pair's judgments are listed in the order they came, without who gave them.
Mounted by the composition root (annotation_site/urls.py), as artifacts' API is.
"""

import django_filters
from django.db.models import Prefetch, QuerySet
from rest_framework import serializers, viewsets

from annotation_site.api_strict import KnownObjectFilter, StrictCursorPagination, StrictQueryParamsMixin
from corpus.models import Dataset, ItemKind, Split

from .models import PREMISE_LABELS_PER_PAIR, PremiseLabel, PremisePair


class PremisePairFilter(django_filters.FilterSet):
    dataset = KnownObjectFilter(
        field_name="item__dataset",
        to_field_name="slug",
        queryset=Dataset.objects.filter(item_kind=ItemKind.MULTI_PREMISE),
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
        Prefetch(
            "labels",
            queryset=PremiseLabel.objects.only("premise_pair_id", "label").order_by("created_at", "id"),
        )
    )
