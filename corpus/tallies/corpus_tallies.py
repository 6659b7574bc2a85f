"""The corpus's own tallies: the sums that statistics and dashboard figures need, kept per
dataset × split × genre so that no report or page scans the corpus.

Three delta tables (`PairTally`, `LengthTally`, `WordTally`: `CORPUS`), kept by the engine
(`corpus.tallies.engine`). Every writer of counters, premises and splits writes its deltas through
here; anything else that changes a pair's counters, split, genre or texts, or deletes pairs outside
a dataset's deletion, shows as drift in the next recompute, which repairs it.
"""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, QuerySet, Sum, Value
from django.db.models.functions import Length, Replace, Trim

from .. import signals
from ..giveaways import counted_label, tokenize, words_of
from ..labels import LABELS
from ..models import Dataset, Pair, Premise
from ..overlap import relation_mask
from ..scope import EVERYTHING, Scope
from .engine import Key, Maintained, Rows, Truth, insert_deltas, scoped, summed
from .models import LengthKind, LengthTally, PairTally, WordTally

PAIR_KEY = (
    "dataset_id",
    "split",
    "genre_id",
    "author_label",
    "label_count",
    "entailment_votes",
    "neutral_votes",
    "contradiction_votes",
    "imported_gold",
    "needs_validation",
    "stopped_early",
)
# The validation queue's flags, last in PAIR_KEY: moved by `corpus.validation_flags`, the one
# writer of them apart from the label writers (which move them with the counters).
FLAGS = PAIR_KEY[-2:]
LENGTH_KEY = ("dataset_id", "split", "genre_id", "kind", "words")
WORD_KEY = ("dataset_id", "split", "genre_id", "label", "word")
HYPOTHESES = ""  # the word of a WordTally row that counts hypotheses, not a word in them

# --- words, the same in SQL and in Python ------------------------------------------------------


def spaced_word_count_sql(field: str) -> Any:
    """Words in a text column, in SQL: spaces + 1, after three passes of "two spaces -> one" (runs
    of up to eight spaces count as one gap)."""
    text: Trim | Replace = Trim(field)
    for _ in range(3):
        text = Replace(text, Value("  "), Value(" "))
    return Length(text) - Length(Replace(text, Value(" "), Value(""))) + 1


# --- grouping the truth --------------------------------------------------------------------------


def pair_rows(pairs: QuerySet[Pair]) -> dict[Key, int]:
    """{PAIR_KEY tuple: pairs} grouped from a Pair queryset (one GROUP BY)."""
    rows = (
        pairs.order_by()
        .values_list("dataset_id", "premise__split", "premise__genre_id", *PAIR_KEY[3:])  # split, genre: the premise's
        .annotate(n=Count("pk"))
    )
    return {tuple(row[:-1]): row[-1] for row in rows}


def _length_rows(rows: QuerySet[Any], text: str, place: str, kind: LengthKind) -> dict[Key, int]:
    """{LENGTH_KEY: n} of `text`'s spaced word counts; `place` prefixes split and genre ("" or "premise__")."""
    counted = (
        rows.order_by()
        .annotate(words=spaced_word_count_sql(text))
        .values_list("dataset_id", f"{place}split", f"{place}genre_id", "words")
        .annotate(n=Count("pk"))
    )
    return {(d, s, g, kind.value, w): n for d, s, g, w, n in counted}


def relation_rows(pairs: QuerySet[Pair]) -> dict[Key, int]:
    """{LENGTH_KEY (kind relation, words = bit mask): n}, the words compared in Python (costly)."""
    rows: Counter[Key] = Counter()
    texts = pairs.order_by().values_list(
        "dataset_id", "premise__split", "premise__genre_id", "premise__text", "hypothesis"
    )
    for dataset_id, split, genre_id, premise_text, hypothesis in texts.iterator(chunk_size=5000):
        rows[(dataset_id, split, genre_id, LengthKind.RELATION.value, relation_mask(premise_text, hypothesis))] += 1
    return dict(rows)


def hypothesis_words(dataset_id: int, split: str, genre_id: int, label: str, hypothesis: str) -> list[Key]:
    """The WORD_KEYs one hypothesis counted under `label` adds to: each of its words and the
    hypotheses row; none for a pair counted under no label."""
    if label not in LABELS:
        return []
    return [(dataset_id, split, genre_id, label, word) for word in (HYPOTHESES, *words_of(tokenize(hypothesis)))]


def word_rows(pairs: QuerySet[Pair]) -> dict[Key, int]:
    """{WORD_KEY: hypotheses}: every hypothesis tokenised in Python (costly at corpus scale)."""
    rows: Counter[Key] = Counter()
    texts = pairs.order_by().values_list(
        "dataset_id", "premise__split", "premise__genre_id", "gold_label", "author_label", "label_count", "hypothesis"
    )
    for dataset_id, split, genre_id, gold, author, count, hypothesis in texts.iterator(chunk_size=5000):
        rows.update(hypothesis_words(dataset_id, split, genre_id, counted_label(gold, author, count), hypothesis))
    return dict(rows)


