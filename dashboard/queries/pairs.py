"""The pair browser: find and count pairs by text, genre, split, worker, gold label and label
pattern (dashboard.queries.pair_page reads a page of them).

Every filter is an indexed condition on the pair row or its counters (the label pattern is a
condition on the vote counters, never a scan of the label table), and pages go by pair id
(keyset), so a page costs the same at 433k pairs as at 400.
"""

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Self

from django.contrib.postgres.expressions import ArraySubquery
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import BigIntegerField, Count, F, Q, QuerySet
from django.db.models.expressions import RawSQL

from authorship.flag_lookup import FLAG_FILTERS
from authorship.selectors import evidence_with_any_flag
from base.subquery import EqualsAny
from corpus import tallies
from corpus.giveaways import tokenize
from corpus.gold import gold_from_votes
from corpus.models import (
    LABELS_PER_PAIR,
    NO_GOLD,
    VOTE_FIELDS,
    Genre,
    Label,
    Pair,
    Split,
    ValidationLabel,
    Worker,
    split_221,
)
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import pairs_in, premises_in
from crowd.models import Study

from .quality import flagged_workers

PAGE_SIZE = 50
# The browser's flag filter: name -> what the researcher reads.
FLAGS = {
    "typing": "typing evidence: not typed by its writer",
    "repeated": "repeated: a near-copy of its writer's own sentence on another premise",
    "copy": "a near-copy of an earlier sentence",
    "guesser": "labelled by a worker the quality checks flag",
}


# name -> (what the researcher reads, the condition)
PATTERNS = {
    "unanimous": (
        "all five labels agree",
        Q(label_count=LABELS_PER_PAIR)
        & (
            Q(entailment_votes=LABELS_PER_PAIR)
            | Q(neutral_votes=LABELS_PER_PAIR)
            | Q(contradiction_votes=LABELS_PER_PAIR)
        ),
    ),
    "no_gold": ("five labels, no 3 agree", Q(label_count=LABELS_PER_PAIR, gold_label=NO_GOLD)),
    "split_221": ("five labels split 2-2-1", split_221()),
    "gold_ne_author": (
        "gold label differs from the author's",
        ~Q(gold_label=NO_GOLD) & ~Q(gold_label=F("author_label")),
    ),
    "in_validation": ("waiting for validation labels", Q(needs_validation=True, label_count__lt=LABELS_PER_PAIR)),
}
# The patterns an index of the pair holds (`pair_five_labels`: the five-label pairs;
# `pair_split_221`, `pair_gold_ne_author`), so their pairs are read from it whatever genre they are of: a large
# genre's pairs found premise by premise, or walked in id order, and tested against a sparse
# pattern read every pair of the genre.
PATTERNS_INDEXED = ("unanimous", "no_gold", "split_221", "gold_ne_author")
NARROWING = ("text", "genre", "split", "worker", "writer", "study", "flag", "gold", "pattern")


@dataclass
class PairFilters:
    """The browser's filters, read from the query string; unknown values are reported, not applied."""

    text: str = ""
    genre: str = ""
    split: str = ""
    worker: str = ""
    writer: str = ""
    study: str = ""
    flag: str = ""
    gold: str = ""
    pattern: str = ""
    after: int = 0
    unknown: tuple[str, ...] = ()

    @property
    def narrows(self) -> bool:
        """Whether any filter is set: a bulk action never acts on every pair by an empty form."""
        return any(getattr(self, name) for name in NARROWING)

    @classmethod
    def from_query(cls, params: Mapping[str, str], *, genres: Collection[str] | None = None) -> Self:
        """The filters of `params`. `genres`: the genres' slugs, when the caller has them (else
        the genre named is looked up)."""
        values = {name: (params.get(name) or "").strip()[:200] for name in NARROWING}
        unknown = []
        genre = values["genre"]
        if genre and not (genre in genres if genres is not None else Genre.objects.filter(slug=genre).exists()):
            unknown.append(values.pop("genre"))
        if values["split"] and values["split"] not in Split.values:
            unknown.append(values.pop("split"))
        if values["gold"] and values["gold"] not in [*Label.values, NO_GOLD]:
            unknown.append(values.pop("gold"))
        if values["pattern"] and values["pattern"] not in PATTERNS:
            unknown.append(values.pop("pattern"))
        if values["flag"] and values["flag"] not in FLAGS:
            unknown.append(values.pop("flag"))
        if values["study"] and not Study.objects.filter(slug=values["study"]).exists():
            unknown.append(values.pop("study"))
        after = params.get("after", "")
        return cls(**values, after=int(after) if after.isdigit() else 0, unknown=tuple(unknown))


