"""The one module that writes a pair's labels and moves its counters.

A pair carries counters (labels so far, votes per label, gold label) so that no page counts the
label table. Every writer goes through here, in the same transaction as its labels:
  - `add_label`: one label at a time (researchers, tests), under the pair's row lock;
  - `add_labels`: a validator's batch, one label on each of several pairs, in four statements;
  - `create_pairs`: new pairs with their labels in bulk (the writing task, corpus imports);
  - `recompute_gold`: the check and the repair, set-based, from the label table alone; it also
    checks the maintained aggregates (`corpus.tallies`) against the pairs and rebuilds them;
  - `set_workers_excluded`: a worker's labels leave (or rejoin) the counters;
  - `adjudicate`: a researcher's (or an imported file's) gold label overrides the votes (MPE §4.2).
Each writer also appends deltas to the maintained aggregates (`corpus.tallies`) in the same
transaction, after its labels.
A pair's gold label is its `adjudicated_label` when it has one, else the 3-of-5 rule over its votes.
Labels of excluded workers (worker quality, SNLI §2.2) do not count; imported labels (worker
None) always do. A pair that lost a label to an exclusion takes replacement labels in positions
after its last (6, 7, ...) until five labels count again; when an excluded worker is included
again, a pair's gold counts its EARLIEST five counted labels by position, so the re-included
label counts again and the latest replacement drops out (`in_gold`). Which pairs need validation
is decided here too (`needs_validation`).
"""

import random
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import connection, connections, transaction
from django.db.models import Case, CharField, Count, F, Field, Func, IntegerField, OuterRef, Q, QuerySet, Subquery, When
from django.db.models.expressions import RawSQL
from django.db.models.sql import Query
from django.utils import timezone

from annotation_site.compiled_queries import CompiledQuery
from annotation_site.plain_rows import insert_rows, update_rows

from . import labels as scheme_labels
from . import signals, stopping, tallies
from .gold import VOTE_FIELD, counters_from_labels, gold_expression, gold_from_votes
from .models import (
    AUTHOR_POSITION,
    GOLD_MAJORITY,
    LABELS_PER_PAIR,
    NO_GOLD,
    RETIRED_LABEL,
    Adjudication,
    AdjudicationAction,
    AdjudicationSource,
    Dataset,
    Label,
    Pair,
    PairTally,
    Premise,
    Split,
    StoppingPolicy,
    StoppingRule,
    ValidationLabel,
    WordTally,
    Worker,
    text_hash,
)
from .selectors import pairs_in

COUNTERS = ("label_count", "entailment_votes", "neutral_votes", "contradiction_votes", "gold_label")


class LabelRefused(ValidationError):
    """A label that cannot be added; the message is fit to show whoever gave it."""


# --- which pairs need validation ---------------------------------------------------------------


def needs_validation(split: str, pair_id: str, dataset: Dataset) -> bool:
    """Dev and test pairs always (MultiNLI §2.1); a train pair when a draw seeded by its pairID
    falls under the dataset's share, so the sample is reproducible and a re-run draws the same pairs."""
    if split in (Split.DEV, Split.TEST):
        return True
    return split == Split.TRAIN and random.Random(pair_id).random() < dataset.train_validation_fraction


@transaction.atomic
def set_needs_validation(pairs: QuerySet[Pair], flag: bool) -> int:
    """Ask for (or stop asking for) validation labels on these pairs; returns how many changed.
    A pair its stopping rule stopped early stays stopped (marking a split again reopens nothing);
    putting the split back on the fixed rule does (`apply_stopping_policy`)."""
    chosen = Pair.objects.filter(pk__in=pairs.values("pk")).exclude(needs_validation=flag)
    if flag:
        chosen = chosen.filter(stopped_early=False)
    return chosen.update(needs_validation=flag)


_needs_validation = needs_validation  # create_pairs has an argument of the same name


# --- stopping rules (issue 24; corpus/stopping.py holds the rules themselves) --------------------


# Read on every writing submit: compiled once per split (annotation_site.compiled_queries).
SPLIT_RULE = CompiledQuery(
    lambda split, values: (
        StoppingPolicy.objects.filter(dataset_id=values["dataset"], split=split).order_by().values_list("rule")[:1]
    ),
    prepare=True,
)


def stopping_rule_for(dataset: Dataset, split: str) -> str:
    """The rule a researcher chose for this split of the dataset (`StoppingPolicy`), else fixed."""
    rows = SPLIT_RULE.fetch(str(split), dataset=dataset.pk)
    return str(rows[0][0]) if rows and rows[0][0] else StoppingRule.FIXED


def decided_q() -> Q:
    """`corpus.stopping.gold_is_decided` as a filter on a pair's counters: a label has three
    votes, or none can reach three with the labels left (v + (5 - n) < 3, i.e. v < n - 2)."""
    reachable = LABELS_PER_PAIR - GOLD_MAJORITY
    majority, hopeless = Q(), Q()
    for name in VOTE_FIELD.values():
        majority |= Q(**{f"{name}__gte": GOLD_MAJORITY})
        hopeless &= Q(**{f"{name}__lt": F("label_count") - reachable})
    return majority | hopeless


def _stops_when_decided(row: Pair) -> bool:
    """Whether a pair whose counters just moved stops now under the decided rule (in memory)."""
    return (
        row.stopping_rule == StoppingRule.DECIDED
        and row.needs_validation
        and not row.stopped_early
        and stopping.decided_stop(row.entailment_votes, row.neutral_votes, row.contradiction_votes, row.label_count)
    )


class PolicyRefused(ValidationError):
    """A stopping policy that cannot be set; the message names the field."""


def set_stopping_policy(
    dataset: Dataset, split: str, rule: str, *, threshold: float | None = None, max_labels: int | None = None
) -> tuple[StoppingPolicy, int, int]:
    """Choose the split's stopping rule (a researcher, on the dashboard or in the admin): the policy
    row, then the rule recorded on the split's pairs still taking labels and, under the decided rule,
    the settled ones stopped, in one transaction. Returns (policy, pairs whose rule changed, stopped)."""
    policy = StoppingPolicy.objects.filter(dataset=dataset, split=split).first() or StoppingPolicy(
        dataset=dataset, split=split
    )
    policy.rule = rule
    if threshold is not None:
        policy.threshold = threshold
    if max_labels is not None:
        policy.max_labels = max_labels
    try:
        policy.full_clean(validate_unique=False)
    except ValidationError as invalid:
        raise PolicyRefused(invalid.message_dict) from invalid
    with transaction.atomic():
        policy.save()
        changed, stopped = apply_stopping_policy(dataset, split)
    return policy, changed, stopped


