"""Admin of the core's pairs, their labels, adjudications, provenance and grammaticality judgments
(researchers only), and the pair search.

Lists stay fast on half a million pairs: related rows come in the same query
(list_select_related), foreign keys use autocomplete instead of <select>s of every row,
big tables skip the full COUNT(*) (show_full_result_count=False), and filters on counters
offer fixed choices instead of a SELECT DISTINCT over the whole table. Pairs and labels are
read only where they would move counters: counters move only through `corpus.services`.
"""

import json
import math
from collections.abc import Sequence
from typing import Any

from django.contrib import admin
from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL
from django.http import HttpRequest
from django.utils.functional import cached_property
from django.utils.text import smart_split, unescape_string_literal

from .admin_base import ReadOnlyAdmin, ReadOnlyInline, short
from .models import (
    AUTHOR_POSITION,
    LABELS_PER_PAIR,
    NO_GOLD,
    Adjudication,
    GrammaticalityJudgment,
    Label,
    Pair,
    PairProvenance,
    Premise,
    Split,
    ValidationLabel,
)

PROVENANCE_COLUMNS = ("corpus", "corpus_sent_id", "corpus_license", "creation_approach", "type_of_inference", "source")


class FixedChoicesFilter(admin.SimpleListFilter):
    """A filter whose choices are known in advance, so Django never scans the table for them."""

    field: str  # the lookup the value filters on; each filter names its own
    options: Sequence[tuple[object, str]] = ()  # (value, label); not `choices`, which is SimpleListFilter's own method

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [(str(value), label) for value, label in self.options]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value is None:
            return queryset
        known = [str(option) for option, _ in self.options]
        if value not in known:
            # A hand-edited URL (?label_count=abc): a 400 that says so, not a database error.
            raise BadRequest(f"The {self.title} filter takes one of {', '.join(known)}, not {value!r}.")
        return queryset.filter(**{self.field: value})


class GoldLabelFilter(FixedChoicesFilter):
    title = "gold label"
    parameter_name = "gold_label"
    field = "gold_label"
    options = [(label.value, label.label) for label in Label] + [(NO_GOLD, "no gold label (-)")]


class LabelCountFilter(FixedChoicesFilter):
    title = "labels so far"
    parameter_name = "label_count"
    field = "label_count"
    options = [(n, f"{n} of {LABELS_PER_PAIR}") for n in range(0, LABELS_PER_PAIR + 1)]


class PairSplitFilter(FixedChoicesFilter):
    title = "split"
    parameter_name = "split"
    field = "premise__split"
    options = Split.choices


class PairInline(admin.TabularInline[Pair, Premise]):
    """The pairs written for a premise, read only: pairs change through writing and validation."""

    model = Pair
    fields = readonly_fields = (
        "pair_id",
        "hypothesis",
        "author_label",
        "author",
        "label_count",
        "gold_label",
        "needs_validation",
    )
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Premise | None = None) -> bool:
        return False


class ValidationLabelInline(ReadOnlyInline[ValidationLabel, Pair], admin.TabularInline[ValidationLabel, Pair]):
    """Every label of the pair, the author's first; read only because labels move the pair's counters."""

    model = ValidationLabel
    fields = ["position", "label", "ordinal", "worker", "seconds", "created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ValidationLabel]:
        return super().get_queryset(request).select_related("worker__user")


class AdjudicationInline(ReadOnlyInline[Adjudication, Pair], admin.TabularInline[Adjudication, Pair]):
    """Decisions on the pair's gold label (MPE §4.2), read only: they are made on the dashboard's MPE page."""

    model = Adjudication
    fields = ["label", "previous_gold", "source", "researcher", "reason", "note", "created_at"]


class PairProvenanceInline(ReadOnlyInline[PairProvenance, Pair], admin.StackedInline[PairProvenance, Pair]):
    """Where a recast or imported pair came from (DNC metadata); read only, written by the import."""

    model = PairProvenance
    fields = [*PROVENANCE_COLUMNS, "metadata_record"]


@admin.register(PairProvenance)
class PairProvenanceAdmin(admin.ModelAdmin[PairProvenance]):
    list_display = ["pair", *PROVENANCE_COLUMNS]
    list_filter = ["creation_approach", "type_of_inference", "corpus", "pair__dataset"]
    list_select_related = ["pair"]
    search_fields = ["pair__pair_id", "corpus_sent_id", "corpus"]
    readonly_fields = ["pair", *PROVENANCE_COLUMNS, "json_style", "data_record", "metadata_record"]
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(GrammaticalityJudgment)
class GrammaticalityJudgmentAdmin(admin.ModelAdmin[GrammaticalityJudgment]):
    list_display = ["pair", "judgment", "worker", "created_at"]
    list_filter = ["judgment", "pair__dataset"]
    list_select_related = ["pair", "worker__user"]
    raw_id_fields = ["pair", "worker"]
    show_full_result_count = False


# A search lists and pages through at most this many matches (the newest first); it never counts
# every match of a word that is in a third of the corpus.
SEARCH_COUNT_CAP = 2_000


def estimated_matches(like: str) -> list[int]:
    """The planner's estimate of the pairs whose hypothesis, and of the premises whose text, match
    `like` (its column statistics: planning only, no row read), and the pairs in the table."""
    estimates = []
    with connection.cursor() as cursor:
        for sql in (
            "SELECT 1 FROM collection_pair_search WHERE upper(hypothesis) LIKE upper(%s)",
            "SELECT 1 FROM collection_premise WHERE upper(text) LIKE upper(%s)",
        ):
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql, [like])
            plan = cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
            estimates.append(plan[0]["Plan"]["Plan Rows"])
        cursor.execute(
            "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'collection_pair_search'::regclass"
        )
        estimates.append(cursor.fetchone()[0])
    return estimates


