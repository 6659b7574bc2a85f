"""Reads for snapshots: which pairs an export takes, with their labels, and what its manifest counts.

The export's lines are read by ONE statement (database_lines.export_lines_sql), one consistent
view even while validators keep labelling; `rows_for_export` is the reference reader the tests
compare the database's lines with.
"""

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from django.db.models import Case, Count, Exists, F, Max, Min, OuterRef, Q, QuerySet, Subquery, Value, When

from authorship.selectors import typing_evidence_counts
from corpus import labels as scheme_labels
from corpus.gold import gold_source_expression
from corpus.models import (
    GOLD_MAJORITY,
    LABELS_PER_PAIR,
    NO_GOLD,
    RETIRED_LABEL,
    Dataset,
    Genre,
    GoldSource,
    Grammaticality,
    GrammaticalityJudgment,
    Pair,
    Premise,
    Split,
    StoppingRule,
    ValidationLabel,
)
from corpus.selectors import in_gold, labels_that_count
from modeling.models import SnapshotExclusion
from quality.models import AggregatedLabel

PAGE_SIZE = 5000
# The aggregation run's method whose label and posterior the snapshot option adds (services.AGGREGATION_FIELDS).
AGGREGATION_METHOD = "dawid_skene"
LIKELY_RATING = 4  # "likely" on the ordinal scale: not-entailed, yet "arguably" entailed (DNC App. B.4)
AUTHOR_GOLD = "author"  # export_counts: an unvalidated pair's author label, by the unvalidated_gold filter

# The order of these tuples is what `rows_for_export` yields; the writer relies on it.
PAIR_COLUMNS = (
    "id",
    "dataset__slug",
    "pair_id",
    "hypothesis",
    "parse",
    "binary_parse",
    "author_label",
    "needs_validation",
    "label_count",
    "gold_label",
    "premise__prompt_id",
    "premise__text",
    "premise__parse",
    "premise__binary_parse",
    "premise__split",
    "premise__genre__slug",
    "premise__genre__is_training",
)
LABEL_COLUMNS = ("labels__position", "labels__label", "label_counts", "labels__ordinal")
# A snapshot's filters as stored (a JSON object: see services.normalize_request for its keys).
Filters = Mapping[str, Any]
# One row of PAIR_COLUMNS, as values_list gives it.
PairValues = tuple[Any, ...]
# A counted label of a pair: (position, label, ordinal rating or None).
CountedLabel = tuple[int, str, int | None]


def label_schemes(datasets: Sequence[str] | None = None) -> list[str]:
    """The label schemes of the datasets a snapshot takes (all datasets with pairs when none are named)."""
    if datasets:
        found = Dataset.objects.filter(slug__in=datasets)
    else:
        # EXISTS per dataset (an index probe on the pair's dataset), not a join over every pair.
        found = Dataset.objects.filter(Exists(Pair.objects.filter(dataset=OuterRef("pk"))))
    return sorted(set(found.values_list("label_scheme", flat=True)))


