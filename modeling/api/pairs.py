"""Pairs, read-only, cursor-paginated by id, filtered by dataset, genre, split and labels."""

import django_filters
from django import forms
from django.db.models import Prefetch, Q, QuerySet
from rest_framework import serializers, viewsets

from base.api_strict import KnownObjectFilter, StrictCursorPagination, StrictQueryParamsMixin
from corpus.models import (
    LABELS_PER_PAIR,
    NO_GOLD,
    Dataset,
    Genre,
    Label,
    Pair,
    Split,
    ValidationLabel,
)
from corpus.selectors import in_gold
from teams import access


class IntegerFilter(django_filters.NumberFilter):
    field_class = forms.IntegerField


class PairFilter(django_filters.FilterSet):
    dataset = KnownObjectFilter(
        field_name="dataset",
        to_field_name="slug",
        # Another team's slug is refused as an unknown one (404), never an empty page that says it exists.
        queryset=lambda request: access.scoped(Dataset.objects.all(), request.user if request else None),
        help_text="Dataset slug.",
    )
    genre = KnownObjectFilter(
        field_name="premise__genre", to_field_name="slug", queryset=Genre.objects.all(), help_text="Genre slug."
    )
    split = django_filters.ChoiceFilter(field_name="premise__split", choices=Split.choices)
    gold_label = django_filters.ChoiceFilter(choices=[*Label.choices, (NO_GOLD, "no gold label")])
    validated = django_filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="filter_validated",
        help_text=f"true: all {LABELS_PER_PAIR} labels are in; false: not yet.",
    )
    min_labels = IntegerFilter(
        field_name="label_count",
        lookup_expr="gte",
        min_value=0,
        max_value=LABELS_PER_PAIR,
        help_text="At least this many labels (the author's counts as one).",
    )

    class Meta:
        model = Pair
        fields = ["dataset", "genre", "split", "gold_label", "validated", "min_labels"]

    def filter_validated(self, queryset: QuerySet[Pair], name: str, value: str) -> QuerySet[Pair]:
        complete = Q(label_count__gte=LABELS_PER_PAIR)
        return queryset.filter(complete) if value == "true" else queryset.exclude(complete)


class PairSerializer(serializers.ModelSerializer[Pair]):
    pairID = serializers.CharField(source="pair_id")
    promptID = serializers.CharField(source="premise.prompt_id")
    dataset = serializers.CharField(source="dataset.slug")
    genre = serializers.CharField(source="premise.genre.slug")
    split = serializers.CharField(source="premise.split")
    sentence1 = serializers.CharField(source="premise.text")
    sentence2 = serializers.CharField(source="hypothesis")
    annotator_labels = serializers.SerializerMethodField(
        help_text="The author's label first, then validators' in order (excluded workers left out)."
    )

    class Meta:
        model = Pair
        fields = [
            "id",
            "pairID",
            "promptID",
            "dataset",
            "genre",
            "split",
            "sentence1",
            "sentence2",
            "author_label",
            "annotator_labels",
            "label_count",
            "entailment_votes",
            "neutral_votes",
            "contradiction_votes",
            "gold_label",
            "needs_validation",
            "created_at",
        ]
        read_only_fields = fields

    def get_annotator_labels(self, pair: Pair) -> list[str]:
        return [label.label for label in pair.kept_labels]  # type: ignore[attr-defined]  # the view's Prefetch to_attr


class PairViewSet(StrictQueryParamsMixin, viewsets.ReadOnlyModelViewSet[Pair]):
    serializer_class = PairSerializer
    filterset_class = PairFilter
    pagination_class = StrictCursorPagination
    # Worker identities stay out of the API: only labels and counters are shown.
    queryset = Pair.objects.select_related("dataset", "premise__genre").prefetch_related(
        Prefetch(
            "labels",
            # The labels gold counts: counted, the earliest five (a healed pair's replacement included).
            queryset=ValidationLabel.objects.filter(in_gold())
            .only("pair_id", "position", "label")
            .order_by("position"),
            to_attr="kept_labels",
        )
    )

    def get_queryset(self) -> QuerySet[Pair]:
        # The data of the user's teams where their role may export it (teams.access).
        return access.scoped(super().get_queryset(), self.request.user, access.EXPORT, via="dataset__team")