def is_common_word(like: str) -> bool:
    """Whether matching a word pair by pair (newest first, the count stopping at SEARCH_COUNT_CAP)
    costs less than gathering every match from the trigram indexes. The trigram UNION costs a
    little more a match than a pair-by-pair test costs a pair (their ratio, 0.7, measured at 433k
    pairs: bench/RESULTS-docstrings.md), and the capped count reads CAP × pairs / matches pairs;
    so pair by pair wins above sqrt(0.7 × CAP × pairs) matches."""
    hypotheses, premises, pairs = estimated_matches(like)
    return hypotheses + 3 * premises >= math.sqrt(0.7 * SEARCH_COUNT_CAP * max(pairs, 1))


class CappedCountPaginator(Paginator[Pair]):
    """Counts at most SEARCH_COUNT_CAP rows: COUNT(*) over a LIMITed subquery, which stops early."""

    object_list: QuerySet[Pair]  # the admin pages a queryset, whose slice can count

    @cached_property
    def count(self) -> int:
        return self.object_list[:SEARCH_COUNT_CAP].count()


# The pairs' hypotheses and pairIDs are searched in `collection_pair_search`, where their trigram
# indexes are out of the way of counter moves (migration 0018_pair_search_table).
PAIR_SEARCH_SQL = """
    SELECT pair_pk FROM collection_pair_search WHERE upper(hypothesis) LIKE upper(%s)
    UNION SELECT pair_pk FROM collection_pair_search WHERE upper(pair_id) LIKE upper(%s)
    UNION SELECT id FROM collection_pair WHERE premise_id IN (
        SELECT id FROM collection_premise WHERE upper(text) LIKE upper(%s) OR upper(prompt_id) LIKE upper(%s))
"""