def full_agreement(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    """DNC's test-set rule (Appendix B.4): at least GOLD_MAJORITY labels, all the same label; on
    ordinal datasets all the same rating too. The labels the counters count (`in_gold`): excluded
    workers' are not."""
    same_label = (
        Q(entailment_votes=F("label_count"))
        | Q(neutral_votes=F("label_count"))
        | Q(contradiction_votes=F("label_count"))
    )
    pairs = pairs.filter(same_label, label_count__gte=GOLD_MAJORITY)
    split_ratings = (
        ValidationLabel.objects.filter(ordinal__isnull=False)
        .filter(in_gold())
        .values("pair_id")
        .annotate(low=Min("ordinal"), high=Max("ordinal"))
        .filter(low__lt=F("high"))
        .values("pair_id")
    )
    return pairs.exclude(pk__in=split_ratings)


def drop_ungrammatical(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    """Leave out pairs whose hypothesis more than half of its grammaticality judges found to have
    major issues (DNC Appendix B.4 removed the hypotheses with major grammatical issues)."""
    noisy = (
        GrammaticalityJudgment.objects.values("pair_id")
        .annotate(n=Count("pk"), major=Count("pk", filter=Q(judgment=Grammaticality.MAJOR)))
        .filter(major__gt=F("n") / 2.0)
        .values("pair_id")
    )
    return pairs.exclude(pk__in=noisy)


def drop_test_fours(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    """DNC's test-set rule for ordinal data (Poliak et al. 2018, App. B.4): leave out of the test
    split the not-entailed pairs rated 4 ("likely"), "since some of these examples are arguably
    entailments". A pair counts as rated 4 when any label its counters count (`in_gold`) is. With
    `full_agreement` this is DNC's pruned test set."""
    rated_four = ValidationLabel.objects.filter(in_gold(), ordinal=LIKELY_RATING).values("pair_id")
    return pairs.exclude(
        Q(premise__split=Split.TEST)
        & Q(gold_label=scheme_labels.NEUTRAL)  # not-entailed, as stored (corpus.labels)
        & Q(pk__in=rated_four)
    )


def export_scope(
    datasets: Sequence[str] | None = None, filters: Filters | None = None
) -> tuple[list[int] | None, list[str], list[int] | None]:
    """The ids and values a snapshot's datasets and filters name: dataset ids (None: every
    dataset), splits, genre ids (None: every genre). Ids, not joins on slugs: the planner then
    knows how many rows match."""
    filters = filters or {}
    dataset_ids = list(Dataset.objects.filter(slug__in=datasets).values_list("pk", flat=True)) if datasets else None
    genre_ids = (
        list(Genre.objects.filter(slug__in=filters["genres"]).values_list("pk", flat=True))
        if filters.get("genres")
        else None
    )
    # Premises not yet given a split belong to no file.
    return dataset_ids, list(filters.get("splits") or Split.values), genre_ids


class ExportCounts(NamedTuple):
    """What a snapshot's manifest counts of its pairs, read in one grouped statement (`export_counts`)."""

    rows: int
    # {source: pairs}: where each row's gold_label comes from (None with an aggregation run, whose
    # labels are the gold there: AGGREGATION_FIELDS say whose).
    gold_sources: dict[str, int] | None
    # {rule: {"pairs": n, "stopped_early": m}}, or None where every pair is on the fixed rule.
    stopping_rules: dict[str, dict[str, int]] | None
    # The genres the rows' premises have (the provenance's genres).
    genre_ids: frozenset[int]


def export_counts(
    datasets: Sequence[str] | None = None, filters: Filters | None = None, *, upper_id: int | None = None
) -> ExportCounts:
    """The rows of a snapshot (ids up to `upper_id`), by gold source, by stopping rule and by genre, in one pass.
    Gold sources as `corpus.gold.gold_source` says, and "author" where the unvalidated_gold filter
    gives the author's label (as `writer.export_record` decides)."""
    filters = filters or {}
    with_sources = not filters.get("aggregation_run")
    sources = dict.fromkeys([*GoldSource.values, AUTHOR_GOLD], 0)
    if upper_id is None:
        return ExportCounts(0, sources if with_sources else None, None, frozenset())
    unvalidated_gold = filters.get("unvalidated_gold", "author")
    author = Q(gold_label=NO_GOLD, needs_validation=False, label_count__lte=1)
    if unvalidated_gold == "author":
        author &= Q(premise__split=Split.TRAIN)
    source = gold_source_expression()
    if unvalidated_gold in ("author", "author-all"):
        source = Case(When(author, then=Value(AUTHOR_GOLD)), default=source)
    groups = ["stopping_rule", "stopped_early", "premise__genre_id", *(["source"] if with_sources else [])]
    rows = (
        pairs_for_export(datasets, filters)
        .filter(pk__lte=upper_id)
        .annotate(source=source)
        .values(*groups)
        .annotate(n=Count("pk"))
        .order_by()
    )
    total = 0
    rules: dict[str, dict[str, int]] = {}
    genres: set[int] = set()
    for row in rows:
        total += row["n"]
        genres.add(row["premise__genre_id"])
        if with_sources:
            sources[row["source"]] += row["n"]
        entry = rules.setdefault(row["stopping_rule"], {"pairs": 0, "stopped_early": 0})
        entry["pairs"] += row["n"]
        if row["stopped_early"]:
            entry["stopped_early"] += row["n"]
    fixed_only = set(rules) <= {StoppingRule.FIXED} and not any(entry["stopped_early"] for entry in rules.values())
    return ExportCounts(total, sources if with_sources else None, None if fixed_only else rules, frozenset(genres))


def aggregated_labels(run_id: int | None) -> dict[int, tuple[str, float]] | None:
    """pair pk -> (label, posterior rounded to 6 places) of an aggregation run's Dawid–Skene results,
    what the snapshot option adds to each row; None when the option is off."""
    if run_id is None:
        return None
    rows = AggregatedLabel.objects.filter(run_id=run_id, method=AGGREGATION_METHOD)
    return {
        pair_id: (label, round(posterior, 6))
        for pair_id, label, posterior in rows.values_list("pair_id", "label", "posterior").iterator(chunk_size=20000)
    }


def typing_evidence_of(
    datasets: Sequence[str] | None = None, filters: Filters | None = None, *, upper_id: int | None = None
) -> dict[str, Any]:
    """How the hypotheses of a snapshot's pairs (ids up to `upper_id`) were written: the typing
    records' counts (authorship.selectors.typing_evidence_counts), one grouped read."""
    pairs = pairs_for_export(datasets, filters)
    pairs = pairs.filter(pk__lte=upper_id) if upper_id is not None else pairs.none()
    return typing_evidence_counts(pairs.values("pk"))


def pairs_for_export(
    datasets: Sequence[str] | None = None, filters: Filters | None = None, *, premise_per_row: bool = False
) -> QuerySet[Pair]:
    """The pairs a snapshot with these datasets and filters contains (unordered queryset).

    `premise_per_row`: test each pair's premise by a primary-key probe rather than a join, as pages
    want (a page's merge join walks the premise table from its first row); a count over every pair
    wants the join (figures in bench/RESULTS-docstrings.md).
    """
    filters = filters or {}
    dataset_ids, splits, genre_ids = export_scope(datasets, filters)
    pairs = Pair.objects.all()
    if dataset_ids is not None:
        pairs = pairs.filter(dataset_id__in=dataset_ids)
    premise_lookups: dict[str, list[str] | list[int]] = {"split__in": splits}
    if genre_ids is not None:
        premise_lookups["genre_id__in"] = genre_ids
    if premise_per_row:
        # A scalar subquery (LIMIT 1) is never pulled up into a join: PostgreSQL probes it per row.
        matching_premise = (
            Premise.objects.filter(pk=OuterRef("premise_id"), **premise_lookups).order_by().values("pk")[:1]
        )
        pairs = pairs.alias(export_premise=Subquery(matching_premise)).filter(export_premise__isnull=False)
    else:
        pairs = pairs.filter(**{f"premise__{lookup}": value for lookup, value in premise_lookups.items()})
    return _pair_filters(pairs, filters)


def _pair_filters(pairs: QuerySet[Pair], filters: Filters) -> QuerySet[Pair]:
    """The filters on the pair's own columns and labels (the rest of `pairs_for_export`). A pair a
    researcher retired (adjudication) or kept out of snapshots (`SnapshotExclusion`) is in no snapshot."""
    pairs = pairs.exclude(adjudicated_label=RETIRED_LABEL).exclude(
        Exists(SnapshotExclusion.objects.filter(pair=OuterRef("pk")))
    )
    if filters.get("gold_only"):
        pairs = pairs.exclude(gold_label=NO_GOLD)
    if filters.get("min_labels"):
        pairs = pairs.filter(label_count__gte=filters["min_labels"])
    if filters.get("full_agreement"):
        pairs = full_agreement(pairs)
    if filters.get("drop_ungrammatical"):
        pairs = drop_ungrammatical(pairs)
    if filters.get("drop_test_fours"):
        pairs = drop_test_fours(pairs)
    return pairs


def labels_in_scheme(scheme: str | None, labels: Sequence[CountedLabel]) -> list[tuple[int, str]]:
    """(position, label) pairs of `rows_for_export` in the scheme's words: ratings for ordinal data."""
    if scheme in (None, scheme_labels.THREE_WAY_SCHEME):
        return [(position, label) for position, label, _ in labels]
    if scheme == scheme_labels.ORDINAL_SCHEME:
        return [
            (position, str(rating) if rating is not None else scheme_labels.to_scheme(scheme, label))
            for position, label, rating in labels
        ]
    return [(position, scheme_labels.to_scheme(scheme, label)) for position, label, _ in labels]


def datasets_with_held_out_genres(dataset_slugs: Sequence[str] | None = None) -> set[str]:
    """Slugs of datasets with at least one non-training genre: their dev/test are split matched/mismatched."""
    return set(_with_held_out_genres(dataset_slugs).values_list("slug", flat=True))


def held_out_dataset_ids(dataset_slugs: Sequence[str] | None = None) -> set[int]:
    """Ids of the datasets `datasets_with_held_out_genres` names."""
    return set(_with_held_out_genres(dataset_slugs).values_list("pk", flat=True))


def _with_held_out_genres(dataset_slugs: Sequence[str] | None) -> QuerySet[Dataset]:
    datasets = Dataset.objects.filter(premises__genre__is_training=False).distinct()
    if dataset_slugs:
        datasets = datasets.filter(slug__in=dataset_slugs)
    return datasets


def keyset_pages(
    pairs: QuerySet[Pair], *, page_size: int = PAGE_SIZE, upper_id: int | None = None
) -> Iterator[tuple[int, int, QuerySet[Pair]]]:
    """Yield (after id, last id, queryset of the page) by ascending pair id, never OFFSET, up to
    `upper_id` (the highest id when the export began; default: now)."""
    if upper_id is None:
        upper_id = pairs.order_by("-pk").values_list("pk", flat=True).first()
        if upper_id is None:
            return
    last_id = 0
    while True:
        window = pairs.filter(pk__gt=last_id, pk__lte=upper_id)
        # The page's last id: the page_size-th id above last_id (or the last one left).
        ids = list(window.order_by("pk").values_list("pk", flat=True)[page_size - 1 : page_size])
        page_end = ids[0] if ids else upper_id
        yield last_id, page_end, window.filter(pk__lte=page_end)
        if page_end >= upper_id:
            return
        last_id = page_end


def rows_for_export(
    pairs: QuerySet[Pair], *, page_size: int = PAGE_SIZE, upper_id: int | None = None
) -> Iterator[tuple[PairValues, list[CountedLabel]]]:
    """Yield (pair_values, [(position, label), ...]) by ascending pair id, a page of pairs at a time
    (`keyset_pages`)."""
    for _, _, page in keyset_pages(pairs, page_size=page_size, upper_id=upper_id):
        label_counts = Case(When(labels_that_count("labels__"), then=Value(True)), default=Value(False))
        joined = (
            page.annotate(label_counts=label_counts)
            .order_by("pk", "labels__position")
            .values_list(*PAIR_COLUMNS, *LABEL_COLUMNS)
        )
        current, labels = None, []
        # Streamed in chunks (a server-side cursor on PostgreSQL): measured flatter than fetching the page whole.
        for row in joined.iterator(chunk_size=2000):
            values, (position, label, counts, rating) = row[: len(PAIR_COLUMNS)], row[len(PAIR_COLUMNS) :]
            if current is not None and values[0] != current[0]:
                yield current, counted_label_slots(labels)
                labels = []
            current = values
            # Labels that do not count (excluded workers') are left out of gold labels, so out of the export too.
            if position is not None and counts:
                labels.append((position, label, rating))
        if current is not None:
            yield current, counted_label_slots(labels)


def counted_label_slots(labels: Sequence[CountedLabel]) -> list[CountedLabel]:
    """A pair's exported labels from its counted (position, label, rating)s in position order: the earliest
    five, as gold counts them (`corpus.selectors.in_gold`). Their TSV slot is their position, so an
    excluded worker's slot stays blank; a healed pair (one with a replacement label beyond position 5
    among those five) lists its five labels in order instead."""
    earliest = list(labels[:LABELS_PER_PAIR])
    if any(position > LABELS_PER_PAIR for position, *_ in earliest):
        return [(slot, label, rating) for slot, (_, label, rating) in enumerate(earliest, start=1)]
    return earliest