def _workers_named(name: str) -> list[int]:
    """The workers a market id or a username names (a few: the worker table, not the pairs)."""
    return list(Worker.objects.filter(Q(external_id=name) | Q(user__username=name)).values_list("pk", flat=True))


def _by_worker(workers: list[int]) -> QuerySet[Any]:
    """The ids of the pairs the workers wrote (`pair_author`) or labelled (`label_worker_pairs`)."""
    written = Pair.objects.filter(author_id__in=workers).order_by().values("pk")
    labelled = ValidationLabel.objects.filter(worker_id__in=workers).order_by().values("pair_id")
    return written.union(labelled, all=True)


def _by_flag(flag: str) -> QuerySet[Any]:
    """The ids of the pairs a flag is raised on, from the rows that hold it (sized by the flagged)."""
    if flag in FLAG_FILTERS:
        # Flags of the typing records: the pairs from the filter's own index of the flagged records.
        return evidence_with_any_flag(FLAG_FILTERS[flag]).order_by().values("pair_id")
    # "guesser": labelled by a worker the quality checks flag (the adjudication queue's "flagged"),
    # the flagged workers as the figure cache keeps them, their labels by `label_worker_pairs`.
    return ValidationLabel.objects.filter(worker_id__in=flagged_workers(EVERYTHING)).order_by().values("pair_id")


def _by_study(slug: str) -> QuerySet[Any]:
    """The ids of the pairs written in the study: its writing claims' premise and writer, each
    claim's pairs looked up by their premise (the claims drive, not the pairs)."""
    return (
        Pair.objects.filter(
            premise__writing_claims__study_session__study__slug=slug,
            premise__writing_claims__worker_id=F("author_id"),
        )
        .order_by()
        .values("pk")
    )


@dataclass(frozen=True)
class TextMatch:
    """The pairs holding a text: their ids when few (`ids`), else None (a common word, matched pair
    by pair in id order, which finds a page of matches among the first few thousand pairs)."""

    ids: list[int] | None


# A text whose hypotheses or premises' pairs are more than this is matched pair by pair: gathering
# every match of a common word from the trigram indexes costs more than the page it shows.
TEXT_IDS_CAP = 2_000
TEXT_IDS_SQL = """
    WITH hypotheses AS (
        SELECT pair_pk AS id FROM collection_pair_search WHERE upper(hypothesis) LIKE upper(%(like)s) LIMIT %(over)s
    ), premises AS (
        SELECT id FROM collection_premise WHERE upper(text) LIKE upper(%(like)s)
            AND (SELECT count(*) FROM hypotheses) <= %(cap)s LIMIT %(over)s
    ), of_premises AS (
        SELECT id FROM collection_pair WHERE premise_id IN (SELECT id FROM premises) LIMIT %(over)s
    )
    SELECT 'hypothesis', id FROM hypotheses
    UNION ALL SELECT 'premise', id FROM premises
    UNION ALL SELECT 'pair', id FROM of_premises
    UNION ALL SELECT 'pair_id', pair_pk FROM collection_pair_search
        WHERE upper(pair_id) LIKE upper(%(exact)s) AND pair_id = %(text)s
"""


def _like(text: str, *, around: str = "%") -> str:
    """`text` as a LIKE pattern that matches it literally (`around`: the wildcard either side)."""
    return around + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + around


def _common_word(text: str) -> bool:
    """Whether more hypotheses than TEXT_IDS_CAP hold `text` as a word, by the word tally: a lower
    bound of the hypotheses holding it (only those counted under a label), so a common word skips
    the trigram lookup, whose bitmap of every match costs more than the page. An ASCII word only:
    the tally lowercases, the lookup compares upper cases."""
    word = text.lower()
    return word.isascii() and tokenize(text) == [word] and tallies.hypotheses_with_word(word) > TEXT_IDS_CAP