@admin.register(Pair)
class PairAdmin(admin.ModelAdmin[Pair]):
    list_display = [
        "pair_id",
        "short_hypothesis",
        "dataset",
        "genre",
        "split",
        "author_label",
        "label_count",
        "gold_label",
        "word_overlap",
        "needs_validation",
    ]
    list_filter = [
        "dataset",
        "premise__genre",
        PairSplitFilter,
        GoldLabelFilter,
        "author_label",
        "needs_validation",
        "stopped_early",
        LabelCountFilter,
    ]
    list_select_related = ["dataset", "premise__genre"]
    search_fields = ["pair_id", "hypothesis", "premise__prompt_id", "premise__text"]
    autocomplete_fields = ["premise", "author"]
    readonly_fields = [
        "premise_text",
        "author_label",
        "author",
        "created_at",
        "label_count",
        "entailment_votes",
        "neutral_votes",
        "contradiction_votes",
        "gold_label",
        "adjudicated_label",
        "word_overlap",
        "stopping_rule",
        "stopped_early",
    ]
    fields = [
        "dataset",
        "pair_id",
        "premise",
        "premise_text",
        "hypothesis",
        "parse",
        "binary_parse",
        "author_label",
        "author",
        "created_at",
        "needs_validation",
        "stopping_rule",
        "stopped_early",
        "label_count",
        "entailment_votes",
        "neutral_votes",
        "contradiction_votes",
        "gold_label",
        "adjudicated_label",
        "word_overlap",
    ]
    show_full_result_count = False
    list_per_page = 50
    inlines = [ValidationLabelInline, AdjudicationInline, PairProvenanceInline]
    # Marking pairs for validation is the top floor's action (dashboard/admin.py): validation's service.

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A pair is born with its author's label row and counters (writing task or import), never by hand.
        return False

    search_help_text = (
        f"Pairs whose hypothesis, premise, pairID or promptID hold every word; newest first, "
        f"at most {SEARCH_COUNT_CAP:,} listed."
    )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Pair], bool]:
        """A rare word is matched through the trigram indexes: a UNION of pair ids whose hypothesis or
        pairID, or whose premise's text or promptID, contain it. A common word ("dog", in a third of
        the pairs) would make that UNION hundreds of thousands of ids long: it is tested on each
        pair instead, newest first (the count stops at SEARCH_COUNT_CAP)."""
        for word in smart_split(search_term):
            word = unescape_string_literal(word) if word[:1] in ('"', "'") and word[-1:] == word[:1] else word
            if not word:
                continue
            like = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            if is_common_word(like):
                queryset = queryset.filter(
                    Q(hypothesis__icontains=word)
                    | Q(pair_id__icontains=word)
                    | Q(premise__text__icontains=word)
                    | Q(premise__prompt_id__icontains=word)
                )
            else:
                queryset = queryset.filter(pk__in=RawSQL(PAIR_SEARCH_SQL, [like] * 4))
        return queryset, False

    def get_paginator(
        self,
        request: HttpRequest,
        queryset: QuerySet[Any],
        per_page: int,
        orphans: int = 0,
        allow_empty_first_page: bool = True,
    ) -> Paginator[Any]:
        if request.GET.get("q"):
            return CappedCountPaginator(queryset, per_page, orphans, allow_empty_first_page)
        return super().get_paginator(request, queryset, per_page, orphans, allow_empty_first_page)

    def get_readonly_fields(self, request: HttpRequest, obj: Pair | None = None) -> list[str]:
        if obj is not None:
            return [*self.readonly_fields, "dataset", "premise"]
        return list(self.readonly_fields)

    @admin.display(description="hypothesis")
    def short_hypothesis(self, pair: Pair) -> str:
        return short(pair.hypothesis)

    @admin.display(description="genre", ordering="premise__genre__slug")
    def genre(self, pair: Pair) -> str:
        return pair.premise.genre.slug

    @admin.display(description="split", ordering="premise__split")
    def split(self, pair: Pair) -> str:
        return pair.premise.split

    @admin.display(description="premise text")
    def premise_text(self, pair: Pair) -> str:
        if pair.premise.sentences:  # a multi-premise item: its sentences in order, with their provenance
            return " | ".join(f"[{s.get('source', '')}] {s['text']}" for s in pair.premise.sentences)
        return pair.premise.text


class PositionFilter(admin.SimpleListFilter):
    title = "label of"
    parameter_name = "position"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [("author", "the author (position 1)"), ("validator", "a validator (positions 2–5)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "author":
            return queryset.filter(position=AUTHOR_POSITION)
        if self.value() == "validator":
            return queryset.filter(position__gt=AUTHOR_POSITION)
        return queryset


class PairGoldFilter(GoldLabelFilter):
    field = "pair__gold_label"


@admin.register(ValidationLabel)
class ValidationLabelAdmin(ReadOnlyAdmin[ValidationLabel]):
    list_display = ["pair_link", "position", "label", "gold_label", "worker", "seconds", "created_at"]
    list_filter = ["label", PositionFilter, PairGoldFilter, "pair__dataset", "excluded"]
    list_select_related = ["pair", "worker__user"]
    search_fields = ["pair__pair_id", "pair__premise__prompt_id", "worker__external_id", "worker__user__username"]
    show_full_result_count = False
    list_per_page = 50

    @admin.display(description="pair", ordering="pair__pair_id")
    def pair_link(self, label: ValidationLabel) -> str:
        return label.pair.pair_id

    @admin.display(description="pair's gold")
    def gold_label(self, label: ValidationLabel) -> str:
        return label.pair.gold_label


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyAdmin[Adjudication]):
    """Every gold-label decision, read only: a decision moves the pair's gold, so it goes through
    `corpus.adjudication.adjudicate` (the dashboard's MPE page), never an edit here."""

    list_display = ["pair_id_text", "label", "previous_gold", "source", "researcher", "reason", "created_at"]
    list_filter = ["source", "label", "pair__dataset"]
    list_select_related = ["pair", "researcher"]
    search_fields = ["pair__pair_id"]
    show_full_result_count = False

    @admin.display(description="pair", ordering="pair__pair_id")
    def pair_id_text(self, decision: Adjudication) -> str:
        return decision.pair.pair_id
