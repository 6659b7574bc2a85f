"""recompute_gold beside validators who keep submitting (PostgreSQL, real concurrent transactions).

The fix runs in short batches with no table lock: a submit never waits for the whole
run, and a label committed between the check and a batch's write is never lost: the batch locks
its pairs before it recounts them, so it counts every label committed before, and a submit that
comes later waits for the batch and moves the counters it wrote.
"""

import threading
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections

from corpus import recompute as recompute_module
from corpus.models import Label, Pair, PairTally, Worker
from corpus.recompute import recompute_gold
from corpus.services import add_labels
from corpus.tallies import PAIRS_ONLY, check_and_rebuild
from tests.importers.helpers import make_dataset, make_labelled_pairs

pytestmark = [pytest.mark.django_db(transaction=True)]

PAIRS = 120


def make_validators(count, prefix="v"):
    return [Worker.objects.create(user=User.objects.create(username=f"{prefix}{i}")) for i in range(count)]


def labels_of(pair):
    return {label.label for label in pair.labels.all()}


def test_labels_submitted_while_every_pair_is_fixed_are_all_counted(monkeypatch):
    monkeypatch.setattr(recompute_module, "FIX_BATCH", 7)  # many short batches, so submits fall between and inside them
    pairs = make_labelled_pairs(make_dataset("race"), [[Label.ENTAILMENT, Label.NEUTRAL]] * PAIRS)
    # Counters at zero: every pair disagrees with its labels, the worst case for a recompute.
    validators = make_validators(3)
    start, errors, submitted = threading.Barrier(len(validators) + 1), [], []

    def submit_labels(worker, offset):
        try:
            start.wait()
            for index in range(offset, PAIRS, 2):
                pair = Pair.objects.get(pk=pairs[index].pk)
                add_labels([(pair, Label.CONTRADICTION)], worker=worker)
                submitted.append(pair.pk)
        except Exception as error:
            errors.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit_labels, args=(w, i % 2)) for i, w in enumerate(validators)]
    for thread in threads:
        thread.start()
    start.wait()
    try:
        report = recompute_gold()
    finally:
        for thread in threads:
            thread.join(timeout=120)
    assert errors == []
    assert report.fixed >= 1
    # Whatever the interleaving, every label counts once: the counters equal a count of the label
    # table, nothing is left to fix, and the maintained aggregates agree with the pairs.
    assert recompute_gold(fix=False).disagreements == 0
    assert check_and_rebuild(None, PAIRS_ONLY, repair=False).keys == 0  # the pair tallies (no label moves a length)
    for pair in Pair.objects.filter(pk__in=[p.pk for p in pairs]):
        assert pair.label_count == pair.labels.count() == 2 + submitted.count(pair.pk)
        assert pair.contradiction_votes == submitted.count(pair.pk)


def test_a_submit_goes_through_while_a_recompute_is_half_way(monkeypatch):
    """The recompute is held after its first batch; a submit on a pair it has yet to fix completes."""
    monkeypatch.setattr(recompute_module, "FIX_BATCH", 2)
    pairs = make_labelled_pairs(make_dataset("halfway"), [[Label.ENTAILMENT, Label.ENTAILMENT]] * 6)
    (worker,) = make_validators(1)
    first_batch_done, submit_done = threading.Event(), threading.Event()
    real_recount = recompute_module._recount_locked
    outcome: dict[str, Any] = {}  # the flag the recount saw, the recompute's report

    def recount_then_pause(pair_pks):
        rows = real_recount(pair_pks)
        if not first_batch_done.is_set():
            first_batch_done.set()
            outcome["submit finished meanwhile"] = submit_done.wait(timeout=60)
        return rows

    monkeypatch.setattr(recompute_module, "_recount_locked", recount_then_pause)

    def recompute():
        try:
            outcome["report"] = recompute_gold()
        finally:
            connections.close_all()

    thread = threading.Thread(target=recompute)
    thread.start()
    assert first_batch_done.wait(timeout=60)
    # The recompute is inside its run (a batch's transaction open, more batches to come): the last
    # pair is in a later batch, and its submit must not wait for the run to end.
    last = Pair.objects.get(pk=pairs[-1].pk)
    add_labels([(last, Label.NEUTRAL)], worker=worker)
    submit_done.set()
    thread.join(timeout=60)
    assert outcome["submit finished meanwhile"] is True
    assert outcome["report"].fixed == 6
    assert recompute_gold(fix=False).disagreements == 0
    last.refresh_from_db()
    assert (last.label_count, last.entailment_votes, last.neutral_votes) == (3, 2, 1)


def test_a_check_that_waits_for_a_fold_in_progress_reads_after_it(monkeypatch):
    """A fold holding the fold lock when the check starts, then committing: the check waits for it
    and takes its snapshot after it, so the rebuild deletes no row the fold deleted (it used to fix
    its snapshot first, wait, and fail with "could not serialize access due to concurrent delete")."""
    from django.db import connection, transaction

    from corpus import tallies

    pairs = make_labelled_pairs(make_dataset("folding"), [[Label.ENTAILMENT, Label.NEUTRAL]] * 6)
    for validator in make_validators(2, "f"):  # two batches: keys with more than one delta row
        add_labels([(Pair.objects.get(pk=pair.pk), Label.NEUTRAL) for pair in pairs], worker=validator)
    folding, checked, errors = threading.Event(), threading.Event(), []

    def fold_slowly():
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [tallies.FOLD_LOCK])
                rows = PairTally.objects.count()
                tallies.fold()
                assert PairTally.objects.count() < rows  # it deleted deltas
                folding.set()
                checked.wait(timeout=1.5)  # the check is waiting on the lock by now
        except Exception as error:
            errors.append(repr(error))
        finally:
            folding.set()
            connections.close_all()

    thread = threading.Thread(target=fold_slowly)
    thread.start()
    folding.wait(timeout=60)
    assert errors == []
    try:
        report = tallies.check_and_rebuild()
    finally:
        checked.set()
        thread.join(timeout=60)
    assert errors == []
    assert report.rebuilt
    assert check_and_rebuild(repair=False).keys == 0
