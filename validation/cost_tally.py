"""The cost page's validation figures per study, maintained (two grouped reads over every
claim, joined to its pair and premise, would be most of a cold cost page at MultiNLI scale).

Two tallies in the core's pattern (`corpus.tallies`: append-only signed deltas, summed when read):

  - `BoughtLabelTally`: validation labels bought per study × dataset × split × genre, the submitted
    ordinary claims of study sessions (`credits.countable`);
  - `CreditedPairTally`: pairs credited to a study (`credits`: the pair's latest countable claim)
    per study × dataset × split × genre × counters × imported gold × early stop.

Written in the writer's transaction:

  - the validation submit (`submitted`): its countable claims are bought, and the credit of their
    pairs moves to its study, from each pair's key before its labels to its key after them, in one
    INSERT (`submit_moves` keeps the pairs' old keys, so no statement reads the credited claims);
  - a pair's counters moving (labels added, a recompute's fix: `corpus.signals.pairs_moved`) and its
    validation flags (stopped, reopened: `corpus.signals.pairs_flagging`): a credited pair's row
    moves with it;
  - split assignment (`corpus.signals.pairs_moving_split`): both follow the premises.

A study's or dataset's deletion takes its rows with it (CASCADE). Anything else that changes what is
counted (a study session or worker deleted; claims written around the submit, as bench/run.py's
COPY) is repaired by `manage.py rebuild_tallies validation`; `rebuild_with_credits` sets the credit
flags first.
"""

import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from django.db.models import Count, F, QuerySet
from django.db.models.expressions import RawSQL

from base.subquery import EqualsAny
from corpus import signals, tallies
from corpus.models import Dataset, Pair

from . import credits
from .models import BoughtLabelTally, CreditedPairTally, ValidationClaim

BOUGHT_KEY = ("study_id", "dataset_id", "split", "genre_id")
_BOUGHT_FIELDS = ("study_session__study_id", "pair__dataset_id", "pair__premise__split", "pair__premise__genre_id")
# The pair's part of a credited key: PAIR_KEY's fields the cost page reads, in this order.
STATE = ("label_count", "entailment_votes", "neutral_votes", "contradiction_votes", "imported_gold", "stopped_early")
CREDITED_KEY = (*BOUGHT_KEY, *STATE)
# Where each field of CREDITED_KEY (after the study) sits in a corpus PAIR_KEY.
_FROM_PAIR_KEY = [tallies.PAIR_KEY.index(name) for name in CREDITED_KEY[1:]]

Key = tuple[Any, ...]


def credited_key(study_id: int, pair_key: Key) -> Key:
    """The CREDITED_KEY of a pair (its corpus PAIR_KEY) credited to `study_id`."""
    return (study_id, *(pair_key[index] for index in _FROM_PAIR_KEY))


def _insert(bought: Mapping[Key, int], credited: Mapping[Key, int]) -> None:
    """Both tallies' deltas, in one statement when both have some."""
    tallies.insert_deltas_together(
        [(BoughtLabelTally, BOUGHT_KEY, bought), (CreditedPairTally, CREDITED_KEY, credited)]
    )


# --- the validation submit --------------------------------------------------------------------


class _Submit(threading.local):
    """The pairs of the validation submit under way in this thread and the key each had before its counters moved."""

    def __init__(self) -> None:
        self.pairs: set[int] = set()
        self.old_keys: dict[int, Key] = {}


_submit = _Submit()


@contextmanager
def submit_moves(pair_ids: Iterable[int]) -> Iterator[dict[int, Key]]:
    """While a submit adds the labels of these pairs: their counters' moves are kept (pair pk: old
    PAIR_KEY), not read against the credited claims; the submit writes their credit with its own
    (`submitted`), knowing from its claims' UPDATE which study held it."""
    _submit.pairs, _submit.old_keys = set(pair_ids), {}
    try:
        yield _submit.old_keys
    finally:
        _submit.pairs = set()


def submitted(bought: Iterable[tuple[int, Key]], credit: Iterable[tuple[int | None, int | None, Key, Key]]) -> None:
    """A validation submit's deltas, in one INSERT: `bought`, (study, the pair's key) of each label
    bought; `credit`, per pair (old study or None, new study or None, old key, new key): the pair's
    row leaves the old study at its old key and joins the new one at its new."""
    bought_deltas: Counter[Key] = Counter()
    for study_id, pair_key in bought:
        bought_deltas[credited_key(study_id, pair_key)[: len(BOUGHT_KEY)]] += 1
    credited: Counter[Key] = Counter()
    for old_study, new_study, old_key, new_key in credit:
        if old_study is not None:
            credited[credited_key(old_study, old_key)] -= 1
        if new_study is not None:
            credited[credited_key(new_study, new_key)] += 1
    _insert(bought_deltas, credited)


