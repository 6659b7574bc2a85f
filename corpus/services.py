"""The writes of a pair's labels and counters: the one module that adds labels.

A pair carries counters (labels so far, votes per label, gold label) so that no page counts the
label table. Every writer of labels goes through here, in the same transaction as its labels:
`add_labels` (a validator's batch, under the pairs' row locks: the one place a label's rules are
applied) and `create_pairs` (new pairs with their labels in bulk). Labels that stop counting later
leave the counters through `corpus.exclusions`; `corpus.recompute` checks and repairs them. Each
writer appends deltas to the maintained aggregates (`corpus.tallies`, `corpus.worker_tally`) in
the same transaction, after its labels.

A pair takes a label only while fewer than five of its labels count (`corpus.selectors.in_gold`),
counted in the label table under the pair's row lock, so a counter that drifted low never lets a
sixth in; a pair that lost a label to an exclusion takes replacements after its last (6, 7, ...).
"""

import random
from collections.abc import Iterable, Sequence

from django.db import connection, transaction
from django.db.models import BooleanField, Case, Exists, OuterRef, QuerySet, Value, When
from django.utils import timezone

from base.plain_rows import insert_rows, update_rows

from . import labels as scheme_labels
from . import tallies, worker_tally
from .errors import LabelRefused as LabelRefused  # re-exported: the callers import it from the services
from .gold import COUNTERS, VOTE_FIELD, counters_from_labels, gold_from_votes
from .gold_moves import labels_moved, move
from .models import (
    AUTHOR_POSITION,
    LABELS_PER_PAIR,
    NO_GOLD,
    Adjudication,
    AdjudicationSource,
    Dataset,
    Pair,
    Premise,
    Split,
    ValidationLabel,
    Worker,
    WorkerExclusion,
    text_hash,
)
from .recompute import heal_pairs, lock_pairs
from .selectors import labels_that_count
from .stopping_policies import stopping_rule_for, stops_when_decided
from .validation_flags import set_validation_flags

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
    return set_validation_flags(chosen, needs_validation=flag)


_needs_validation = needs_validation  # create_pairs has an argument of the same name


# --- one label at a time -----------------------------------------------------------------------


def add_label(
    pair: Pair, label: str, *, worker: Worker | None = None, seconds: float | None = None, ordinal: int | None = None
) -> ValidationLabel:
    """One label on one pair: a batch of one through `add_labels`, the one writer of labels (the
    demo and tests label one pair at a time; every rule is `add_labels`')."""
    return add_labels([(pair, label, ordinal)], worker=worker, seconds=seconds)[0]


EXCLUDED_REFUSAL = "Labels from workers excluded by this dataset's team are not taken."


class WorkerExcluded(LabelRefused):
    """`add_labels` refused a batch because the team of a pair's dataset excluded the worker (the
    task apps tell the worker they are not taking part)."""


def label_refusal(
    pair: Pair,
    scheme: str,
    taken: Sequence[tuple[int, int | None, bool]],
    worker: Worker | None,
    position: int,
    label: str,
    *,
    ordinal: int | None = None,
    worker_excluded: bool = False,
) -> str | None:
    """Why `pair` (the locked row) cannot take this label in `position`, or None: the one statement
    of the rules, which `add_labels` applies under the pair's row lock. `taken`: its labels as
    (position, worker id, whether it counts), read under the lock."""
    if label not in VOTE_FIELD:
        return f"'{label}' is not a label; choose one of {', '.join(VOTE_FIELD)}."
    if label not in scheme_labels.stored_categories(scheme):
        return f"'{label}' is not a label of a {scheme} dataset."
    if (ordinal is not None) != (scheme == scheme_labels.ORDINAL_SCHEME):
        return "Ordinal datasets take a 1–5 rating with every label, and only they do."
    if ordinal is not None and scheme_labels.to_stored(scheme, ordinal)[0] != label:
        return f"Rating {ordinal} maps to another label than '{label}'."
    # The label table decides as well as the counter: a counter that drifted low (a bulk write that
    # went around this module) must not let a sixth label in; the recompute sets it right.
    if pair.label_count >= LABELS_PER_PAIR or sum(counts for *_, counts in taken) >= LABELS_PER_PAIR:
        return f"Pair {pair.pair_id} already has all {LABELS_PER_PAIR} labels."
    if worker is not None:
        if worker_excluded:  # counting new labels of theirs would disagree with a recompute
            return EXCLUDED_REFUSAL
        if pair.author_id == worker.pk and position != AUTHOR_POSITION:
            return "Authors do not validate their own pairs."
        if any(w == worker.pk for _, w, _ in taken):
            return f"You have already labelled pair {pair.pair_id}."
    return None