@transaction.atomic
def apply_stopping_policy(dataset: Dataset, split: str) -> tuple[int, int]:
    """Record the split's rule on its pairs still taking labels (fewer than five, not stopped),
    and stop those the decided rule says are settled already. Pairs that stopped keep their rule,
    except under the fixed rule (five labels a pair), which reopens them: they take labels again.
    Returns (pairs whose rule changed, pairs stopped now)."""
    rule = stopping_rule_for(dataset, split)
    if rule == StoppingRule.FIXED:
        Pair.objects.filter(
            dataset=dataset, premise__split=split, stopped_early=True, label_count__lt=LABELS_PER_PAIR
        ).update(needs_validation=True, stopped_early=False)
    open_pairs = Pair.objects.filter(
        dataset=dataset, premise__split=split, stopped_early=False, label_count__lt=LABELS_PER_PAIR
    )
    changed = open_pairs.exclude(stopping_rule=rule).update(stopping_rule=rule)
    stopped = 0
    if rule == StoppingRule.DECIDED:
        stopped = stop_pairs(open_pairs.filter(needs_validation=True).filter(decided_q()))
    return changed, stopped


@transaction.atomic
def record_stopping_rules(pairs: QuerySet[Pair]) -> int:
    """Copy each pair's split rule (`StoppingPolicy`, else fixed) onto these pairs still taking
    labels, and stop those the decided rule says are settled. Called when pairs are marked for
    validation. A few statements per policy row; returns pairs stopped."""
    pairs = Pair.objects.filter(pk__in=pairs.values("pk"), stopped_early=False, label_count__lt=LABELS_PER_PAIR)
    chosen = Q()
    for dataset_id, split, rule in StoppingPolicy.objects.values_list("dataset_id", "split", "rule"):
        where = Q(dataset_id=dataset_id, premise__split=split)
        pairs.filter(where).exclude(stopping_rule=rule).update(stopping_rule=rule)
        chosen |= where
    unchosen = pairs.exclude(chosen) if chosen else pairs
    unchosen.exclude(stopping_rule=StoppingRule.FIXED).update(stopping_rule=StoppingRule.FIXED)
    return stop_pairs(pairs.filter(stopping_rule=StoppingRule.DECIDED, needs_validation=True).filter(decided_q()))


def stop_pairs(pairs: QuerySet[Pair]) -> int:
    """Stop these pairs taking labels before five (the decided or confident rule): they leave the
    claim indexes (partial on needs_validation) in one UPDATE. Live claims others hold on them stay
    good: their labels are taken and counted when submitted (a pair never exceeds five), and no
    claim serves the pair again. Returns how many stopped."""
    return (
        Pair.objects.filter(pk__in=pairs.values("pk"))
        .filter(needs_validation=True, stopped_early=False, label_count__lt=LABELS_PER_PAIR)
        .update(needs_validation=False, stopped_early=True)
    )


def requeue_undecided_stopped() -> int:
    """Pairs stopped under the decided rule whose gold is no longer decided (an excluded worker's
    label left their counters) take labels again. One UPDATE; returns how many."""
    return (
        Pair.objects.filter(stopped_early=True, stopping_rule=StoppingRule.DECIDED, label_count__lt=LABELS_PER_PAIR)
        .exclude(decided_q())
        .update(needs_validation=True, stopped_early=False)
    )


# --- what follows a pair's gold label ------------------------------------------------------------


def _move(pair: Pair, old_gold: str, old_count: int) -> tallies.LabelMove:
    """The move of a locked pair (loaded with its premise) from (old_gold, old_count) to its fields now."""
    facts = (pair.dataset_id, pair.premise.split, pair.premise.genre_id, pair.author_label, pair.hypothesis)
    return _move_of(pair.pk, facts, (old_gold, old_count), (pair.gold_label, pair.label_count))


def _move_of(pair_id: int, facts: Sequence[Any], old: Sequence[Any], new: Sequence[Any]) -> tallies.LabelMove:
    """A pair's LabelMove from its facts (dataset, split, genre, author label, hypothesis) and its
    (gold label, label count) before and after."""
    dataset_id, split, genre_id, author_label, hypothesis = facts
    return tallies.LabelMove(
        pair_id=pair_id,
        dataset_id=dataset_id,
        split=split,
        genre_id=genre_id,
        author_label=author_label,
        hypothesis=hypothesis,
        old_gold=old[0],
        old_count=old[1],
        new_gold=new[0],
        new_count=new[1],
    )


def labels_moved(moves: Sequence[tallies.LabelMove]) -> None:
    """Everything kept per gold label follows these pairs, in the writer's transaction: the word
    tally (one INSERT when a counted label moved) and, for pairs whose gold changed, the
    receivers of `signals.gold_moved` (the artifacts app's tag tally), whose answers nobody reads."""
    tallies.words_moved(moves)
    golds = [(move.pair_id, move.old_gold, move.new_gold) for move in moves if move.old_gold != move.new_gold]
    if golds:
        signals.gold_moved.send(sender=Pair, moves=golds)


# --- one label at a time -----------------------------------------------------------------------


