"""The corpus page: label distributions, sentence lengths (MultiNLI Figure 2), per-genre means, edit relations."""

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, QuerySet

from artifacts import selectors as artifact_selectors
from corpus import labels as scheme_labels
from corpus import overlap, tallies
from corpus.agreement import gold_counts
from corpus.models import THREE_WAY, LengthKind
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import datasets_outside_scheme, labels_scheme_of_scope
from corpus.tallies import spaced_word_count_sql

from ..figure_cache import cached, refreshable


def corpus_overview(scope: Scope = EVERYTHING) -> dict[str, Any]:
    return cached("corpus", scope, lambda: _corpus_overview(scope))


def labels_in_scheme(scope: Scope, overview: dict[str, Any]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(gold, author) [(label, n)] of `corpus_overview` in the dataset's own words: a two-way (or
    ordinal) dataset's entailed / not-entailed, without the labels it has none of."""
    scheme = scope.one.label_scheme if scope.one is not None else None
    return _in_scheme(scheme, overview["gold"]), _in_scheme(scheme, overview["author"])


def _in_scheme(scheme: str | None, counts: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    kept = (*scheme_labels.stored_categories(scheme), scheme_labels.NO_GOLD)
    return [(scheme_labels.to_scheme(scheme, label), n) for label, n in counts if label in kept]


def length_histogram(queryset: QuerySet[Any], field: str) -> dict[int, int]:
    """{words: how many rows} in one GROUP BY over the word-count expression."""
    return dict(
        queryset.annotate(words=spaced_word_count_sql(field)).values_list("words").annotate(n=Count("id")).order_by()
    )


def histogram_summary(histogram: dict[int, int]) -> dict[str, Any]:
    total = sum(histogram.values())
    if not total:
        return {"count": 0, "mean": None, "max": None}
    return {"count": total, "mean": sum(words * n for words, n in histogram.items()) / total, "max": max(histogram)}


def edit_relations(scope: Scope = EVERYTHING) -> dict[str, int]:
    """Hypothesis–premise relations (corpus.overlap) of every pair in scope, from the maintained
    tallies, so the page compares no words and reads no pair."""
    counts = dict.fromkeys(overlap.RELATION_BITS, 0)
    total = 0
    for mask, n in tallies.length_counts(LengthKind.RELATION, scope):
        total += n
        for name, bit in overlap.RELATION_BITS.items():
            if mask & bit:
                counts[name] += n
    return {"pairs": total, **counts, "total": total, "step": 1}


@refreshable("corpus")
def _corpus_overview(scope: Scope) -> dict[str, Any]:
    """No scan: every figure is summed from the maintained tallies; the gold labels are
    `corpus.agreement.gold_counts`, the one reader of them."""
    labels = [label.value for label in THREE_WAY]
    premise_rows = tallies.length_counts(LengthKind.PREMISE, scope, by=("genre__slug", "genre__name", "words"))
    premise_lengths: dict[int, int] = {}
    genres: dict[str, dict[str, Any]] = {}
    for slug, name, words, n in premise_rows:
        premise_lengths[words] = premise_lengths.get(words, 0) + n
        genre = genres.setdefault(slug, {"genre__slug": slug, "genre__name": name, "premises": 0, "words": 0})
        genre["premises"] += n
        genre["words"] += words * n
    per_genre = [{**genre, "mean_words": genre["words"] / genre["premises"]} for _, genre in sorted(genres.items())]
    hypothesis_lengths: dict[int, int] = dict(tallies.length_counts(LengthKind.HYPOTHESIS, scope))
    # The gold labels as every page shows them, researchers' decisions and retired pairs included.
    gold = gold_counts(scope)
    author = dict.fromkeys(labels, 0)
    # Every dataset: the three-way ones; a two-way dataset's "not-entailed" is stored as neutral.
    in_scheme = labels_scheme_of_scope(scope)
    for author_label, n in tallies.pair_counts(scope, by=("author_label",), scheme=in_scheme):
        author[author_label] = author.get(author_label, 0) + n
    return {
        "gold": list(gold.items()),
        "author": list(author.items()),
        "labels_left_out": datasets_outside_scheme(in_scheme, scope) if in_scheme else [],
        "per_genre": per_genre,
        "premise_lengths": premise_lengths,
        "hypothesis_lengths": hypothesis_lengths,
        "premise_summary": histogram_summary(premise_lengths),
        "hypothesis_summary": histogram_summary(hypothesis_lengths),
        "relations": edit_relations(scope),
    }


def phenomenon_tags(scope: Scope = EVERYTHING) -> dict[str, Any]:
    """The phenomenon-tag figures of the corpus page, through the figure cache."""
    return cached("tags", scope, lambda: _phenomenon_tags(scope))


@refreshable("tags")
def _phenomenon_tags(scope: Scope) -> dict[str, Any]:
    return artifact_selectors.tag_figures(scope)
