"""Reads for snapshots: which pairs an export takes, with their labels.

On PostgreSQL one statement makes every file line (`export_lines_sql`, streamed by COPY). The
Python writer's path reads pairs by keyset pagination over the pair id (never OFFSET), each page's
pairs and labels from ONE statement (a LEFT JOIN), so a page is internally consistent even while
validators keep labelling; either way memory stays flat whatever the corpus size.
"""

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

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

PAGE_SIZE = 5000
LIKELY_RATING = 4  # "likely" on the ordinal scale: not-entailed, yet "arguably" entailed (DNC App. B.4)
AUTHOR_GOLD = "author"  # gold_source_counts: an unvalidated pair's author label, by the unvalidated_gold filter

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
LABEL_COLUMNS = ("labels__position", "labels__label", "labels__worker__is_excluded", "labels__ordinal")
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
    ordinal datasets all the same rating too. Labels of excluded workers are not counted (the
    counters already leave them out)."""
    same_label = (
        Q(entailment_votes=F("label_count"))
        | Q(neutral_votes=F("label_count"))
        | Q(contradiction_votes=F("label_count"))
    )
    pairs = pairs.filter(same_label, label_count__gte=GOLD_MAJORITY)
    split_ratings = (
        ValidationLabel.objects.filter(ordinal__isnull=False)
        .filter(Q(worker__isnull=True) | Q(worker__is_excluded=False))
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
    entailments". A pair counts as rated 4 when any of its counted labels is (an excluded worker's
    is not); other splits, and pairs without ratings, are untouched. With `full_agreement` this
    is DNC's pruned test set."""
    rated_four = ValidationLabel.objects.filter(
        Q(worker__isnull=True) | Q(worker__is_excluded=False), ordinal=LIKELY_RATING
    ).values("pair_id")
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