def add_label(
    pair: Pair,
    label: str,
    *,
    worker: Worker | None = None,
    position: int | None = None,
    seconds: float | None = None,
    ordinal: int | None = None,
) -> ValidationLabel:
    """Add one label to a pair and move its counters, in one transaction.

    The only path that adds a label at run time. Refuses a sixth label, a second label by the
    same worker, a validation label by the pair's author and a label by an excluded worker.
    `label` is a core label; on a two-way or ordinal dataset only the scheme's core labels are
    taken, and an ordinal rating must map to it (corpus.labels).
    """
    with transaction.atomic():
        locked = (
            Pair.objects.select_for_update(no_key=True, of=("self",))
            .select_related("premise", "dataset")
            .get(pk=pair.pk)
        )
        before = tallies.pair_key(locked, locked.premise.split, locked.premise.genre_id)
        was = (locked.gold_label, locked.label_count)
        existing = list(ValidationLabel.objects.filter(pair=locked).values_list("position", "worker_id"))
        if position is None:
            position = _next_position(existing)
        refusal = label_refusal(locked, locked.dataset.label_scheme, existing, worker, position, label, ordinal=ordinal)
        if refusal:
            raise LabelRefused(refusal)
        created = ValidationLabel.objects.create(
            pair=locked, worker=worker, position=position, label=label, seconds=seconds, ordinal=ordinal
        )
        vote_field = VOTE_FIELD[label]
        Pair.objects.filter(pk=locked.pk).update(label_count=F("label_count") + 1, **{vote_field: F(vote_field) + 1})
        locked.refresh_from_db(fields=["label_count", *VOTE_FIELD.values()])
        gold = locked.adjudicated_label or gold_from_votes(
            locked.entailment_votes, locked.neutral_votes, locked.contradiction_votes, locked.imported_gold
        )
        stops = _stops_when_decided(locked)
        if gold != locked.gold_label or stops:
            moved: dict[str, Any] = {"gold_label": gold}
            if stops:  # the decided rule: the gold cannot change, so the pair leaves the claim queue
                moved.update(needs_validation=False, stopped_early=True)
            Pair.objects.filter(pk=locked.pk).update(**moved)
            for name, value in moved.items():
                setattr(locked, name, value)
        tallies.pairs_moved([(before, tallies.pair_key(locked, locked.premise.split, locked.premise.genre_id))])
        labels_moved([_move(locked, *was)])
    # The caller's instance follows the database, so pages built from it are current.
    for name in COUNTERS:
        setattr(pair, name, getattr(locked, name))
    return created


def label_refusal(
    pair: Pair,
    scheme: str,
    taken: Sequence[tuple[int, int | None]],
    worker: Worker | None,
    position: int,
    label: str,
    *,
    ordinal: int | None = None,
) -> str | None:
    """Why `pair` cannot take this label, or None: the one statement of the rules that `add_label`
    and `add_labels` (a validator's batch) both apply, under the pair's row lock.

    `pair` is the locked row with its counters, `scheme` its dataset's label scheme, `taken` its
    labels as (position, worker id). Refused: a label that is not a core label or not one of the
    scheme's (with the rating an ordinal dataset needs, mapping to the label, and only there),
    a sixth counted label, a position taken or before the author's, a label by an excluded worker,
    an author validating their own pair and a second label by the same worker.
    """
    if label not in VOTE_FIELD:
        return f"'{label}' is not a label; choose one of {', '.join(VOTE_FIELD)}."
    if label not in scheme_labels.stored_categories(scheme):
        return f"'{label}' is not a label of a {scheme} dataset."
    if (ordinal is not None) != (scheme == scheme_labels.ORDINAL_SCHEME):
        return "Ordinal datasets take a 1–5 rating with every label, and only they do."
    if ordinal is not None and scheme_labels.to_stored(scheme, ordinal)[0] != label:
        return f"Rating {ordinal} maps to another label than '{label}'."
    # Counted labels only: a pair that lost an excluded worker's label takes a replacement label
    # (in the next free position, beyond 5 if need be) until it has five that count again.
    if pair.label_count >= LABELS_PER_PAIR:
        return f"Pair {pair.pair_id} already has all {LABELS_PER_PAIR} labels."
    if position < AUTHOR_POSITION:
        return f"Label position must be {AUTHOR_POSITION} or more, not {position}."
    if any(p == position for p, _ in taken):
        return f"Pair {pair.pair_id} already has a label in position {position}."
    if worker is not None:
        if worker.is_excluded:
            # Their labels are left out of gold labels; counting new ones here would disagree with a recompute.
            return "Labels from excluded workers are not taken."
        if pair.author_id == worker.pk and position != AUTHOR_POSITION:
            return "Authors do not validate their own pairs."
        if any(w == worker.pk for _, w in taken):
            return f"You have already labelled pair {pair.pair_id}."
    return None


def _next_position(taken: Sequence[tuple[int, int | None]]) -> int:
    return max((p for p, _ in taken), default=0) + 1


# --- a batch of labels at once ----------------------------------------------------------------


# A submit's two reads, compiled once per batch size (annotation_site.compiled_queries): the
# pairs, locked in pk order with what the checks and the tallies read, and their labels.
LOCKED_PAIRS = CompiledQuery(
    lambda _, values: (
        Pair.objects.select_for_update(no_key=True, of=("self",))
        .select_related("premise", "dataset")
        .filter(pk__in=values["pairs"])
        .order_by("pk")
        .only(
            "pk",
            "pair_id",
            "author_id",
            "dataset_id",
            "author_label",
            "adjudicated_label",
            "held_places",
            "imported_gold",
            "stopping_rule",
            "stopped_early",
            "needs_validation",
            *COUNTERS,
            "hypothesis",
            "premise__split",
            "premise__genre_id",
            "dataset__label_scheme",
        )
    ),
    prepare=True,
)
PAIRS_LABELS = CompiledQuery(
    lambda _, values: (
        ValidationLabel.objects.filter(pair_id__in=values["pairs"])
        .order_by()
        .values_list("pair_id", "position", "worker_id")
    ),
    prepare=True,
)