def text_match(text: str) -> TextMatch:
    """Where the pairs holding `text` (in the hypothesis or the premise, or as the pairID) come from:
    one statement over the trigram indexes (`collection_pair_search`, `premise_text_trgm`), each
    part stopping after TEXT_IDS_CAP matches, so a common word costs what a rare one does; the
    premises are not read when the hypotheses already hold too many. A text of fewer than three
    characters has no trigram to look up: matched pair by pair."""
    if len(text) < 3 or _common_word(text):
        return TextMatch(None)
    params: dict[str, str | int] = {
        "like": _like(text),
        "exact": _like(text, around=""),
        "text": text,
        "cap": TEXT_IDS_CAP,
        "over": TEXT_IDS_CAP + 1,
    }
    with connection.cursor() as cursor:
        cursor.execute(TEXT_IDS_SQL, params)
        rows = cursor.fetchall()
    found: dict[str, list[int]] = {"hypothesis": [], "premise": [], "pair": [], "pair_id": []}
    for part, pk in rows:
        found[part].append(pk)
    if any(len(found[part]) > TEXT_IDS_CAP for part in ("hypothesis", "premise", "pair")):
        return TextMatch(None)
    return TextMatch(sorted({*found["hypothesis"], *found["pair"], *found["pair_id"]}))


def _text_condition(text: str) -> Q:
    """The text filter's rule, pair by pair: the hypothesis or the premise holds it, or it is the pairID."""
    return Q(hypothesis__icontains=text) | Q(premise__text__icontains=text) | Q(pair_id=text)


def _ids_literal(ids: QuerySet[Any]) -> str:
    """The ids a one-column queryset selects, distinct, sorted and without NULL, as the array
    literal the server writes: one row, whatever their number (read as ORM rows, a flag's 17,000 ids
    cost the page more CPU than all its statements)."""
    try:
        sql, params = ids.query.sql_with_params()
    except EmptyResultSet:  # a filter of nobody (`__in` an empty list): no statement to send
        return "{}"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT coalesce(array_agg(DISTINCT s.id ORDER BY s.id), '{{}}')::text FROM ({sql}) AS s(id)"
            " WHERE s.id IS NOT NULL",
            params,
        )
        return str(cursor.fetchone()[0])


def _any_of(literal: str) -> Any:
    """`pk = ANY(ids)` over an array literal: each id looked up by the primary key, in id order, so
    a page stops after its pairs. One literal behind a subquery: as ARRAY[...] of 20,000 ids (a
    flag's) the server parsed and the planner weighed each id, longer than the page took to run."""
    array = RawSQL("ARRAY(SELECT unnest(%s::bigint[]))", (literal,), output_field=ArrayField(BigIntegerField()))
    return EqualsAny(F("pk"), array)


def _literal_size(literal: str) -> int:
    return 0 if literal == "{}" else literal.count(",") + 1


# A genre (with the split) of more pairs than this is walked in id order, the genre a condition:
# every few pairs are of it. Of fewer, its pairs are found from its premises.
GENRE_WALK_FROM = 20_000


def _genre_pairs(scope: Scope, filters: PairFilters) -> int:
    """The pairs of the filters' genre and split, from the pair tally (one small statement)."""
    rows = tallies.pair_counts(scope.with_split(filters.split), by=("genre__slug",))
    return sum(n for genre, n in rows if genre == filters.genre)


# The filters that are a set of pair ids read from their own rows (a word's when it is rare).
ID_SET_FILTERS = ("text", "worker", "study", "flag")


@dataclass(frozen=True)
class Selection:
    """The pairs the filters select, their id sets read (the page's reads), and how many pairs
    those sets hold when one set alone narrows every dataset and split: each id is a distinct
    pair's, so that is the count, with no statement."""

    pairs: QuerySet[Pair]
    lone_set_size: int | None = None


def matching_pairs(
    scope: Scope = EVERYTHING,
    filters: PairFilters | None = None,
    *,
    text: TextMatch | None = None,
    read_ids: bool = False,
) -> QuerySet[Pair]:
    """Every pair the filters select (the browser pages through it; its bulk actions act on all of
    it). Each filter of a few pairs (a worker's, a study's, a flag's, a rare word's) is the set of
    their ids, read from its own rows and looked up by primary key; genre, split, gold label and
    pattern are conditions on the pair and its premise. `text`: `text_match(filters.text)`, when
    the caller has it. `read_ids`: those sets (and a rare word's pairs, from the trigram indexes)
    are read now, once, into the queryset (the page's reads); without, they are subqueries and
    conditions, read when the queryset is (a bulk action's, in its transaction)."""
    return _matching(scope, filters or PairFilters(), text=text, read_ids=read_ids)[0]