def length_rows(premises: QuerySet[Premise], pairs: QuerySet[Pair]) -> dict[Key, int]:
    """{LENGTH_KEY: n} of these premises' and pairs' lengths and the pairs' edit relations (the kinds' keys differ)."""
    return {
        **_length_rows(premises, "text", "", LengthKind.PREMISE),
        **_length_rows(pairs, "hypothesis", "premise__", LengthKind.HYPOTHESIS),
        **relation_rows(pairs),
    }


# --- writing deltas ------------------------------------------------------------------------------


def split_moved(rows: Rows, split: str, at: int = 1) -> Counter[Key]:
    """The deltas that move these rows ({key: n}) to `split`, the key's value at `at`: keys from
    several splits land on one key of `split` and add up."""
    deltas: Counter[Key] = Counter()
    for key, n in rows.items():
        deltas[key] -= n
        deltas[(*key[:at], split, *key[at + 1 :])] += n
    return deltas


def pair_key(pair: Pair, split: str, genre_id: int, state: Sequence[int] | None = None) -> Key:
    """A pair's PAIR_KEY from its fields (or `state`: label_count and the three vote counts)."""
    state = state or (pair.label_count, pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes)
    flags = (pair.needs_validation, pair.stopped_early)
    return (pair.dataset_id, split, genre_id, pair.author_label, *state, pair.imported_gold, *flags)


def pairs_moved(moves: Iterable[tuple[int, Key, Key]]) -> int:
    """Record pairs whose counters changed, (pair pk, old PAIR_KEY, new PAIR_KEY) each: one INSERT of
    netted deltas, and the moves told to `corpus.signals.pairs_moved`."""
    deltas: Counter[Key] = Counter()
    moved = []
    for pk, old, new in moves:
        if old != new:
            deltas[old] -= 1
            deltas[new] += 1
            moved.append((pk, old, new))
    if moved:
        signals.pairs_moved.send(sender=Pair, moves=moved)
    return insert_deltas(PairTally, PAIR_KEY, deltas)


def flags_moved(rows: Rows, values: Mapping[str, bool]) -> Counter[Key]:
    """The deltas that set the flags named in `values` on pairs of these rows ({PAIR_KEY: n})."""
    deltas: Counter[Key] = Counter()
    for key, n in rows.items():
        new = tuple(values.get(name, value) for name, value in zip(PAIR_KEY, key, strict=True))
        if new != key:
            deltas[key] -= n
            deltas[new] += n
    return deltas


@dataclass(frozen=True)
class LabelMove:
    """A pair whose gold label or label count moved, from the row the writer holds locked."""

    pair_id: int
    dataset_id: int
    split: str
    genre_id: int
    author_label: str
    hypothesis: str
    old_gold: str
    old_count: int
    new_gold: str
    new_count: int

    @property
    def old_label(self) -> str:
        return counted_label(self.old_gold, self.author_label, self.old_count)

    @property
    def new_label(self) -> str:
        return counted_label(self.new_gold, self.author_label, self.new_count)


def words_moved(moves: Iterable[LabelMove]) -> int:
    """Move the hypotheses whose counted label changed from the old label's words to the new one's."""
    deltas: Counter[Key] = Counter()
    for move in moves:
        old, new = move.old_label, move.new_label
        if old == new:
            continue
        facts = (move.dataset_id, move.split, move.genre_id)
        deltas.subtract(hypothesis_words(*facts, old, move.hypothesis))
        deltas.update(hypothesis_words(*facts, new, move.hypothesis))
    return insert_deltas(WordTally, WORD_KEY, deltas)


def spaced_word_count(text: str) -> int:
    """`spaced_word_count_sql` in Python, step for step (spaces only, trimmed, up to eight spaces a gap)."""
    text = text.strip(" ")
    for _ in range(3):
        text = text.replace("  ", " ")
    return text.count(" ") + 1


def _premise_facts(pairs: Sequence[Pair]) -> dict[int, tuple[str, int, str]]:
    """{premise pk: (split, genre pk, text)} of these pairs' premises: loaded, else read 900 at a time."""
    facts: dict[int, tuple[str, int, str]] = {}
    not_loaded: set[int] = set()
    for pair in pairs:
        if Pair.premise.is_cached(pair):
            facts[pair.premise_id] = (pair.premise.split, pair.premise.genre_id, pair.premise.text)
        else:
            not_loaded.add(pair.premise_id)
    missing = sorted(not_loaded)
    for start in range(0, len(missing), 900):
        for pk, split, genre_id, text in Premise.objects.filter(pk__in=missing[start : start + 900]).values_list(
            "pk", "split", "genre_id", "text"
        ):
            facts[pk] = (split, genre_id, text)
    return facts