def add_labels(
    labelled: Sequence[tuple[Pair, str] | tuple[Pair, str, int | None]],
    *,
    worker: Worker | None = None,
    seconds: float | None = None,
    releasing_places: bool = False,
) -> list[ValidationLabel]:
    """Add one label to each of several pairs and move their counters, set-based, in one transaction.

    `labelled` is a list of (pair, label) or (pair, label, ordinal), each pair at most once (the
    caller maps a scheme's answers to core labels: corpus.labels.to_stored). The same guarantees as
    `add_label` (never a sixth label, one label per worker per pair, an author never validates
    their own pair, an excluded worker is refused), checked for the whole batch before anything
    is written, in four statements whatever the batch's size: lock the pairs (in pk order, as
    every writer does), read their labels, insert the new labels, update the counters.
    Returns the new ValidationLabel rows in the order given; the caller's pair instances follow
    the database. `releasing_places`: each label comes from a claim that held a place on its pair
    (a validator's submit), so the pair's `held_places` drops by one in the same UPDATE.
    """
    items: list[tuple[Pair, str, int | None]] = [
        (item[0], item[1], item[2] if len(item) > 2 else None)  # a 2- or 3-tuple
        for item in labelled
    ]
    ids = [pair.pk for pair, _, _ in items]
    if len(set(ids)) != len(ids):
        raise LabelRefused("A batch labels each pair once.")
    if not ids:
        return []
    # No savepoint of its own (it would cost two round trips): every check runs before the first
    # write, and a refusal is raised after the block, so a caller's transaction stays usable.
    refusal = None
    with transaction.atomic(savepoint=False):
        locked = {pair.pk: pair for pair in LOCKED_PAIRS.objects(None, pairs=ids)}
        before = {pk: tallies.pair_key(row, row.premise.split, row.premise.genre_id) for pk, row in locked.items()}
        was = {pk: (row.gold_label, row.label_count) for pk, row in locked.items()}
        existing: dict[int, list[tuple[int, int | None]]] = {}
        for pair_pk, position, worker_id in PAIRS_LABELS.fetch(None, pairs=ids):
            existing.setdefault(pair_pk, []).append((position, worker_id))
        new_labels, stopping_now = [], False
        for pair, label, ordinal in items:
            row = locked.get(pair.pk)
            if row is None:
                refusal = f"Pair {pair.pk} does not exist."
                break
            taken = existing.get(pair.pk, [])
            position = _next_position(taken)
            refusal = label_refusal(row, row.dataset.label_scheme, taken, worker, position, label, ordinal=ordinal)
            if refusal:
                break
            new_labels.append(
                ValidationLabel(
                    pair_id=row.pk, worker=worker, position=position, label=label, seconds=seconds, ordinal=ordinal
                )
            )
            vote_field = VOTE_FIELD[label]
            row.label_count += 1
            setattr(row, vote_field, getattr(row, vote_field) + 1)
            row.gold_label = row.adjudicated_label or gold_from_votes(
                row.entailment_votes, row.neutral_votes, row.contradiction_votes, row.imported_gold
            )
            if releasing_places:
                row.held_places = max(0, row.held_places - 1)
            if _stops_when_decided(row):
                # The decided rule (corpus/stopping.py): the gold cannot change any more, so the
                # pair leaves the claim indexes in the same UPDATE that moves its counters.
                row.needs_validation, row.stopped_early, stopping_now = False, True, True
        if refusal is None:
            created = ValidationLabel.objects.bulk_create(new_labels)
            # Absolute values are safe: the rows are locked since they were read.
            fields = [*COUNTERS, "held_places"] if releasing_places else list(COUNTERS)
            if stopping_now:
                fields += ["needs_validation", "stopped_early"]
            _update_counters(list(locked.values()), fields)
            # The maintained aggregates move in the same transaction: one INSERT of deltas.
            tallies.pairs_moved(
                [
                    (before[pk], tallies.pair_key(row, row.premise.split, row.premise.genre_id))
                    for pk, row in locked.items()
                ]
            )
            labels_moved([_move(row, *was[pk]) for pk, row in locked.items()])
    if refusal is not None:
        raise LabelRefused(refusal)
    for pair, _, _ in items:
        for name in COUNTERS:
            setattr(pair, name, getattr(locked[pair.pk], name))
    return created


def _update_counters(rows: Sequence[Pair], fields: Sequence[str]) -> None:
    """Write these locked pairs' `fields` as they are in memory, in one statement on PostgreSQL
    (`annotation_site.plain_rows.update_rows`). `bulk_update`'s CASE WHEN per field and pair is the
    same one statement, but building it was the dearest part of a validator's submit in Python
    (~9 ms of ~26 under the profiler, issue 28)."""
    columns = [_column(Pair._meta.get_field(name)) for name in fields]
    update_rows(Pair._meta.db_table, columns, [(row.pk, *(getattr(row, name) for name in fields)) for row in rows])


# --- new pairs with their labels, in bulk ------------------------------------------------------


def create_premises(premises: Iterable[Premise], *, batch_size: int = 1000) -> list[Premise]:
    """Insert new premises (unsaved Premise objects) with their tallies; returns them. The one
    bulk way premises arrive, so the dashboard's premise counts and lengths (corpus.tallies) never
    miss an importer. Runs in the caller's transaction."""
    rows = list(premises)
    for premise in rows:
        if not premise.text_hash:  # bulk_create skips save(), which sets it
            premise.text_hash = text_hash(premise.text)
    Premise.objects.bulk_create(rows, batch_size=batch_size)
    tallies.premises_added(rows)
    return rows


