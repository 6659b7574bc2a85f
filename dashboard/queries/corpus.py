"""The corpus page: label distributions, sentence lengths (MultiNLI Figure 2), per-genre means, edit relations."""
import math

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Min
from django.db.models.expressions import RawSQL

from corpus import tallies
from corpus.gold import gold_from_votes
from corpus.models import NO_GOLD, THREE_WAY, LengthKind, Pair
from corpus.selectors import pairs_in

from .. import overlap
from ..figure_cache import cached, refreshable
from .common import word_count


def corpus_overview(dataset=None, split=None):
    return cached("corpus", dataset, split, lambda: _corpus_overview(dataset, split))


def length_histogram(queryset, field):
    """{words: how many rows} in one GROUP BY over the word-count expression."""
    return dict(
        queryset.annotate(words=word_count(field)).values_list("words").annotate(n=Count("id")).order_by()
    )


def histogram_summary(histogram):
    total = sum(histogram.values())
    if not total:
        return {"count": 0, "mean": None, "max": None}
    return {
        "count": total,
        "mean": sum(words * n for words, n in histogram.items()) / total,
        "max": max(histogram),
    }


def overlap_sample_size():
    return getattr(settings, "DASHBOARD_OVERLAP_SAMPLE", 20000)


def edit_relations(dataset=None, split=None):
    """Hypothesis–premise relations (dashboard.overlap) over about DASHBOARD_OVERLAP_SAMPLE pairs.

    Comparing words needs Python, so a large corpus is sampled systematically: the pairs whose
    id is in an arithmetic progression over the id range (looked up by primary key, no scan),
    its step chosen from the maintained pair counts so that about the sample size falls in
    scope; the page says how many pairs the shares rest on.
    """
    pairs = pairs_in(dataset, split)
    total = sum(n for *_, n in tallies.pair_counts(dataset, split, by=("split",)))
    everything = sum(n for *_, n in tallies.pair_counts(by=("split",))) or 1
    sample = max(1, overlap_sample_size())
    step = 1
    if total > sample:
        span = Pair.objects.aggregate(low=Min("id"), high=Max("id"))
        ids = span["high"] - span["low"] + 1
        # The scope holds about total/everything of the ids; take every step-th id of the range.
        step = max(1, math.ceil(ids * total / everything / sample))
        if connection.vendor == "postgresql":
            # A join with the series, not an IN list of ~20,000 parameters to parse and plan.
            series = RawSQL("SELECT generate_series(%s::bigint, %s::bigint, %s::bigint)", [span["low"], span["high"], step])
            pairs = pairs.filter(pk__in=series)
        else:
            pairs = pairs.filter(pk__in=range(span["low"], span["high"] + 1, step))
    counts = overlap.relation_counts(pairs.values_list("premise__text", "hypothesis").iterator(chunk_size=2000))
    return {**counts, "total": total, "step": step}


@refreshable("corpus")
def _corpus_overview(dataset, split):
    """No scan: every figure is summed from the maintained aggregates (corpus.tallies), premises
    by (genre, length), pairs by length and by (gold, author label); the relations are a sample.
    """
    labels = [label.value for label in THREE_WAY]
    premise_rows = tallies.length_counts(LengthKind.PREMISE, dataset, split, by=("genre__slug", "genre__name", "words"))
    premise_lengths, genres = {}, {}
    for slug, name, words, n in premise_rows:
        premise_lengths[words] = premise_lengths.get(words, 0) + n
        genre = genres.setdefault(slug, {"genre__slug": slug, "genre__name": name, "premises": 0, "words": 0})
        genre["premises"] += n
        genre["words"] += words * n
    per_genre = [
        {**genre, "mean_words": genre["words"] / genre["premises"]} for _, genre in sorted(genres.items())
    ]
    hypothesis_lengths = dict(tallies.length_counts(LengthKind.HYPOTHESIS, dataset, split))
    gold, author = dict.fromkeys(labels + [NO_GOLD], 0), dict.fromkeys(labels, 0)
    by = ("author_label", "entailment_votes", "neutral_votes", "contradiction_votes")
    for author_label, e, nu, c, n in tallies.pair_counts(dataset, split, by=by):
        gold_label = gold_from_votes(e, nu, c)
        gold[gold_label] = gold.get(gold_label, 0) + n
        author[author_label] = author.get(author_label, 0) + n
    return {
        "gold": list(gold.items()),
        "author": list(author.items()),
        "per_genre": per_genre,
        "premise_lengths": premise_lengths,
        "hypothesis_lengths": hypothesis_lengths,
        "premise_summary": histogram_summary(premise_lengths),
        "hypothesis_summary": histogram_summary(hypothesis_lengths),
        "relations": edit_relations(dataset, split),
    }