def select_pairs(scope: Scope, filters: PairFilters, *, text: TextMatch | None = None) -> Selection:
    """`matching_pairs` with its id sets read, for a page and its count."""
    pairs, sizes = _matching(scope, filters, text=text, read_ids=True)
    narrowing = [name for name in NARROWING if getattr(filters, name)]
    alone = scope.is_everything and scope.split is None and len(sizes) == 1 and len(narrowing) == 1
    return Selection(pairs, sizes[0] if alone and narrowing[0] in ID_SET_FILTERS else None)


def _matching(
    scope: Scope, filters: PairFilters, *, text: TextMatch | None, read_ids: bool
) -> tuple[QuerySet[Pair], list[int]]:
    """`matching_pairs`, and how many ids each set it read holds."""
    sizes: list[int] = []

    def among(ids: QuerySet[Any] | list[int]) -> Any:
        if not (read_ids or isinstance(ids, list)):
            return EqualsAny(F("pk"), ArraySubquery(ids))
        literal = "{" + ",".join(str(pk) for pk in ids) + "}" if isinstance(ids, list) else _ids_literal(ids)
        sizes.append(_literal_size(literal))
        return _any_of(literal)

    pairs = pairs_in(scope.with_split(filters.split))
    walked = False  # a genre too large to be found from its premises
    if filters.genre:
        pairs = pairs.filter(premise__genre__slug=filters.genre)
        walked = _genre_pairs(scope, filters) > GENRE_WALK_FROM
        if not walked:
            # A small genre's pairs found from its premises (`premise_genre_text`): walked in id
            # order, a genre with a few thousand pairs read every pair before them.
            premises = premises_in(scope.with_split(filters.split)).filter(genre__slug=filters.genre)
            pairs = pairs.filter(EqualsAny(F("premise_id"), ArraySubquery(premises.order_by().values("pk"))))
    if filters.gold:
        pairs = pairs.filter(gold_label=filters.gold)
    if filters.pattern:
        pattern = PATTERNS[filters.pattern][1]
        pairs = pairs.filter(pattern)
        if walked and filters.pattern in PATTERNS_INDEXED and _tallied(filters):
            # The pattern's pairs read through their index, then each looked up by primary key and
            # tested for the genre: bounded by the pattern's pairs, not the genre's (a worker's, a
            # flag's or a word's ids bound it already).
            own = scope.filter(Pair.objects.filter(pattern)).order_by().values("pk")
            pairs = pairs.filter(EqualsAny(F("pk"), ArraySubquery(own)))
    if filters.text:
        # A bulk action (no `read_ids`) tests the text pair by pair inside its transaction.
        found = text or (text_match(filters.text) if read_ids else TextMatch(None))
        pairs = pairs.filter(_text_condition(filters.text) if found.ids is None else among(found.ids))
    if filters.worker:
        pairs = pairs.filter(among(_by_worker(_workers_named(filters.worker))))
    if filters.writer:
        pairs = pairs.filter(author_id__in=_workers_named(filters.writer))
    if filters.study:
        pairs = pairs.filter(among(_by_study(filters.study)))
    if filters.flag:
        pairs = pairs.filter(among(_by_flag(filters.flag)))
    return pairs, sizes


# Counted exactly up to this many; beyond, the page says "more than" (a bulk action then asks for
# the exact count first).
COUNT_CAP = 10_000


@dataclass(frozen=True)
class Matched:
    """How many pairs the filters match: `exact`, or at least `count` (a bounded count stopped)."""

    count: int
    exact: bool


def _in_pattern(
    pattern: str, author: str, label_count: int, votes: tuple[int, int, int], gold: str, queued: bool
) -> bool:
    """PATTERNS' rule over a pair's counters (a pair tally row's key), the same as its condition."""
    five = label_count == LABELS_PER_PAIR
    if pattern == "unanimous":
        return five and max(votes) == LABELS_PER_PAIR
    if pattern == "no_gold":
        return five and gold == NO_GOLD
    if pattern == "split_221":
        return five and sorted(votes) == [1, 2, 2]
    if pattern == "gold_ne_author":
        return gold not in (NO_GOLD, author)
    return queued and label_count < LABELS_PER_PAIR  # in_validation