def _next_position(taken: Sequence[tuple[int, int | None, bool]]) -> int:
    return max((p for p, *_ in taken), default=0) + 1


# --- a batch of labels at once ----------------------------------------------------------------


# The columns of a locked pair that the checks, the counters and the tallies read.
LOCKED_COLUMNS = (
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


def _labels_taken(pair_pks: Sequence[int]) -> dict[int, list[tuple[int, int | None, bool]]]:
    """{pair pk: [(position, worker id, whether the label counts), ...]} of these pairs' labels."""
    counts = Case(When(labels_that_count(), then=Value(True)), default=Value(False), output_field=BooleanField())
    taken: dict[int, list[tuple[int, int | None, bool]]] = {}
    for pair_pk, position, worker_id, counted in (
        ValidationLabel.objects.filter(pair_id__in=pair_pks)
        .annotate(counts=counts)
        .order_by()
        .values_list("pair_id", "position", "worker_id", "counts")
    ):
        taken.setdefault(pair_pk, []).append((position, worker_id, bool(counted)))
    return taken


def add_labels(
    labelled: Sequence[tuple[Pair, str] | tuple[Pair, str, int | None]],
    *,
    worker: Worker | None = None,
    seconds: float | None = None,
    releasing_places: bool = False,
    awaiting_market_session: int | None = None,
    first_sends_count: bool = False,
) -> list[ValidationLabel]:
    """Add one label to each of several pairs and move their counters, set-based, in one transaction.

    `labelled` is a list of (pair, label) or (pair, label, ordinal), each pair at most once (core
    labels: corpus.labels.to_stored). The rules (`label_refusal`) are checked for the whole batch
    before anything is written, in four statements whatever the batch's size: lock the pairs (in pk
    order, as every writer does), read their labels, insert the new labels, update the counters.
    Returns the new ValidationLabel rows in the order given; the caller's pair instances follow
    the database. `releasing_places`: each label comes from a claim that held a place on its pair
    (a validator's submit), so the pair's `held_places` drops by one in the same UPDATE.
    `awaiting_market_session`: the labels were written in this study session, whose market has not
    vouched for its ids yet: they are stored waiting (`labels_that_count` leaves them out) and move
    no counter, so the pairs stay in the queue for other validators; `release_awaiting_labels`
    counts them once the market vouches.
    `first_sends_count`: a pair that has its five labels already (another claimer of it sent first:
    validation's backup claims) takes nothing from this batch instead of refusing the whole of it;
    the others are labelled as usual.
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
        lock = (
            Pair.objects.select_for_update(no_key=True, of=("self",))
            .select_related("premise", "dataset")
            .filter(pk__in=ids)
            .order_by("pk")
            .only(*LOCKED_COLUMNS)
        )
        if worker is not None:  # whether the pair's team excluded the worker, in the same statement
            lock = lock.annotate(
                worker_excluded=Exists(
                    WorkerExclusion.objects.filter(worker_id=worker.pk, team_id=OuterRef("dataset__team_id"))
                )
            )
        locked = {pair.pk: pair for pair in lock}
        before = {pk: tallies.pair_key(row, row.premise.split, row.premise.genre_id) for pk, row in locked.items()}
        was = {pk: (row.gold_label, row.label_count) for pk, row in locked.items()}
        existing = _labels_taken(ids)
        new_labels, stopping_now = [], False
        for pair, label, ordinal in items:
            row = locked.get(pair.pk)
            if row is None:
                refusal = f"Pair {pair.pk} does not exist."
                break
            taken = existing.get(pair.pk, [])
            if releasing_places:  # nothing is written if a refusal follows
                row.held_places = max(0, row.held_places - 1)
            if first_sends_count and row.label_count >= LABELS_PER_PAIR:
                continue
            position = _next_position(taken)
            refusal = label_refusal(
                row,
                row.dataset.label_scheme,
                taken,
                worker,
                position,
                label,
                ordinal=ordinal,
                worker_excluded=getattr(row, "worker_excluded", False),
            )
            if refusal:
                break
            new_labels.append(
                ValidationLabel(
                    pair_id=row.pk,
                    worker=worker,
                    position=position,
                    label=label,
                    seconds=seconds,
                    ordinal=ordinal,
                    awaiting_market_session=awaiting_market_session,
                )
            )
            if awaiting_market_session is not None:
                continue  # counts nowhere yet: the pair's counters stay as they are
            vote_field = VOTE_FIELD[label]
            row.label_count += 1
            setattr(row, vote_field, getattr(row, vote_field) + 1)
            row.gold_label = row.adjudicated_label or gold_from_votes(
                row.entailment_votes, row.neutral_votes, row.contradiction_votes, row.imported_gold
            )
            if stops_when_decided(row):
                # The decided rule (corpus/stopping.py): the gold cannot change any more, so the
                # pair leaves the claim indexes in the same UPDATE that moves its counters.
                row.needs_validation, row.stopped_early, stopping_now = False, True, True
        if refusal is None:
            # The worker figures of the pairs' labels as they stand: a label in moves the leave-one-out
            # gold of the others (`corpus.worker_tally`), so the pairs' rows are read before and after.
            worker_rows = worker_tally.read(locked)
            created = ValidationLabel.objects.bulk_create(new_labels)
            # Absolute values are safe: the rows are locked since they were read.
            fields = [*COUNTERS, "held_places"] if releasing_places else list(COUNTERS)
            if stopping_now:
                fields += ["needs_validation", "stopped_early"]
            _update_counters(list(locked.values()), fields)
            # The maintained aggregates move in the same transaction: one INSERT of deltas.
            tallies.pairs_moved(
                [
                    (pk, before[pk], tallies.pair_key(row, row.premise.split, row.premise.genre_id))
                    for pk, row in locked.items()
                ]
            )
            labels_moved([move(row, *was[pk]) for pk, row in locked.items()])
            worker_tally.moved(worker_rows, locked)
    if refusal is not None:
        raise (WorkerExcluded if refusal == EXCLUDED_REFUSAL else LabelRefused)(refusal)
    for pair, _, _ in items:
        for name in (*COUNTERS, *tallies.FLAGS):
            setattr(pair, name, getattr(locked[pair.pk], name))
    return created


def _update_counters(rows: Sequence[Pair], fields: Sequence[str]) -> None:
    """Write these locked pairs' `fields` as they are in memory, in one statement: `bulk_update`'s
    CASE WHEN per field and pair cost more Python than anything else in a validator's submit."""
    columns = [tallies.column(Pair, name) for name in fields]
    update_rows(Pair._meta.db_table, columns, [(row.pk, *(getattr(row, name) for name in fields)) for row in rows])


# --- new pairs with their labels, in bulk ------------------------------------------------------


def create_premises(premises: Iterable[Premise], *, batch_size: int = 1000) -> list[Premise]:
    """Insert new premises (unsaved) with their tallies, in the caller's transaction; returns them.
    The one bulk way premises arrive, so the tallies never miss an importer."""
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
    """Insert new pairs of one dataset and split with their labels and counters, in the caller's
    transaction; returns the pairs.

    `labels[i]` is pair i's labels in position order, the author's first (its row names the pair's
    author; imported validators' labels have no worker); `ordinals[i]`, for ordinal datasets, its
    1–5 ratings. `needs_validation` (True/False) overrides the split's rule. A pair given an
    `adjudicated_label` (an imported file's gold that is not the majority, MPE) gets it as gold and
    an Adjudication row from the file, with `adjudication_reasons[i]` as its reason.
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
        if stops_when_decided(pair):  # imported labels that settle the gold already
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
    if written := [pair.pk for pair in created if pair.author_id is not None]:
        worker_tally.pairs_added(written)  # the writers' figures (imported validators' labels name no worker)
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


def _insert_labels(rows: Iterable[tuple[int, int, str, int | None]]) -> int:
    """Insert (pair pk, position, label, worker id) rows as multi-row INSERTs.

    Five labels a pair make labels most of an import's rows; building a ValidationLabel object
    per row for bulk_create took over half of an import's time, so they go in as plain rows.
    """
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    columns = [tallies.column(ValidationLabel, name) for name in ("pair", "position", "label", "worker", "created_at")]
    plain = [(*row, created_at) for row in rows]
    insert_rows(ValidationLabel._meta.db_table, columns, plain)
    return len(plain)


# --- labels waiting for a market's word (markets.identity) -------------------------------------


def release_awaiting_labels(session_id: int) -> list[int]:
    """Count the labels written in study session `session_id` now that its market vouched for it:
    their pairs are recounted from the label table (`corpus.recompute`), in the caller's transaction
    when there is one. Returns the pks of the pairs recounted."""
    with transaction.atomic():
        waiting = ValidationLabel.objects.filter(awaiting_market_session=session_id)
        pair_pks = sorted(set(waiting.values_list("pair_id", flat=True)))
        if not pair_pks:
            return []
        lock_pairs(pair_pks)  # the pairs first, as every writer locks them; then the labels
        worker_rows = worker_tally.read(pair_pks)
        ValidationLabel.objects.filter(awaiting_market_session=session_id).update(awaiting_market_session=None)
        # The labels count now: their leave-one-out gold and the others' move before the counters do
        # (the fix that follows moves the figures with the counters, as every fix does).
        worker_tally.moved(worker_rows, pair_pks)
        heal_pairs(pair_pks)
    return pair_pks