def pairs_added(pairs: Sequence[Pair]) -> None:
    """Record new pairs (saved, with their counters): counters, lengths, edit relations and words."""
    facts = _premise_facts(pairs)
    states: Counter[Key] = Counter()
    lengths: Counter[Key] = Counter()
    hypothesis_words_: Counter[Key] = Counter()
    for pair in pairs:
        split, genre_id, premise_text = facts[pair.premise_id]
        states[pair_key(pair, split, genre_id)] += 1
        label = counted_label(pair.gold_label, pair.author_label, pair.label_count)
        hypothesis_words_.update(hypothesis_words(pair.dataset_id, split, genre_id, label, pair.hypothesis))
        lengths[
            (pair.dataset_id, split, genre_id, LengthKind.HYPOTHESIS.value, spaced_word_count(pair.hypothesis))
        ] += 1
        lengths[
            (pair.dataset_id, split, genre_id, LengthKind.RELATION.value, relation_mask(premise_text, pair.hypothesis))
        ] += 1
    insert_deltas(PairTally, PAIR_KEY, states)
    insert_deltas(LengthTally, LENGTH_KEY, lengths)
    insert_deltas(WordTally, WORD_KEY, hypothesis_words_)


def _labels_first() -> None:
    """Hold the label table's writer lock before writing tallies, as label writers do, so that a
    corpus import that writes premise tallies and then labels cannot deadlock. ROW EXCLUSIVE: no
    writer waits for another."""
    from ..models import ValidationLabel

    with connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {ValidationLabel._meta.db_table} IN ROW EXCLUSIVE MODE")


def premises_added(premises: Iterable[Premise]) -> None:
    """Record new premises (saved): counts and lengths per genre and split."""
    saved = list(premises)
    if not saved:
        return
    _labels_first()
    insert_deltas(
        LengthTally,
        LENGTH_KEY,
        Counter(
            (p.dataset_id, p.split, p.genre_id, LengthKind.PREMISE.value, spaced_word_count(p.text)) for p in saved
        ),
    )


def premises_moving(premises: QuerySet[Premise], split: str) -> None:
    """Record that these premises (a queryset, read BEFORE the update) move to `split`, with their pairs."""
    premises = premises.exclude(split=split)
    _labels_first()
    pairs = Pair.objects.filter(premise__in=premises.values("pk"))
    insert_deltas(PairTally, PAIR_KEY, split_moved(pair_rows(pairs), split))
    insert_deltas(WordTally, WORD_KEY, split_moved(word_rows(pairs), split))
    signals.pairs_moving_split.send(sender=Pair, pairs=pairs, split=split)
    insert_deltas(LengthTally, LENGTH_KEY, split_moved(length_rows(premises, pairs), split))


def pair_counts(
    scope: Scope = EVERYTHING,
    *,
    by: Sequence[str],
    scheme: str | None = None,
) -> list[Key]:
    """[(*by, pairs)] summed from PairTally: a few hundred rows whatever the corpus's size (with no
    dataset and a `scheme`, of the datasets of that label scheme)."""
    return summed(scoped(PairTally, scope, scheme), by)


def length_counts(kind: str, scope: Scope = EVERYTHING, *, by: Sequence[str] = ("words",)) -> list[Key]:
    """[(*by, rows)] of premises or pairs (kind) summed from LengthTally."""
    return summed(scoped(LengthTally, scope).filter(kind=kind), by)


def word_counts(scope: Scope = EVERYTHING, *, genre_id: int | None = None) -> list[Key]:
    """[(label, word, hypotheses)] summed from WordTally (word HYPOTHESES: hypotheses per label)."""
    tallies = scoped(WordTally, scope)
    return summed(tallies if genre_id is None else tallies.filter(genre_id=genre_id), ("label", "word"))


def hypotheses_with_word(word: str) -> int:
    """Hypotheses of every dataset counted under a label that hold `word` (a token as `tokenize`
    writes it), from WordTally: one index probe per dataset and label, not a tokenised corpus."""
    rows = WordTally.objects.filter(dataset_id__in=Dataset.objects.values("pk"), label__in=LABELS, word=word)
    return int(rows.aggregate(total=Sum("n"))["total"] or 0)


def grouped_truth(dataset: Dataset | None = None, *, lengths: bool = True) -> Truth:
    """{PairTally: {key: n}, LengthTally: ..., WordTally: ...} grouped from the pairs and premises.
    Without `lengths`, PairTally only: counting every sentence's words is most of the cost."""
    from ..selectors import pairs_in, premises_in

    scope = Scope.of_dataset(dataset)
    pairs = pairs_in(scope)
    truth: Truth = {PairTally: pair_rows(pairs)}
    if lengths:
        truth[WordTally] = word_rows(pairs)
        truth[LengthTally] = length_rows(premises_in(scope), pairs)
    return truth


CORPUS = Maintained(
    "corpus",
    ((PairTally, PAIR_KEY), (LengthTally, LENGTH_KEY), (WordTally, WORD_KEY)),
    grouped_truth,
    "the pairs and premises",
)
# The pair tally alone: recompute_gold after an exclusion (no label moves a sentence's length).
PAIRS_ONLY = Maintained("pairs", CORPUS.tables[:1], partial(grouped_truth, lengths=False), CORPUS.source)
CORPUS.register()


def premise_saved(sender: type[Premise], instance: Premise, created: bool, raw: bool = False, **kwargs: Any) -> None:
    """post_save receiver: a premise saved one at a time is counted too."""
    if created and not raw:
        with transaction.atomic():
            premises_added([instance])