def create_pairs(
    dataset: Dataset,
    split: str,
    pairs: list[Pair],
    labels: Sequence[Sequence[str]],
    *,
    batch_size: int = 1000,
    needs_validation: bool | None = None,
    adjudication_reasons: Sequence[str] | None = None,
    ordinals: Sequence[Sequence[int | None]] | None = None,
) -> list[Pair]:
    """Insert new pairs of one dataset and split with their labels and counters; returns the pairs.

    `pairs` are unsaved Pair objects (dataset, premise, pairID, text, author label, author);
    `labels[i]` is the list of pair i's labels in position order, the author's first. The
    author's label row names the pair's author; imported validators' labels have no worker.
    `needs_validation` (True/False) overrides the split's rule. A pair given an `adjudicated_label`
    (an imported file's gold that is not the majority, MPE) gets it as gold and an Adjudication row
    from the file, with `adjudication_reasons[i]` as its reason.
    `ordinals[i]`, for ordinal datasets, lists pair i's 1–5 ratings in the same order.
    Runs in the caller's transaction.
    """
    rule = stopping_rule_for(dataset, split)
    for pair, pair_labels in zip(pairs, labels, strict=True):
        pair.dataset = dataset
        pair.needs_validation = (
            _needs_validation(split, pair.pair_id, dataset) if needs_validation is None else needs_validation
        )
        for name, value in counters_from_labels(pair_labels).items():
            setattr(pair, name, value)
        pair.stopping_rule = rule
        if _stops_when_decided(pair):  # imported labels that settle the gold already
            pair.needs_validation, pair.stopped_early = False, True
        if pair.imported_gold and pair.gold_label == NO_GOLD:  # the file's gold until validation decides
            pair.gold_label = pair.imported_gold
        if pair.adjudicated_label:  # e.g. an imported MPE item whose file gold is not the majority
            pair.gold_label = pair.adjudicated_label
    created = Pair.objects.bulk_create(pairs, batch_size=batch_size)
    if any(pair.pk is None for pair in created):
        # A database that cannot return ids from a bulk insert: read them back by pairID.
        pks = dict(
            Pair.objects.filter(dataset=dataset, pair_id__in=[p.pair_id for p in created]).values_list("pair_id", "pk")
        )
        for pair in created:
            pair.pk = pair.id = pks[pair.pair_id]
    _insert_labels(
        (pair.pk, position, label, pair.author_id if position == AUTHOR_POSITION else None)
        for pair, pair_labels in zip(created, labels, strict=False)
        for position, label in enumerate(pair_labels, start=AUTHOR_POSITION)
    )
    reasons = adjudication_reasons or [""] * len(created)
    Adjudication.objects.bulk_create(
        Adjudication(
            pair_id=pair.pk,
            label=pair.adjudicated_label,
            source=AdjudicationSource.FILE,
            reason=reason[:100],
            previous_gold=gold_from_votes(pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes),
        )
        for pair, reason in zip(created, reasons, strict=True)
        if pair.adjudicated_label
    )
    if ordinals is not None:
        _set_ordinals(created, ordinals)
    # After the labels (the order `recompute_gold` relies on): counts and lengths of the new pairs.
    tallies.pairs_added(created)
    return created


def _set_ordinals(pairs: Sequence[Pair], ordinals: Sequence[Sequence[int | None]]) -> None:
    """The 1–5 ratings of freshly inserted label rows: one UPDATE per (position, rating)."""
    by_value: dict[tuple[int, int], list[int]] = {}
    for pair, values in zip(pairs, ordinals, strict=True):
        for position, value in enumerate(values, start=AUTHOR_POSITION):
            if value is not None:
                by_value.setdefault((position, value), []).append(pair.pk)
    for (position, value), pks in by_value.items():
        ValidationLabel.objects.filter(pair_id__in=pks, position=position).update(ordinal=value)


def _column(model_field: Any) -> str:
    """The database column of a concrete field (a foreign key's is its `_id` column)."""
    assert isinstance(model_field, Field) and model_field.column
    return str(model_field.column)


def _insert_labels(rows: Iterable[tuple[int, int, str, int | None]]) -> int:
    """Insert (pair pk, position, label, worker id) rows as multi-row INSERTs.

    Five labels a pair make labels most of an import's rows; building a ValidationLabel object
    per row for bulk_create took over half of an import's time, so they go in as plain rows.
    """
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    meta = ValidationLabel._meta
    columns = [_column(meta.get_field(name)) for name in ("pair", "position", "label", "worker", "created_at")]
    plain = [(*row, created_at) for row in rows]
    insert_rows(meta.db_table, columns, plain)
    return len(plain)


# --- excluding workers -------------------------------------------------------------------------


@dataclass
class ExclusionOutcome:
    changed: int
    recompute_report: "RecomputeReport | None" = None


# When labels last changed in a way the maintained figures cannot follow (an exclusion, a repairing
# recompute): figures cached before then are out of date (dashboard/figure_cache.py reads it).
FIGURES_CHANGED_KEY = "corpus:figures-changed-at"


def mark_figures_changed() -> None:
    """Record that cached figures are out of date from now, and again once the change has committed
    (a figure computed in between, from the data before the commit, is then out of date too)."""
    cache.set(FIGURES_CHANGED_KEY, time.time(), None)
    transaction.on_commit(lambda: cache.set(FIGURES_CHANGED_KEY, time.time(), None))


def figures_changed_at() -> float:
    return float(cache.get(FIGURES_CHANGED_KEY) or 0.0)


def set_workers_excluded(workers: QuerySet[Worker], excluded: bool) -> ExclusionOutcome:
    """Exclude (or include again) workers' labels; gold labels and counters follow by a recompute.

    The flag and the recompute are separate transactions on purpose: the recompute reads every
    label, and the flag must stand even if a researcher has to rerun the recompute later.
    """
    with transaction.atomic():
        changed = (
            Worker.objects.filter(pk__in=workers.values("pk"))
            .exclude(is_excluded=excluded)
            .update(is_excluded=excluded)
        )
    if not changed:
        return ExclusionOutcome(changed=0)
    report = recompute_gold()
    requeue_undecided_stopped()  # a stopped pair that lost a label may be undecided again
    # Every figure of the dashboard moves with the gold labels: none is shown from before (issue 27).
    mark_figures_changed()
    return ExclusionOutcome(changed=changed, recompute_report=report)


# --- the set-based check and repair ------------------------------------------------------------

SHOWN_DISAGREEMENTS = 20


@dataclass
class RecomputeReport:
    pairs_checked: int = 0
    disagreements: int = 0
    fixed: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)  # dicts: pair_id, stored, recomputed
    tally_drift: tallies.Drift | None = None  # corpus.tallies.Drift: maintained aggregates vs the stored counters

    def summary(self) -> str:
        lines = [
            f"pairs checked: {self.pairs_checked}",
            f"pairs whose stored counters disagree with the label table: {self.disagreements}",
        ]
        for example in self.examples:
            lines.append(f"    {example['pair_id']}: stored {example['stored']} recomputed {example['recomputed']}")
        if self.disagreements > len(self.examples):
            lines.append(f"    ... and {self.disagreements - len(self.examples)} more")
        lines.append(f"pairs fixed: {self.fixed}")
        if self.tally_drift is not None:
            lines.append(self.tally_drift.summary())
        return "\n".join(lines)


def _counted(prefix: str = "") -> Q:
    """Labels of people who count: imported ones (no worker) and those of workers not excluded."""
    return Q(**{f"{prefix}worker__isnull": True}) | Q(**{f"{prefix}worker__is_excluded": False})