# --- the pairs' writers (corpus.signals) ----------------------------------------------------------


def pairs_moved(sender: Any, moves: Sequence[tuple[int, Key, Key]], **kwargs: Any) -> None:
    """Pairs' counters moved (corpus.signals.pairs_moved): each credited one's row moves from its
    old key to its new, under the study that holds its credit. One read of the credited claims of
    these pairs (the ids as one array: an erasure moves thousands) and one INSERT; a submit's own
    pairs are kept for it instead (`submit_moves`)."""
    others = []
    for pk, old, new in moves:
        if pk in _submit.pairs:
            _submit.old_keys.setdefault(pk, old)
        else:
            others.append((pk, old, new))
    if not others:
        return
    studies = dict(
        credits.countable()
        .filter(EqualsAny(F("pair_id"), RawSQL("%s::bigint[]", [[pk for pk, _, _ in others]])), credited=True)
        .values_list("pair_id", "study_session__study_id")
    )
    deltas: Counter[Key] = Counter()
    for pk, old, new in others:
        if pk in studies:
            deltas[credited_key(studies[pk], old)] -= 1
            deltas[credited_key(studies[pk], new)] += 1
    _insert({}, deltas)


def pairs_flagging(sender: Any, pairs: QuerySet[Pair], values: Mapping[str, bool], **kwargs: Any) -> None:
    """Pairs' validation flags are set (corpus.signals.pairs_flagging, before the update): the
    credited ones' rows take the new early stop. One grouped read and one INSERT."""
    if "stopped_early" not in values:
        return
    stop = CREDITED_KEY.index("stopped_early")
    deltas: Counter[Key] = Counter()
    for key, n in fresh_credited(among=pairs).items():
        deltas[key] -= n
        deltas[(*key[:stop], values["stopped_early"], *key[stop + 1 :])] += n
    _insert({}, deltas)


def pairs_moving_split(sender: Any, pairs: QuerySet[Pair], split: str, **kwargs: Any) -> None:
    """Premises move to `split` with these pairs (read before the update; corpus.signals): their
    bought labels and credited pairs move with them. Two grouped reads and their INSERTs."""
    at = BOUGHT_KEY.index("split")
    _insert(
        tallies.split_moved(fresh_bought(among=pairs), split, at=at),
        tallies.split_moved(fresh_credited(among=pairs), split, at=at),
    )


# --- the fresh counts (what the cost page used to run) ------------------------------------------


def rebuild_with_credits(dataset: Dataset | None = None) -> int:
    """The credit flags set from a fresh computation, then these tallies (which follow the flags)
    checked and rebuilt. Returns how many claims' flags changed."""
    changed = credits.rebuild(dataset)
    tallies.check_and_rebuild(dataset, TALLY)
    return changed


def _countable(dataset: Dataset | None, among: QuerySet[Pair] | None) -> QuerySet[ValidationClaim]:
    claims = credits.countable()
    if dataset is not None:
        claims = claims.filter(pair__dataset=dataset)
    if among is not None:
        claims = claims.filter(pair__in=among.values("pk"))
    return claims


def _grouped(claims: QuerySet[ValidationClaim], fields: Sequence[str]) -> dict[Key, int]:
    rows = claims.values_list(*fields).annotate(n=Count("id")).order_by()
    return {tuple(row[:-1]): row[-1] for row in rows}


def fresh_bought(dataset: Dataset | None = None, among: QuerySet[Pair] | None = None) -> dict[Key, int]:
    """{BOUGHT_KEY: labels bought} counted from the claims (of a dataset, among some pairs)."""
    return _grouped(_countable(dataset, among), _BOUGHT_FIELDS)


def fresh_credited(dataset: Dataset | None = None, among: QuerySet[Pair] | None = None) -> dict[Key, int]:
    """{CREDITED_KEY: pairs} counted from the credited claims and their pairs."""
    fields = (*_BOUGHT_FIELDS, *(f"pair__{name}" for name in STATE))
    return _grouped(_countable(dataset, among).filter(credited=True), fields)


# Folded, checked and rebuilt with the corpus's tallies (registered in validation.apps).
TALLY = tallies.Maintained(
    "validation",
    ((BoughtLabelTally, BOUGHT_KEY), (CreditedPairTally, CREDITED_KEY)),
    lambda dataset: {BoughtLabelTally: fresh_bought(dataset), CreditedPairTally: fresh_credited(dataset)},
    "the validation claims and their pairs",
    receivers=(
        (signals.pairs_moved, pairs_moved),
        (signals.pairs_flagging, pairs_flagging),
        (signals.pairs_moving_split, pairs_moving_split),
    ),
)