def gold_source_counts(
    datasets: Sequence[str] | None = None, filters: Filters | None = None, *, upper_id: int | None = None
) -> dict[str, int] | None:
    """{source: pairs} of a snapshot's pairs (ids up to `upper_id`): where each row's gold_label
    comes from, as `corpus.gold.gold_source` says, and "author" for an unvalidated pair given its
    author's label by the unvalidated_gold filter (as `writer.export_record` decides)."""
    filters = filters or {}
    if filters.get("aggregation_run"):
        return None  # the aggregated labels are the gold there (AGGREGATION_FIELDS say whose)
    counts = dict.fromkeys([*GoldSource.values, AUTHOR_GOLD], 0)
    if upper_id is None:
        return counts
    unvalidated_gold = filters.get("unvalidated_gold", "author")
    author = Q(gold_label=NO_GOLD, needs_validation=False, label_count__lte=1)
    if unvalidated_gold == "author":
        author &= Q(premise__split=Split.TRAIN)
    source = gold_source_expression()
    if unvalidated_gold in ("author", "author-all"):
        source = Case(When(author, then=Value(AUTHOR_GOLD)), default=source)
    rows = (
        pairs_for_export(datasets, filters)
        .filter(pk__lte=upper_id)
        .annotate(source=source)
        .values("source")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in rows:
        counts[row["source"]] += row["n"]
    return counts


def typing_evidence_of(
    datasets: Sequence[str] | None = None, filters: Filters | None = None, *, upper_id: int | None = None
) -> dict[str, Any]:
    """How the hypotheses of a snapshot's pairs (ids up to `upper_id`) were written: the typing
    records' counts (authorship.selectors.typing_evidence_counts), one grouped read."""
    pairs = pairs_for_export(datasets, filters)
    pairs = pairs.filter(pk__lte=upper_id) if upper_id is not None else pairs.none()
    return typing_evidence_counts(pairs.values("pk"))


def stopping_rule_counts(
    datasets: Sequence[str] | None = None, filters: Filters | None = None, *, upper_id: int | None = None
) -> dict[str, dict[str, int]] | None:
    """{rule: {"pairs": n, "stopped_early": m}} of a snapshot's pairs (ids up to `upper_id`), or
    None where every one is on the fixed rule (five labels a pair; issue 24), so that manifests of
    fixed-rule data read as they always did."""
    if upper_id is None:
        return None
    rows = (
        pairs_for_export(datasets, filters)
        .filter(pk__lte=upper_id)
        .values("stopping_rule", "stopped_early")
        .annotate(n=Count("pk"))
        .order_by()
    )
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        entry = counts.setdefault(row["stopping_rule"], {"pairs": 0, "stopped_early": 0})
        entry["pairs"] += row["n"]
        if row["stopped_early"]:
            entry["stopped_early"] += row["n"]
    if set(counts) <= {StoppingRule.FIXED} and not any(entry["stopped_early"] for entry in counts.values()):
        return None
    return counts


def pairs_for_export(
    datasets: Sequence[str] | None = None, filters: Filters | None = None, *, premise_per_row: bool = False
) -> QuerySet[Pair]:
    """The pairs a snapshot with these datasets and filters contains (unordered queryset).

    `premise_per_row`: test each pair's premise (split, genre) by a primary-key probe per pair
    rather than by a join. Pages want that: for a page of 5,000 pair ids the planner would
    otherwise merge-join the premise table walked from its first row to the page's premises, a
    scan that grows with every page (49 ms a page at the end of 433k pairs, against 7 ms probing).
    A count over every pair wants the join (one hash join: 0.15 s against 0.5 s of probes at 433k).
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
    researcher retired (adjudication) is in no snapshot."""
    pairs = pairs.exclude(adjudicated_label=RETIRED_LABEL)
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
    datasets = Dataset.objects.filter(premises__genre__is_training=False).distinct()
    if dataset_slugs:
        datasets = datasets.filter(slug__in=dataset_slugs)
    return set(datasets.values_list("slug", flat=True))


def lowest_pair_id() -> int | None:
    """The lowest pair id in the table (one step of the primary key's index), or None."""
    return Pair.objects.order_by("pk").values_list("pk", flat=True).first()


def keyset_pages(
    pairs: QuerySet[Pair], *, page_size: int = PAGE_SIZE, upper_id: int | None = None
) -> Iterator[tuple[int, int, QuerySet[Pair]]]:
    """Yield (after id, last id, queryset of the page) by ascending pair id, never OFFSET.

    `upper_id` caps the pages at the pairs that existed when an export began (default: the
    highest id now), so rows written meanwhile do not change what a snapshot holds.
    """
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
    """Yield (pair_values, [(position, label), ...]) by ascending pair id, one page of pairs at a time.

    `upper_id` caps the export at the pairs that existed when it began, so rows written
    after the count do not change what the snapshot holds.
    """
    for _, _, page in keyset_pages(pairs, page_size=page_size, upper_id=upper_id):
        joined = page.order_by("pk", "labels__position").values_list(*PAIR_COLUMNS, *LABEL_COLUMNS)
        current, labels = None, []
        # Streamed in chunks (a server-side cursor on PostgreSQL): measured flatter than fetching the page whole.
        for row in joined.iterator(chunk_size=2000):
            values, (position, label, excluded, rating) = row[: len(PAIR_COLUMNS)], row[len(PAIR_COLUMNS) :]
            if current is not None and values[0] != current[0]:
                yield current, counted_label_slots(labels)
                labels = []
            current = values
            # Excluded workers' labels are left out of gold labels, so out of the export too.
            if position is not None and not excluded:
                labels.append((position, label, rating))
        if current is not None:
            yield current, counted_label_slots(labels)


def counted_label_slots(labels: Sequence[CountedLabel]) -> list[CountedLabel]:
    """A pair's exported labels from its counted (position, label, rating)s in position order: the earliest
    five, as gold counts them (`corpus.counters.in_gold`). Their TSV slot is their position, so an
    excluded worker's slot stays blank; a healed pair (one with a replacement label beyond position 5
    among those five) lists its five labels in order instead."""
    earliest = list(labels[:LABELS_PER_PAIR])
    if any(position > LABELS_PER_PAIR for position, *_ in earliest):
        return [(slot, label, rating) for slot, (_, label, rating) in enumerate(earliest, start=1)]
    return earliest


# --- PostgreSQL: the lines themselves produced by the database ------------------------------------


def _json_text(column: str) -> str:
    # to_json escapes exactly as json.dumps(ensure_ascii=False): \" \\ \b \f \n \r \t, other
    # control characters as \u00xx (lower-case hex), everything else as is.
    return f"to_json({column}::text)::text"


def _csv_quotes(character: str) -> bool:
    """Whether the export's csv.writer quotes a field for holding this character (Python versions
    differ on a lone carriage return)."""
    import csv
    import io

    buffer = io.StringIO()
    csv.writer(buffer, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n").writerow([f"a{character}b"])
    return buffer.getvalue().startswith('"')


def _tsv_field(column: str) -> str:
    # csv.writer(delimiter="\t", QUOTE_MINIMAL, lineterminator="\n") quotes a field holding a tab,
    # a double quote or a newline (and a carriage return where this Python does), doubling quotes.
    specials = ["E'\\t'", "'\"'", "E'\\n'"] + (["E'\\r'"] if _csv_quotes("\r") else [])
    holds = " OR ".join(f"strpos({column}, {special}) > 0" for special in specials)
    return f"CASE WHEN {holds} THEN '\"' || replace({column}, '\"', '\"\"') || '\"' ELSE {column} END"


# Every counted label of the exported pairs, grouped once (one pass over the label table in pair
# order) rather than a subquery per pair: a pair's JSON label list and its five TSV label fields.
# They are the earliest five counted labels (`counted_label_slots`): ranked by position, a healed
# pair (a replacement beyond position 5 among its five) puts them in slots by rank, any other by
# position. Ranking needs two window functions and a sort, so only the few pairs holding a label
# beyond position 5 (the partial index `replacement_labels`) are ranked; every other pair's counted
# labels are all among its earliest five, each in the slot of its position.
_TSV_LABEL_SLOTS = " || E'\\t' || ".join(
    f"coalesce(max(l.label) FILTER (WHERE l.slot = {slot}), '')" for slot in range(1, LABELS_PER_PAIR + 1)
)
_LABELS_OF_PAIRS = f"""
    SELECT l.pair_id,
           string_agg(to_json(l.label::text)::text, ', ' ORDER BY l.position) AS json_labels,
           {_TSV_LABEL_SLOTS} AS tsv_labels
    FROM (
        SELECT c.pair_id, c.position, c.label, c.position AS slot
        FROM validation_validationlabel AS c LEFT JOIN collection_worker AS w ON w.id = c.worker_id
        WHERE c.pair_id > %(lower_id)s AND c.pair_id <= %(upper_id)s AND w.is_excluded IS NOT TRUE
          AND c.pair_id NOT IN (SELECT pair_id FROM validation_validationlabel
                                WHERE position > {LABELS_PER_PAIR} AND pair_id > %(lower_id)s AND pair_id <= %(upper_id)s)
      UNION ALL
        SELECT r.pair_id, r.position, r.label,
               CASE WHEN bool_or(r.position > {LABELS_PER_PAIR}) OVER (PARTITION BY r.pair_id)
                    THEN r.rank ELSE r.position END AS slot
        FROM (
            SELECT c.pair_id, c.position, c.label,
                   row_number() OVER (PARTITION BY c.pair_id ORDER BY c.position) AS rank
            FROM validation_validationlabel AS c LEFT JOIN collection_worker AS w ON w.id = c.worker_id
            WHERE w.is_excluded IS NOT TRUE
              AND c.pair_id IN (SELECT pair_id FROM validation_validationlabel
                                WHERE position > {LABELS_PER_PAIR} AND pair_id > %(lower_id)s AND pair_id <= %(upper_id)s)
        ) AS r
        WHERE r.rank <= {LABELS_PER_PAIR}
    ) AS l
    GROUP BY l.pair_id
"""
_NO_TSV_LABELS = "E'\\t\\t\\t\\t'"


def _gold_sql(author_gold: bool | str) -> str:
    if not author_gold:
        return '"collection_pair"."gold_label"'
    # author_gold: True for train pairs only ("author"), "all" for every split ("author-all").
    in_split = "" if author_gold == "all" else """ AND "collection_premise"."split" = 'train'"""
    return (
        """CASE WHEN "collection_pair"."gold_label" = '-' AND NOT "collection_pair"."needs_validation"
                 AND "collection_pair"."label_count" <= 1"""
        + in_split
        + """
            THEN "collection_pair"."author_label" ELSE "collection_pair"."gold_label" END"""
    )


def _jsonl_sql(author_gold: bool | str) -> str:
    labels = "coalesce(page_labels.json_labels, '')"
    fields = [
        ("genre", '"collection_genre"."slug"'),
        ("gold_label", _gold_sql(author_gold)),
        ("pairID", '"collection_pair"."pair_id"'),
        ("promptID", '"collection_premise"."prompt_id"'),
        ("sentence1", '"collection_premise"."text"'),
        ("sentence1_binary_parse", '"collection_premise"."binary_parse"'),
        ("sentence1_parse", '"collection_premise"."parse"'),
        ("sentence2", '"collection_pair"."hypothesis"'),
        ("sentence2_binary_parse", '"collection_pair"."binary_parse"'),
        ("sentence2_parse", '"collection_pair"."parse"'),
        ("dataset", '"collection_dataset"."slug"'),
    ]
    parts = ["""'{"annotator_labels": [' || """ + labels + " || ']'"]
    parts += [f"""', "{key}": ' || {_json_text(column)}""" for key, column in fields]
    return " || ".join(parts) + " || '}'"


def _tsv_sql(author_gold: bool | str) -> str:
    columns = [
        _gold_sql(author_gold),
        '"collection_premise"."binary_parse"',
        '"collection_pair"."binary_parse"',
        '"collection_premise"."parse"',
        '"collection_pair"."parse"',
        '"collection_premise"."text"',
        '"collection_pair"."hypothesis"',
        '"collection_premise"."prompt_id"',
        '"collection_pair"."pair_id"',
        '"collection_genre"."slug"',
    ]
    labels = f"coalesce(page_labels.tsv_labels, {_NO_TSV_LABELS})"
    return " || E'\\t' || ".join([*(_tsv_field(f"({column})::text") for column in columns), labels])


def export_lines_sql(
    datasets: Sequence[str] | None = None,
    filters: Filters | None = None,
    *,
    unvalidated_gold: str = "author",
    upper_id: int | None = None,
    lower_id: int = 0,
) -> tuple[str, dict[str, object]]:
    """(sql, params) of one SELECT of the file lines of the pairs a snapshot with these datasets and
    filters exports (as `pairs_for_export`) with lower_id < id <= upper_id, by ascending pair id,
    each row (route, JSONL line, TSV line): route is "split<TAB>genre is training (true/false)<TAB>
    dataset slug", and both lines end in a newline. PostgreSQL only.

    The database builds each line as `writer.export_record`, json.dumps and csv.writer would (the
    same bytes: tests/modeling/test_export_lines.py compares them, filters included). `upper_id`
    caps the export at the pairs that existed when it began.
    """
    filters = filters or {}
    author_gold: bool | str = "all" if unvalidated_gold == "author-all" else unvalidated_gold == "author"
    dataset_ids, splits, genre_ids = export_scope(datasets, filters)
    params: dict[str, object] = {
        "lower_id": lower_id,
        "upper_id": upper_id,
        "splits": splits,
        "retired": RETIRED_LABEL,
    }
    # The filters test the row the statement reads anyway (the pair, its premise): an IN over the
    # filtered pairs would read both a second time (~45 ms a 25k-pair chunk).
    conditions = [
        "collection_pair.id > %(lower_id)s",
        "collection_pair.id <= %(upper_id)s",
        "collection_premise.split = ANY(%(splits)s)",
        # A pair a researcher retired is in no snapshot (as `_pair_filters` says).
        "collection_pair.adjudicated_label <> %(retired)s",
    ]
    if dataset_ids is not None:
        conditions.append("collection_pair.dataset_id = ANY(%(dataset_ids)s)")
        params["dataset_ids"] = dataset_ids
    if genre_ids is not None:
        conditions.append("collection_premise.genre_id = ANY(%(genre_ids)s)")
        params["genre_ids"] = genre_ids
    label_filters = {
        key: filters[key]
        for key in ("gold_only", "min_labels", "full_agreement", "drop_ungrammatical", "drop_test_fours")
        if filters.get(key)
    }
    if label_filters:
        in_range = Pair.objects.filter(pk__gt=lower_id, pk__lte=upper_id)
        filtered_sql, filtered_params = (
            _pair_filters(in_range, label_filters).order_by().values("pk").query.sql_with_params()
        )
        # The queryset's placeholders are positional and the rest of the statement's are named: name them too.
        placeholders = iter(range(len(filtered_params)))
        filtered_sql = re.sub(r"(?<!%)%s", lambda _: f"%(filter_{next(placeholders)})s", filtered_sql)
        conditions.append(f"collection_pair.id IN ({filtered_sql})")
        params.update({f"filter_{index}": value for index, value in enumerate(filtered_params)})
    # Walked in pair order: the premise is one primary-key probe per pair (LATERAL ... LIMIT 1 is
    # never turned into a hash join, which would sort every built line back into pair order) and
    # the grouped labels are merged in the same order.
    sql = f"""
        SELECT collection_premise.split || E'\\t' || collection_genre.is_training::text || E'\\t' || collection_dataset.slug,
               {_jsonl_sql(author_gold)} || E'\\n', {_tsv_sql(author_gold)} || E'\\n'
        FROM collection_pair
        CROSS JOIN LATERAL (SELECT * FROM collection_premise AS premise
                            WHERE premise.id = collection_pair.premise_id LIMIT 1) AS collection_premise
        JOIN collection_genre ON collection_genre.id = collection_premise.genre_id
        JOIN collection_dataset ON collection_dataset.id = collection_pair.dataset_id
        LEFT JOIN ({_LABELS_OF_PAIRS}) AS page_labels ON page_labels.pair_id = collection_pair.id
        WHERE {" AND ".join(conditions)}
        ORDER BY collection_pair.id
    """
    return sql, params