def replacement_labels_in_gold() -> QuerySet[Any, Any]:
    """Pks of labels beyond position 5 that count towards gold: counted, with fewer than five
    counted labels before them on their pair. Such labels exist only where an exclusion was healed,
    so this subquery touches few rows."""
    earlier = (
        ValidationLabel.objects.filter(_counted(), pair=OuterRef("pair"), position__lt=OuterRef("position"))
        .order_by()
        .annotate(n=Func("pk", function="COUNT"))
        .values("n")
    )
    return (
        ValidationLabel.objects.filter(_counted(), position__gt=LABELS_PER_PAIR)
        .annotate(earlier=Subquery(earlier, output_field=IntegerField()))
        .filter(earlier__lt=LABELS_PER_PAIR)
        .values("pk")
    )


def in_gold(prefix: str = "") -> Q:
    """The labels a pair's counters and gold label count: the earliest five counted labels by
    position. A counted label in positions 1-5 always is one (at most four precede it)."""
    return _counted(prefix) & (
        Q(**{f"{prefix}position__lte": LABELS_PER_PAIR}) | Q(**{f"{prefix}pk__in": replacement_labels_in_gold()})
    )


def _with_recomputed(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    """Annotate n/e/nu/c/gold recomputed from the label table (one LEFT JOIN ... GROUP BY)."""
    counted = in_gold("labels__")

    def votes(label: str | None = None) -> Count:
        condition = counted if label is None else counted & Q(labels__label=label)
        return Count("labels", filter=condition)

    return pairs.annotate(
        r_label_count=votes(),
        r_entailment_votes=votes(Label.ENTAILMENT),
        r_neutral_votes=votes(Label.NEUTRAL),
        r_contradiction_votes=votes(Label.CONTRADICTION),
    ).annotate(
        r_gold_label=_adjudicated_or(
            gold_expression(
                F("r_entailment_votes"), F("r_neutral_votes"), F("r_contradiction_votes"), F("imported_gold")
            )
        )
    )


def _adjudicated_or(majority: Any) -> Case:
    """The gold label: the pair's adjudicated label when it has one, else the majority rule."""
    return Case(When(adjudicated_label="", then=majority), default=F("adjudicated_label"))


def _disagreeing(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    differs = Q()
    for name in COUNTERS:
        differs |= ~Q(**{name: F(f"r_{name}")})
    return _with_recomputed(pairs).filter(differs)


def find_disagreements(
    dataset: Dataset | str | None = None, *, limit: int = SHOWN_DISAGREEMENTS, found: list[int] | None = None
) -> tuple[int, list[dict[str, Any]]]:
    """(count, first `limit` examples) of pairs whose counters differ from the label table; one
    read of every pair, then one of the examples. `found`, a list, receives every such pair's pk.

    The full read returns pks only, through a plain cursor: at MultiNLI scale, with every pair to
    fix, twelve columns a row through the ORM's converters cost more than the query (3.4 s of 6.8)."""
    sql, params = _disagreeing(pairs_in(dataset)).order_by("pk").values_list("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        pks = [row[0] for row in cursor.fetchall()]
    if found is not None:
        found.extend(pks)
    rows = (
        _with_recomputed(Pair.objects.filter(pk__in=pks[:limit]))
        .order_by("pk")
        .values_list("pair_id", *COUNTERS, *(f"r_{name}" for name in COUNTERS))
    )
    examples = [{"pair_id": row[0], "stored": tuple(row[1:6]), "recomputed": tuple(row[6:11])} for row in rows]
    return len(pks), examples


FIX_BATCH = 1_000  # pairs a fix statement updates in one short transaction (PostgreSQL): ~1 s at load 17
FIX_WORKERS = 2  # batches fixed at once, each on a connection of its own (outside a transaction)
FIX_PASSES = 3  # a pair a validator labelled between the check and its fix is looked at again


def recompute_gold(dataset: Dataset | str | None = None, *, fix: bool = True, lengths: bool = False) -> RecomputeReport:
    """Report pairs whose counters disagree with the label table, then set them right.

    Returns a `RecomputeReport`. The check is one read of every pair with its labels; only the
    pairs it finds are written. On PostgreSQL the fix runs in batches of FIX_BATCH pairs, each in
    a transaction of its own that holds the row locks of its pairs only, so validators' submits
    go on meanwhile (issue 28: the old single UPDATE held SHARE on the label table and EXCLUSIVE
    on the tallies for the whole run, ~20 s at 433k pairs); SQLite serialises writers anyway and
    fixes every pair in one correlated-subquery UPDATE.

    The maintained aggregates of the pairs' counters (`corpus.tallies.PairTally`) are checked
    and rebuilt every time; with `lengths` the premise and hypothesis lengths too (the command
    does; an exclusion's recompute does not: no label moves a sentence's length).
    """
    pairs = pairs_in(dataset)
    report = RecomputeReport(pairs_checked=pairs.count())
    if connection.vendor != "postgresql":
        with transaction.atomic():
            disagreeing: list[int] = []
            report.disagreements, report.examples = find_disagreements(dataset, found=disagreeing)
            truth = tallies.grouped_truth(dataset, lengths=lengths)
            report.tally_drift = tallies.drift(dataset, truth=truth)
            if fix and report.disagreements:
                was = _label_facts(disagreeing)
                report.fixed = _update_with_correlated_subqueries(pairs)
                labels_moved(_moves_since(was))
                truth[PairTally] = tallies.pair_rows(pairs)  # the fix moved counters, not texts
                if WordTally in truth:  # and the labels the words count under
                    truth[WordTally] = tallies.word_rows(pairs)
            if fix:
                tallies.rebuild(dataset, truth=truth)
                report.tally_drift.rebuilt = True
        if report.fixed:
            mark_figures_changed()
        return report
    disagreeing = []
    report.disagreements, report.examples = find_disagreements(dataset, found=disagreeing)
    if fix and disagreeing:
        report.fixed = _fix_in_batches(disagreeing)
    # The maintained aggregates against the pairs' stored counters (the fix moved them with deltas,
    # as every writer does, so what differs now is drift: a tally a writer missed).
    report.tally_drift = tallies.check_and_rebuild(dataset, lengths=lengths, repair=fix)
    if report.fixed:
        mark_figures_changed()
    return report


def _fix_in_batches(pair_pks: Sequence[int]) -> int:
    """Fix these pairs' counters from the label table, FIX_BATCH pairs a transaction; returns pairs fixed.

    Each batch is one UPDATE that recomputes the counters from the labels and writes only the pairs
    whose stored counters are still those its snapshot read. A validator's submit locks the pair,
    inserts its label and moves the counters in one transaction, so a pair labelled after the
    snapshot has other counters when the UPDATE reaches it (PostgreSQL re-checks the WHERE on the
    newest row version after waiting for the submit's lock): it is left as it is, never given counts
    that miss the new label, and looked at again in the next pass. A submit that comes after the
    UPDATE has locked a pair waits only for that batch. The tallies move in the same transaction,
    from each pair's old key to its new one, as for any writer of counters.
    """
    fixed, left = 0, sorted(pair_pks)
    with tallies.folds_deferred():
        for _ in range(FIX_PASSES):
            fixed, left = _fix_pass(left, fixed)
            if not left:
                break
    return fixed


def _fix_pass(pair_pks: Sequence[int], fixed: int) -> tuple[int, list[int]]:
    """One pass of `_fix_in_batches`: (pairs fixed so far, the pairs a submit moved meanwhile).

    Outside a transaction, FIX_WORKERS batches run at once, each thread on a connection of its own
    (the batches share no pair; each appends its own tally deltas): the fix of every pair at
    MultiNLI scale is bound by the index entries each batch writes, which is CPU in the database.
    Inside one (a caller's, or a test's) the batches must see its rows: they run on its connection.
    """
    batches = [pair_pks[start : start + FIX_BATCH] for start in range(0, len(pair_pks), FIX_BATCH)]
    if FIX_WORKERS > 1 and len(batches) > 1 and not connection.in_atomic_block:
        with ThreadPoolExecutor(max_workers=FIX_WORKERS) as pool:
            # Each batch runs in a copy of this context (folds deferred, as here).
            outcomes = list(pool.map(lambda batch: copy_context().run(_fix_batch_on_own_connection, batch), batches))
    else:
        outcomes = [_fix_batch(batch) for batch in batches]
    skipped = [pk for _, left in outcomes for pk in left]
    return fixed + sum(done for done, _ in outcomes), skipped


def _fix_batch_on_own_connection(batch: Sequence[int]) -> tuple[int, list[int]]:
    try:
        return _fix_batch(batch)
    finally:
        connections.close_all()  # this thread's connections only


def _fix_batch(batch: Sequence[int]) -> tuple[int, list[int]]:
    """Fix one batch in a transaction of its own: (pairs fixed, pairs a submit moved meanwhile)."""
    with transaction.atomic():
        # Not waiting for the WAL flush: a batch lost in a crash leaves its pairs as they were,
        # for the next recompute to find (27 ms a commit, 12 s of the fix of every pair).
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        rows = _update_from_grouped_labels(batch)
        tallies.pairs_moved([(tuple(row[1:9]), (*row[1:5], *row[9:13])) for row in rows])
        labels_moved([_move_of(row[0], (*row[1:5], row[15]), (row[13], row[5]), (row[14], row[9])) for row in rows])
    done = {row[0] for row in rows}
    return len(rows), [pk for pk in batch if pk not in done]


def rebuild_maintained() -> None:
    """Set the maintained aggregates from the pairs and premises as they stand (after a bulk load
    that went around the writers, e.g. COPY); the same rebuild as `recompute_gold`'s."""
    if connection.vendor == "postgresql":
        tallies.check_and_rebuild(None, lengths=True, repair=True)
        return
    with transaction.atomic():
        tallies.rebuild()


def _label_facts(pair_pks: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """{pk: (dataset, split, genre, author label, hypothesis, gold label, label count)}, 900 pairs a read."""
    facts: dict[int, tuple[Any, ...]] = {}
    for start in range(0, len(pair_pks), 900):
        for pk, *row in Pair.objects.filter(pk__in=pair_pks[start : start + 900]).values_list(
            "pk",
            "dataset_id",
            "premise__split",
            "premise__genre_id",
            "author_label",
            "hypothesis",
            "gold_label",
            "label_count",
        ):
            facts[pk] = tuple(row)
    return facts


def _moves_since(was: dict[int, tuple[Any, ...]]) -> list[tallies.LabelMove]:
    """The moves of these pairs from the facts read before a set-based fix to their fields now."""
    now = _label_facts(sorted(was))
    return [_move_of(pk, old[:5], old[5:7], now[pk][5:7]) for pk, old in was.items() if pk in now]


# --- the two forms of the fix ---------------------------------------------------------------------


def _update_with_correlated_subqueries(pairs: QuerySet[Pair]) -> int:
    def votes(label: str | None = None) -> Subquery:
        labels = ValidationLabel.objects.filter(in_gold(), pair=OuterRef("pk"))
        if label is not None:
            labels = labels.filter(label=label)
        # COUNT without GROUP BY: 0 (not NULL) for a pair without labels.
        return Subquery(
            labels.order_by().annotate(n=Func("pk", function="COUNT")).values("n"), output_field=IntegerField()
        )

    return pairs.filter(pk__in=_disagreeing(pairs).values("pk")).update(
        label_count=votes(),
        entailment_votes=votes(Label.ENTAILMENT),
        neutral_votes=votes(Label.NEUTRAL),
        contradiction_votes=votes(Label.CONTRADICTION),
        gold_label=_adjudicated_or(
            gold_expression(
                votes(Label.ENTAILMENT), votes(Label.NEUTRAL), votes(Label.CONTRADICTION), F("imported_gold")
            )
        ),
    )


def _sql(expression: Any, model: type[Pair] = Pair) -> tuple[str, Sequence[Any]]:
    """Compile an ORM expression to (sql, params) for splicing into a raw statement."""
    query = Query(model)
    compiler = query.get_compiler(connection=connection)
    sql, params = compiler.compile(expression.resolve_expression(query))
    return str(sql), list(params)


def _update_from_grouped_labels(pair_pks: Sequence[int]) -> list[tuple[Any, ...]]:
    """PostgreSQL: one UPDATE of these pairs' counters from their labels, guarded against submits
    that came after its snapshot (`_fix_in_batches`). Returns, per pair written, (pk, dataset,
    split, genre, author label, the four old counters, the four new ones): the tallies' keys; then
    the old and new gold label and the hypothesis (the word tally's and `gold_moved`'s)."""
    quote = connection.ops.quote_name
    pair_table, premise_table, label_table, worker_table = (
        quote(Pair._meta.db_table),
        quote(Pair._meta.get_field("premise").related_model._meta.db_table),
        quote(ValidationLabel._meta.db_table),
        quote(Worker._meta.db_table),
    )
    # Replacement labels (beyond position 5) that still count, as SQL.
    replacement_sql, replacement_params = replacement_labels_in_gold().query.sql_with_params()
    # The gold rule written once (corpus/gold.py), compiled over the grouped counts.
    gold_sql, gold_params = _sql(
        gold_expression(
            RawSQL("g.e", (), output_field=IntegerField()),
            RawSQL("g.nu", (), output_field=IntegerField()),
            RawSQL("g.c", (), output_field=IntegerField()),
            RawSQL("g.imported_gold", (), output_field=CharField()),
        )
    )
    sql = f"""
        UPDATE {pair_table} AS p
        SET label_count = v.n, entailment_votes = v.e, neutral_votes = v.nu, contradiction_votes = v.c,
            gold_label = v.gold
        FROM (
            SELECT g.*, CASE WHEN g.adjudicated_label <> '' THEN g.adjudicated_label ELSE {gold_sql} END AS gold
            FROM (
                SELECT s.id, s.dataset_id, pr.split, pr.genre_id, s.author_label, s.adjudicated_label, s.imported_gold,
                       s.hypothesis,
                       s.label_count AS was_n, s.entailment_votes AS was_e, s.neutral_votes AS was_nu,
                       s.contradiction_votes AS was_c, s.gold_label AS was_gold,
                       count(l.id) AS n,
                       count(l.id) FILTER (WHERE l.label = %s) AS e,
                       count(l.id) FILTER (WHERE l.label = %s) AS nu,
                       count(l.id) FILTER (WHERE l.label = %s) AS c
                FROM {pair_table} AS s
                JOIN {premise_table} AS pr ON pr.id = s.premise_id
                LEFT JOIN {label_table} AS l ON l.pair_id = s.id AND l.pair_id = ANY(%s)
                     AND (l.worker_id IS NULL OR l.worker_id NOT IN (SELECT id FROM {worker_table} WHERE is_excluded))
                     AND (l.position <= %s OR l.id IN ({replacement_sql}))
                WHERE s.id = ANY(%s)
                GROUP BY s.id, pr.id
            ) AS g
        ) AS v
        WHERE p.id = v.id AND p.id = ANY(%s)
          AND (v.was_n, v.was_e, v.was_nu, v.was_c, v.was_gold) IS DISTINCT FROM (v.n, v.e, v.nu, v.c, v.gold)
          -- unchanged since the snapshot: re-checked on the newest version of a row a submit moved
          AND (p.label_count, p.entailment_votes, p.neutral_votes, p.contradiction_votes, p.gold_label)
              = (v.was_n, v.was_e, v.was_nu, v.was_c, v.was_gold)
        RETURNING p.id, v.dataset_id, v.split, v.genre_id, v.author_label,
                  v.was_n, v.was_e, v.was_nu, v.was_c, v.n, v.e, v.nu, v.c, v.was_gold, v.gold, v.hypothesis
    """
    params = [
        *gold_params,
        Label.ENTAILMENT.value,
        Label.NEUTRAL.value,
        Label.CONTRADICTION.value,
        list(pair_pks),
        LABELS_PER_PAIR,
        *replacement_params,
        list(pair_pks),
        list(pair_pks),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


# --- adjudication (MPE §4.2) ---------------------------------------------------------------------


def adjudicate(
    pair: Pair,
    label: str,
    *,
    source: str = AdjudicationSource.RESEARCHER,
    researcher: Any = None,
    reason: str = "",
    note: str = "",
    action: str = AdjudicationAction.LABEL,
) -> Adjudication:
    """A decision on a pair's gold label; its judgments stay as they are.

    `action` label: `label` becomes the gold label whatever the votes say. retire: the pair leaves
    snapshots and releases and its gold reads "-" (`label` is ignored). withdraw: the decisions
    before it no longer count and the gold label goes back to the rule (3 of 5, else the imported
    file's). One transaction under the pair's row lock: the Adjudication row (kept as history, with
    the gold label it replaces) and the pair's `adjudicated_label` and `gold_label`. Returns the row.
    """
    if action == AdjudicationAction.LABEL and label not in VOTE_FIELD:
        raise LabelRefused(f"'{label}' is not a label; choose one of {', '.join(VOTE_FIELD)}.")
    if action not in AdjudicationAction.values:
        raise LabelRefused(f"'{action}' is not a decision; choose one of {', '.join(AdjudicationAction.values)}.")
    with transaction.atomic():
        locked = Pair.objects.select_for_update(no_key=True, of=("self",)).select_related("premise").get(pk=pair.pk)
        was = (locked.gold_label, locked.label_count)
        if action == AdjudicationAction.RETIRE:
            label = adjudicated = gold = RETIRED_LABEL
        elif action == AdjudicationAction.WITHDRAW:
            label = adjudicated = ""
            gold = gold_from_votes(
                locked.entailment_votes, locked.neutral_votes, locked.contradiction_votes, locked.imported_gold
            )
        else:
            adjudicated = gold = label
        decision = Adjudication.objects.create(
            pair=locked,
            action=action,
            label=label,
            previous_gold=locked.gold_label,
            source=source,
            researcher=researcher,
            reason=reason[:100],
            note=note,
        )
        Pair.objects.filter(pk=locked.pk).update(adjudicated_label=adjudicated, gold_label=gold)
        locked.adjudicated_label, locked.gold_label = adjudicated, gold
        labels_moved([_move(locked, *was)])
        mark_figures_changed()
    pair.adjudicated_label, pair.gold_label = adjudicated, gold
    return decision
