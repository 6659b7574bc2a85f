"""Agreement statistics of validated pairs (MultiNLI Table 2 / 3, SNLI Table 3), in the database.

Everything is one grouped statement over the maintained aggregates (`corpus.tallies.PairTally`),
a few hundred rows whatever the number of pairs, summed in Python. `source="pairs"` groups the
pairs' own counters instead (the same figures; what the tests compare with). The definitions are
in docs/statistics.md: fractions are over the pairs that have all five labels, and a "label" there
is any of the five, the author's included, except where said.
"""

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from django.db import connection
from django.db.models import Case, Count, F, IntegerField, Q, QuerySet, Sum, Value, When

from base.subquery import sql_of

from . import labels as scheme_labels
from . import tallies
from .alpha import NOMINAL, ORDINAL, Alpha, alpha_from_votes
from .gold import (
    VOTE_FIELD,
    ItemSetStatistics,
    gold_expression,
    gold_from_votes,
    gold_source_expression,
    majority_expression,
)
from .models import (
    LABELS_PER_PAIR,
    NO_GOLD,
    GoldSource,
    ItemKind,
    Pair,
    StoppingPolicy,
    StoppingRule,
    ValidationLabel,
    gold_source,
)
from .scope import EVERYTHING, Scope
from .selectors import (
    adjudication_queue,
    datasets_outside_scheme,
    in_gold,
    labels_scheme_of_scope,
    pairs_in,
)

THREE_WAY = list(VOTE_FIELD)
FIVE = Q(label_count=LABELS_PER_PAIR)


def ratio(part: float, whole: float | None) -> float | None:
    """part / whole, or None where whole is 0 or missing (a share of nothing is undefined, not 0)."""
    return part / whole if whole else None


def fleiss_kappa_from_sums(
    subjects: int, raters: int, category_sums: Sequence[float], square_sums: Sequence[float]
) -> float | None:
    """Fleiss' κ from Σ_i n_ij and Σ_i n_ij² per category (Fleiss 1971), as statsmodels computes it.

    None where κ is undefined (no subjects, or every rating in one category: P_e = 1).
    """
    if not subjects:
        return None
    total = subjects * raters
    p_bar = (sum(square_sums) - total) / (total * (raters - 1))
    p_e = sum((s / total) ** 2 for s in category_sums)
    if p_e >= 1:
        return None
    return (p_bar - p_e) / (1 - p_e)


def _kappas(
    five: int,
    sums: Mapping[str, int],
    squares: Mapping[str, int],
    categories: Sequence[str] = THREE_WAY,
    scheme: str | None = None,
) -> dict[str, float | None]:
    """Overall κ over the scheme's categories; per class κ of the 2-category table (class, rest),
    named in the scheme's words (with two categories it equals the overall one)."""
    n = LABELS_PER_PAIR
    result = {
        "overall": fleiss_kappa_from_sums(
            five, n, [sums[label] for label in categories], [squares[label] for label in categories]
        )
    }
    for label in categories:
        rest = five * n - sums[label]
        # Σ (n - x)² = N·n² - 2n·Σx + Σx²
        rest_squares = five * n * n - 2 * n * sums[label] + squares[label]
        result[scheme_labels.to_scheme(scheme, label)] = fleiss_kappa_from_sums(
            five, n, [sums[label], rest], [squares[label], rest_squares]
        )
    return result


def ordinal_kappa(pairs: QuerySet[Pair]) -> float | None:
    """Fleiss κ over the five ratings 1–5 of the five-label pairs of an ordinal dataset, from the
    label table (the counters hold the mapped labels only). Ordinal datasets are small."""
    five_pairs = pairs.filter(FIVE).values("pk")
    rows = (
        ValidationLabel.objects.filter(pair_id__in=five_pairs, ordinal__isnull=False)
        .filter(in_gold())
        .values("pair_id", "ordinal")
        .annotate(n=Count("pk"))
        .order_by()
    )
    sums = dict.fromkeys(scheme_labels.ORDINAL_VALUES, 0)
    squares = dict(sums)
    subjects: set[int] = set()
    for row in rows:
        rating = row["ordinal"]
        assert rating is not None  # filtered above
        subjects.add(row["pair_id"])
        sums[rating] += row["n"]
        squares[rating] += row["n"] ** 2
    # Only pairs whose five labels all carry a rating are a full row of Fleiss' table.
    if sum(sums.values()) != len(subjects) * LABELS_PER_PAIR:
        return None
    return fleiss_kappa_from_sums(len(subjects), LABELS_PER_PAIR, list(sums.values()), list(squares.values()))


