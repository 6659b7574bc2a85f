"""/api/artifacts/: phenomenon tag figures and give-away words (a run's accuracy per tag is
modeling/api/run_tags.py: the run is the modeling app's).

Researchers only (the project's default permission, IsResearcher); token or session auth.
Bad query values get a 400 naming the field; nothing here loads spaCy.
"""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from base import api_strict
from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP
from corpus.models import Dataset, Genre, Split, Worker
from corpus.scope import Scope
from teams import access

from . import selectors


@extend_schema_field(OpenApiTypes.STR)  # a slug: the schema cannot read it from the queryset, made per request
class TeamDatasetField(serializers.SlugRelatedField[Dataset]):
    """A dataset slug among the requesting user's teams' datasets (teams.access): another team's
    answers 404 as an unknown one does."""

    def get_queryset(self) -> Any:
        request = self.context.get("request")
        return access.scoped(Dataset.objects.all(), request.user if request is not None else None)


class ScopeQuery(serializers.Serializer[Any]):
    dataset = TeamDatasetField(
        slug_field="slug",
        required=False,
        help_text="Dataset slug of one of your teams (default: every dataset of your teams; unknown: 404).",
    )
    split = serializers.ChoiceField(choices=Split.choices, required=False, help_text="Premise split (default: all).")


class GiveawayQuery(ScopeQuery):
    genre = serializers.SlugRelatedField(
        slug_field="slug", queryset=Genre.objects.all(), required=False, help_text="Genre slug."
    )
    worker = serializers.PrimaryKeyRelatedField(
        queryset=Worker.objects.all(), required=False, help_text="Worker id: that writer's hypotheses only."
    )
    min_count = serializers.IntegerField(
        min_value=1,
        default=DEFAULT_MIN_COUNT,
        help_text=f"Least hypotheses a word is in (default {DEFAULT_MIN_COUNT}).",
    )
    top = serializers.IntegerField(
        min_value=1, max_value=1000, default=DEFAULT_TOP, help_text=f"Words per label (default {DEFAULT_TOP})."
    )


# The query serializers document the parameters themselves (types, bounds), so the schema says
# what the view checks.
SCOPE_PARAMETERS = [ScopeQuery]


def validated(serializer_class: type[serializers.Serializer[Any]], request: Request) -> dict[str, Any]:
    api_strict.refuse_empty(request.query_params)  # these views take no flags
    return scoped_query(serializer_class, request)


def scoped_query(serializer_class: type[serializers.Serializer[Any]], request: Request) -> dict[str, Any]:
    """The query of a figure route (a `ScopeQuery`), its `dataset` one of the user's teams' (404
    otherwise) or, with none named, every dataset of their teams, as one `scope` with the split
    (`corpus.scope.Scope`)."""
    query = api_strict.validated(serializer_class, request.query_params, context={"request": request})
    dataset, split = query.pop("dataset", None), query.pop("split", None)
    return {**query, "scope": Scope.figures_of(dataset, access.figure_teams(request.user), split)}


class TagFiguresView(APIView):
    @extend_schema(
        summary="Phenomenon tags: share of pairs per tag, per genre, most frequent gold label (MultiNLI Table 7)",
        parameters=SCOPE_PARAMETERS,
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        return Response(selectors.tag_figures(**validated(ScopeQuery, request)))


class GiveawayWordsView(APIView):
    @extend_schema(
        summary="Give-away words: p(label | word) over hypotheses, per label (Poliak et al. 2018 §6)",
        parameters=[GiveawayQuery],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        return Response(selectors.giveaway_words_for(**validated(GiveawayQuery, request)))