def _tallied(filters: PairFilters) -> bool:
    """Whether the filters are all keys of the pair tally (dataset, split, genre, gold, pattern)."""
    return not any((filters.text, filters.worker, filters.writer, filters.study, filters.flag))


def _tally_count(scope: Scope, filters: PairFilters) -> int:
    """The pairs that tally-keyed filters match, from the pair tally (a few hundred rows, the gold
    label from the votes and the imported gold) with the adjudicated pairs (few, `pair_adjudicated`)
    moved from their rule's gold to their decided one, as the adjudication page counts its queues."""
    by = ("genre__slug", "author_label", "label_count", *VOTE_FIELDS, "imported_gold", "needs_validation")

    def counted(
        genre: str | None, author: str, label_count: int, votes: tuple[int, int, int], gold: str, queued: bool
    ) -> bool:
        return (
            (not filters.genre or genre == filters.genre)
            and (not filters.gold or gold == filters.gold)
            and (not filters.pattern or _in_pattern(filters.pattern, author, label_count, votes, gold, queued))
        )

    total = 0
    for genre, author, label_count, e, nu, c, imported, queued, n in tallies.pair_counts(
        scope.with_split(filters.split), by=by
    ):
        if counted(genre, author, label_count, (e, nu, c), gold_from_votes(e, nu, c, imported), queued):
            total += n
    adjudicated = pairs_in(scope.with_split(filters.split)).exclude(adjudicated_label="")
    if filters.genre:
        adjudicated = adjudicated.filter(premise__genre__slug=filters.genre)
    fields = ("author_label", "label_count", *VOTE_FIELDS, "imported_gold", "needs_validation", "gold_label")
    for author, label_count, e, nu, c, imported, queued, gold, n in adjudicated.values_list(*fields).annotate(
        n=Count("pk")
    ):
        votes = (e, nu, c)
        total -= n * counted(
            filters.genre or None, author, label_count, votes, gold_from_votes(*votes, imported), queued
        )
        total += n * counted(filters.genre or None, author, label_count, votes, gold, queued)
    return total


def count_first(filters: PairFilters, selection: Selection, *, exact: bool) -> bool:
    """Whether the page's count is read before its first page: an exact count asked for, a later
    page's (the count is from the first pair), or one that costs no walk (the tally's, a lone id
    set's), which spares the page's walk when nothing matches. Any other is the first page's own
    when it holds every match."""
    return exact or filters.after > 0 or _tallied(filters) or selection.lone_set_size is not None


def count_matching(
    scope: Scope,
    filters: PairFilters,
    *,
    text: TextMatch | None = None,
    exact: bool = False,
    selection: Selection | None = None,
    first_page: tuple[int, bool] | None = None,
) -> Matched:
    """How many pairs the filters match, in a time set by the answer, not the corpus: filters that
    are all keys of the pair tally from the tally (exact); any other from their pairs, counted up
    to COUNT_CAP (over a common word's pairs, up to a page's worth: `more than`). `exact`: count
    every match whatever it costs (a bulk action's count). `selection`: `select_pairs`' answer,
    when the caller has it. `first_page`: (the pairs the page from the first pair showed, whether
    more follow), when it was read: with none to follow, they are the count."""
    if selection is not None and selection.lone_set_size is not None:
        return Matched(selection.lone_set_size, True)
    pairs = matching_pairs(scope, filters, text=text) if selection is None else selection.pairs
    if exact:
        return Matched(pairs.count(), True)
    if _tallied(filters):
        return Matched(_tally_count(scope, filters), True)
    if first_page is not None and not first_page[1]:
        return Matched(first_page[0], True)
    common_word = filters.text and (text or text_match(filters.text)).ids is None
    if common_word and first_page is not None:
        return Matched(PAGE_SIZE, False)
    cap = PAGE_SIZE if common_word else COUNT_CAP
    found = pairs.order_by()[: cap + 1].count()
    return Matched(min(found, cap), found <= cap)