# --- Krippendorff's α: every pair with at least two labels (corpus/alpha.py) -------------------

VOTES = ("entailment_votes", "neutral_votes", "contradiction_votes")


def _vote_histogram(scope: Scope, source: str) -> list[tuple[str, str, Sequence[int], int]]:
    """[(split, genre slug, votes per label, pairs)]: one grouped read of the tallies or the pairs."""
    if source == "tallies":
        rows = tallies.pair_counts(scope, by=("split", "genre__slug", *VOTES), scheme=labels_scheme_of_scope(scope))
    else:
        rows = [
            tuple(row)
            for row in pairs_in(scope, scheme=labels_scheme_of_scope(scope))
            .values_list("premise__split", "premise__genre__slug", *VOTES)
            .annotate(n=Count("pk"))
            .order_by()
        ]
    return [(row[0], row[1], tuple(row[2:-1]), row[-1]) for row in rows]


def _ordinal_histogram(scope: Scope) -> list[tuple[str, str, Sequence[int], int]]:
    """[(split, genre slug, ratings 1..5 given, pairs)] of an ordinal dataset, from the label table
    (`in_gold`): per pair its count of each rating, then pairs grouped by those counts."""
    per_pair = (
        ValidationLabel.objects.filter(pair__in=pairs_in(scope), ordinal__isnull=False)
        .filter(in_gold())
        .values(unit_split=F("pair__premise__split"), unit_genre=F("pair__premise__genre__slug"), unit=F("pair_id"))
        .annotate(**{f"r{value}": Count("pk", filter=Q(ordinal=value)) for value in scheme_labels.ORDINAL_VALUES})
        .order_by()
    )
    found = sql_of(per_pair)
    if found is None:  # a scope of no dataset: no pairs
        return []
    inner, params = found
    ratings = ", ".join(f"r{value}" for value in scheme_labels.ORDINAL_VALUES)
    sql = (
        f"SELECT unit_split, unit_genre, {ratings}, COUNT(*) FROM ({inner}) per_pair "  # the parameters stay parameters
        f"GROUP BY unit_split, unit_genre, {ratings}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(row[0], row[1], tuple(row[2:-1]), row[-1]) for row in cursor.fetchall()]


Histogram = Sequence[tuple[str, str, Sequence[int], int]]


def _alpha_figures(rows: Histogram, categories: int, metric: str, scope: Histogram) -> dict[str, Any]:
    """α overall, per split and per genre of one histogram, each with the pairs it covers and
    their share of the scope's pairs (counted from `scope`, the pairs' vote histogram)."""

    def alpha_of(keep: Any) -> dict[str, Any]:
        figure = alpha_from_votes(
            [(votes, n) for split, genre, votes, n in rows if keep(split, genre)], categories, metric
        )
        in_scope = sum(n for split, genre, _, n in scope if keep(split, genre))
        return Alpha(figure.alpha, figure.pairs, figure.labels, in_scope).as_dict()

    splits = sorted({row[0] for row in scope})
    genres = sorted({row[1] for row in scope})
    return {
        **alpha_of(lambda split, genre: True),
        "metric": metric,
        "per_split": {name: alpha_of(lambda split, genre, name=name: split == name) for name in splits},
        "per_genre": {name: alpha_of(lambda split, genre, name=name: genre == name) for name in genres},
    }


def krippendorff_alpha(
    scope: Scope = EVERYTHING,
    source: str = "tallies",
    *,
    histogram: Histogram | None = None,
) -> dict[str, Any]:
    """Krippendorff's α over every pair with at least two labels, overall, per split and per genre,
    each with the pairs it covers and their share of the scope.

    `nominal`: over the scheme's stored categories. An ordinal dataset adds `ordinal`: α with
    Krippendorff's ordinal metric over the 1–5 ratings. `histogram` (split, genre, votes, pairs) is
    the vote read when the caller has made it already.
    """
    scheme: str = scope.one.label_scheme if scope.one is not None else scheme_labels.THREE_WAY_SCHEME
    categories = scheme_labels.stored_categories(scheme)
    # The counters' columns in LABELS order; two-way schemes never vote contradiction.
    keep = [scheme_labels.LABELS.index(label) for label in categories]
    rows = [
        (row_split, genre, tuple(votes[i] for i in keep), n)
        for row_split, genre, votes, n in (histogram if histogram is not None else _vote_histogram(scope, source))
    ]
    result = {NOMINAL: _alpha_figures(rows, len(categories), NOMINAL, rows)}
    if scheme == scheme_labels.ORDINAL_SCHEME:
        ordinal = _ordinal_histogram(scope)
        result[ORDINAL] = _alpha_figures(ordinal, len(scheme_labels.ORDINAL_VALUES), ORDINAL, rows)
    return result


def _grouped_counts(pairs: QuerySet[Pair]) -> Iterable[Mapping[str, Any]]:
    """One pass over the pairs: counts per (genre, author label, gold label, votes of a five-label
    pair), a few hundred rows whatever the corpus's size; every figure of the report sums them."""
    counts: Iterable[Mapping[str, Any]] = (
        pairs.values("premise__genre__slug", "author_label", "gold_label")
        .annotate(
            source_of_gold=gold_source_expression(),  # Pair.gold_source is the property's name
            **_five_votes(),
        )
        .values("premise__genre__slug", "author_label", "gold_label", "source_of_gold", *FIVE_VOTES)
        .annotate(n=Count("pk"))
        .order_by()
    )
    return counts


FIVE_VOTES = ("is_five", "e", "nu", "c")


def _five_votes() -> dict[str, Case]:
    """FIVE_VOTES as annotations: whether the pair has five labels, and its three vote counters if so."""

    def votes_if_five(name: str) -> Case:
        return Case(When(FIVE, then=F(name)), default=Value(None), output_field=IntegerField())

    return {
        "is_five": Case(When(FIVE, then=Value(1)), default=Value(0), output_field=IntegerField()),
        "e": votes_if_five("entailment_votes"),
        "nu": votes_if_five("neutral_votes"),
        "c": votes_if_five("contradiction_votes"),
    }


TALLY_KEY = ("split", "genre__slug", "author_label", "label_count", *VOTES, "imported_gold")


def _counted(slug: str, author: str, label_count: int, e: int, nu: int, c: int) -> dict[str, Any]:
    """A row of `_grouped_counts` but its gold and n, from a tally's key."""
    five = label_count == LABELS_PER_PAIR
    votes = {"e": e, "nu": nu, "c": c} if five else dict.fromkeys(("e", "nu", "c"))
    return {"premise__genre__slug": slug, "author_label": author, "is_five": int(five), **votes}


def _rule_gold(e: int, nu: int, c: int, imported_gold: str) -> dict[str, str]:
    """The gold of the rule (votes, else the imported gold) and its source, as `_grouped_counts` names them."""
    gold = gold_from_votes(e, nu, c, imported_gold)
    return {"gold_label": gold, "source_of_gold": gold_source(gold, "", e, nu, c)}


def _tallied_counts(tally_rows: Iterable[Sequence[Any]]) -> Iterator[dict[str, Any]]:
    """The rows of `_grouped_counts`, from the maintained aggregates' rows keyed by TALLY_KEY."""
    for _split, slug, author, label_count, e, nu, c, imported_gold, n in tally_rows:
        yield {**_counted(slug, author, label_count, e, nu, c), **_rule_gold(e, nu, c, imported_gold), "n": n}


def _adjudication_rows(scope: Scope, *, adjudicated: bool, source: str) -> list[dict[str, Any]]:
    """Rows that turn one reading of the gold labels into the other for the adjudicated pairs only
    (few; the partial index `pair_adjudicated`): the tallies know the rule's gold (votes), the pairs
    the adjudicated one. For each group of adjudicated pairs, a row with n < 0 takes the gold the
    source gave away and a row with n > 0 puts the wanted one in; every figure is a sum of n-weighted
    rows, so the sums come out as if each pair had had the wanted gold from the start."""
    if (source == "tallies") != adjudicated:
        return []  # the source already reads the gold this way
    groups = (
        pairs_in(scope, scheme=labels_scheme_of_scope(scope))
        .exclude(adjudicated_label="")
        .values_list(
            "premise__genre__slug", "author_label", "adjudicated_label", "label_count", *VOTES, "imported_gold"
        )
        .annotate(n=Count("pk"))
        .order_by()
    )
    rows = []
    for slug, author, decided_gold, label_count, e, nu, c, imported_gold, n in groups:
        common = _counted(slug, author, label_count, e, nu, c)
        rule = {**common, **_rule_gold(e, nu, c, imported_gold)}  # as both sources read it
        decided = {**common, "gold_label": decided_gold, "source_of_gold": GoldSource.ADJUDICATED.value}
        given_away, put_in = (rule, decided) if adjudicated else (decided, rule)
        rows.append({**given_away, "n": -n, "correction": True})
        rows.append({**put_in, "n": n, "correction": True})
    return rows


def count_gold(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """{gold label: pairs} summed over n-weighted rows (`_tallied_counts`, `_grouped_counts`, with
    `_adjudication_rows`' corrections): every label and "-", 0 where none."""
    counts = dict.fromkeys([*THREE_WAY, NO_GOLD], 0)
    for row in rows:
        counts[row["gold_label"]] = counts.get(row["gold_label"], 0) + row["n"]
    return counts


def gold_counts(
    scope: Scope = EVERYTHING,
    *,
    adjudicated: bool = True,
    judged_only: bool = False,
) -> dict[str, int]:
    """{gold label: pairs} in scope, "-" included: the one reader of how many pairs have each gold
    label (`agreement_stats` sums the same rows with `count_gold`). The rule's gold from the
    maintained aggregates, with the researchers' decisions put in (`_adjudication_rows`; a retired
    pair counts under "-"); `adjudicated=False`: the rule's gold before any decision. `judged_only`:
    the pairs with all five labels (MPE's judged items). Stored labels: a two-way dataset's
    "not-entailed" is neutral; with no dataset, the three-way datasets only."""
    by = ("label_count", *VOTES, "imported_gold")
    rows: list[Mapping[str, Any]] = [
        {"gold_label": gold_from_votes(e, nu, c, imported), "is_five": int(count == LABELS_PER_PAIR), "n": n}
        for count, e, nu, c, imported, n in tallies.pair_counts(scope, by=by, scheme=labels_scheme_of_scope(scope))
    ]
    rows += _adjudication_rows(scope, adjudicated=adjudicated, source="tallies")
    return count_gold(row for row in rows if row["is_five"] or not judged_only)


def mpe_statistics(scope: Scope = EVERYTHING) -> ItemSetStatistics:
    """Label distribution, unanimous share and share of gold equal to the judgments' majority, for
    the judged (five-judgment) items of a dataset and split."""
    pairs = pairs_in(scope).filter(FIVE)
    figures = pairs.aggregate(
        items=Count("pk"),
        unanimous=Count("pk", filter=Q(entailment_votes=5) | Q(neutral_votes=5) | Q(contradiction_votes=5)),
        with_majority=Count("pk", filter=majority_expression()),
        gold_equals_majority=Count("pk", filter=majority_expression() & Q(gold_label=gold_expression())),
        adjudicated=Count("pk", filter=~Q(adjudicated_label="")),
    )
    golds = gold_counts(scope, judged_only=True)
    return ItemSetStatistics(
        items=figures["items"],
        label_counts={label: golds[label] for label in THREE_WAY},
        unanimous=figures["unanimous"],
        with_majority=figures["with_majority"],
        gold_equals_majority=figures["gold_equals_majority"],
        adjudicated=figures["adjudicated"],
        pending=adjudication_queue(scope).count(),
    )


def agreement_stats(
    scope: Scope = EVERYTHING,
    source: str = "tallies",
    *,
    adjudicated: bool = True,
    table_only: bool = False,
    tally_rows: list[tallies.Key] | None = None,
) -> dict[str, Any]:
    """The validation statistics of MultiNLI Table 2 / SNLI Table 3 plus per-genre agreement.

    One grouped statement (over the maintained aggregates, or with source="pairs" over every pair).
    A two-way or ordinal dataset's figures are over its scheme's categories, its labels named in the
    scheme's words (`label_scheme`). A multi-premise (MPE) dataset is read from its pairs: an
    adjudicated gold label lives on the pair, not in the tallies' votes. `table_only`: without
    Krippendorff's α and the datasets left out (`krippendorff_alpha` is None); `tally_rows`: the
    maintained aggregates' rows by TALLY_KEY when the caller read them already.
    """
    scheme: str = scope.one.label_scheme if scope.one is not None else scheme_labels.THREE_WAY_SCHEME
    # One read of the maintained aggregates serves α (the votes) and every other figure.
    in_scheme = labels_scheme_of_scope(scope)
    if source == "tallies" and tally_rows is None:
        tally_rows = tallies.pair_counts(scope, by=TALLY_KEY, scheme=in_scheme)
    elif source != "tallies":
        tally_rows = None
    histogram = None if tally_rows is None else [(row[0], row[1], tuple(row[4:7]), row[-1]) for row in tally_rows]
    alpha = None if table_only else krippendorff_alpha(scope, source, histogram=histogram)
    if scope.one is not None and scope.one.item_kind == ItemKind.MULTI_PREMISE:
        source = "pairs"
    rows: Iterable[Mapping[str, Any]] = (
        _tallied_counts(tally_rows or []) if source == "tallies" else _grouped_counts(pairs_in(scope, scheme=in_scheme))
    )
    rows = [*rows, *_adjudication_rows(scope, adjudicated=adjudicated, source=source)]
    totals: Counter[str] = Counter()
    sums = dict.fromkeys(THREE_WAY, 0)
    squares = dict.fromkeys(THREE_WAY, 0)
    genres: dict[str, dict[str, int]] = {}
    golds = count_gold(rows)  # the gold labels as `gold_counts` reads them, from the same rows
    gold_sources = dict.fromkeys(GoldSource.values, 0)
    for row in rows:
        n = row["n"]
        genre = genres.setdefault(row["premise__genre__slug"], {"pairs": 0, "five": 0, "matching": 0})
        # A correction row moves a pair's gold, not the number of pairs: it counts in the gold figures only.
        counted_pairs = 0 if row.get("correction") else n
        genre["pairs"] += counted_pairs
        totals["pairs"] += counted_pairs
        gold, author = row["gold_label"], row["author_label"]
        gold_sources[row["source_of_gold"]] += n
        if not row["is_five"]:
            continue
        votes = {"entailment": row["e"], "neutral": row["nu"], "contradiction": row["c"]}
        totals["five"] += n
        genre["five"] += n
        if LABELS_PER_PAIR in votes.values():
            totals["unanimous"] += n
        matching = votes.get(gold, 0)
        totals["individual_eq_gold"] += matching * n
        genre["matching"] += matching * n
        # The author's label is one of the votes for it; the other votes are validators agreeing.
        totals["individual_eq_author"] += (votes.get(author, 0) - 1) * n
        if gold == author:
            totals["gold_eq_author"] += n
        elif gold == NO_GOLD:
            totals["no_gold"] += n
        else:
            totals["gold_ne_author"] += n
        for label in THREE_WAY:
            sums[label] += votes[label] * n
            squares[label] += votes[label] ** 2 * n
    five = totals["five"]
    categories = list(scheme_labels.stored_categories(scheme))
    result: dict[str, Any] = {
        "pairs": totals["pairs"],
        "five_label_pairs": five,
        "unanimous": ratio(totals["unanimous"], five),
        "individual_eq_gold": ratio(totals["individual_eq_gold"], five * LABELS_PER_PAIR),
        "individual_eq_author": ratio(totals["individual_eq_author"], five * (LABELS_PER_PAIR - 1)),
        "gold_eq_author": ratio(totals["gold_eq_author"], five),
        "gold_ne_author": ratio(totals["gold_ne_author"], five),
        "no_gold": ratio(totals["no_gold"], five),
        # The count behind no_gold: five labels and no 3 agree (the dashboard's "no consensus" row).
        "no_consensus_pairs": totals["no_gold"],
        "fleiss_kappa": _kappas(five, sums, squares, categories, scheme),
        "per_genre": {
            slug: {
                "pairs": genre["pairs"],
                # The pairs the genre's agreement is over (MultiNLI Table 3 counts five-label pairs only).
                "five_label_pairs": genre["five"],
                "agreement": ratio(genre["matching"], genre["five"] * LABELS_PER_PAIR),
            }
            for slug, genre in sorted(genres.items())
        },
        "gold_counts": golds,
        # Which gold labels are the crowd's (3 of 5), a source file's (not validated) or adjudicated.
        "gold_sources": gold_sources,
    }
    if scheme != scheme_labels.THREE_WAY_SCHEME:
        result["label_scheme"] = scheme
        result["gold_counts"] = {
            scheme_labels.to_scheme(scheme, label): golds.get(label, 0) for label in [*categories, NO_GOLD]
        }
        if scheme == scheme_labels.ORDINAL_SCHEME:
            result["fleiss_kappa"]["ordinal"] = ordinal_kappa(pairs_in(scope))
    result["krippendorff_alpha"] = alpha
    if in_scheme is not None and not table_only:
        result["left_out"] = datasets_outside_scheme(in_scheme, scope)
    return result


def before_and_after_adjudication(scope: Scope = EVERYTHING) -> tuple[dict[str, Any], dict[str, Any]]:
    """The table's figures as the rule alone gives them and as they stand, decisions included: one
    read of the maintained aggregates for both."""
    rows = tallies.pair_counts(scope, by=TALLY_KEY, scheme=labels_scheme_of_scope(scope))
    before = agreement_stats(scope, adjudicated=False, table_only=True, tally_rows=rows)
    return before, agreement_stats(scope, table_only=True, tally_rows=rows)


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def coverage_sentences(stats: Mapping[str, Any]) -> dict[str, str]:
    """One sentence per figure family saying which pairs it covers: κ needs all five labels, α does not."""
    pairs, five = stats["pairs"], stats["five_label_pairs"]
    sentences = {
        "kappa": (
            f"Fleiss κ and the agreement table cover the {five:,} pairs with all five labels "
            f"({_share(five, pairs)} of the {pairs:,} pairs in scope)."
        )
    }
    alphas = stats.get("krippendorff_alpha") or {}
    for metric, figure in alphas.items():
        what = "the 1–5 ratings of " if metric == ORDINAL else ""
        sentences[f"alpha_{metric}"] = (
            f"Krippendorff's α ({metric}) covers {what}the {figure['pairs']:,} pairs with at least two "
            f"{'ratings' if metric == ORDINAL else 'labels'}, however many each has "
            f"({_share(figure['pairs'], pairs)} of the {pairs:,} pairs in scope)."
        )
    return sentences


def adaptive_stopping_in_scope(scope: Scope = EVERYTHING) -> list[str]:
    """The stopping rules other than fixed chosen in scope: under them only contested pairs reach
    five labels, so κ is no longer the corpus's agreement (docs/statistics.md, "α beside κ")."""
    policies = scope.rows(StoppingPolicy.objects.exclude(rule=StoppingRule.FIXED))
    return sorted(set(policies.values_list("rule", flat=True)))


def stopped_early_stats(scope: Scope = EVERYTHING) -> dict[str, int]:
    """Pairs that stopped before five labels and the validation labels they saved, counted apart
    (in no figure of `agreement_stats`) on the partial index `pair_stopped_early`."""
    stopped = (
        pairs_in(scope)
        .filter(stopped_early=True, label_count__lt=LABELS_PER_PAIR)
        .aggregate(n=Count("pk"), labels=Sum("label_count"))
    )
    return {
        "stopped_early_pairs": stopped["n"],
        "labels_saved": stopped["n"] * LABELS_PER_PAIR - (stopped["labels"] or 0),
    }
