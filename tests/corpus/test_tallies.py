"""Maintained aggregates (corpus.tallies): every writer moves them, and they equal the truth.

The truth is what `recompute_gold` groups from the pairs and premises; a drift is any key where
the maintained sum differs. After a random mix of labels (one at a time and in batches),
exclusions and re-inclusions, imports, split moves and folds, there is none, and the agreement
report read from the tallies equals the one grouped from every pair.
"""

import random
import time

import pytest
from django.contrib.auth.models import User

from collection.splits import assign_splits
from corpus import tallies
from corpus.agreement import agreement_stats
from corpus.exclusions import set_workers_excluded
from corpus.models import LengthKind, LengthTally, Pair, PairTally, Premise, Split, WordTally, Worker
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from corpus.services import LabelRefused, add_label, add_labels
from importers.services import import_pairs_file
from teams.models import default_team_id
from tests import factories
from tests.present import present

pytestmark = pytest.mark.django_db

LABELS = ["entailment", "neutral", "contradiction"]
# Odd spacing on purpose: the Python word count at insert must equal the SQL one of the truth.
TEXTS = ["A  man   plays.", " Two dogs run on the beach ", "Nobody\tis here today.", "One", "a    b     c      d"]


def assert_no_drift(dataset=None):
    report = tallies.check_and_rebuild(dataset, repair=False)
    assert (report.keys, report.rows, report.examples) == (0, 0, [])


def validators(count, prefix="v"):
    return [Worker.objects.create(user=User.objects.create(username=f"{prefix}{i}")) for i in range(count)]


def write_jsonl(path, rows):
    import json

    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def corpus_rows(count, seed):
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        labels = [rng.choice(LABELS) for _ in range(rng.choice([1, 5]))]
        rows.append(
            {
                "pairID": f"imp{seed}-{i}",
                "promptID": f"imp-prompt{seed}-{i // 2}",
                "genre": rng.choice(["fiction", "travel"]),
                "sentence1": rng.choice(TEXTS) + f" {i // 2}",
                "sentence2": rng.choice(TEXTS),
                "gold_label": "-",
                "annotator_labels": labels,
            }
        )
    return rows


def test_a_random_mix_of_writes_leaves_the_tallies_equal_to_the_truth(tmp_path):
    rng = random.Random(12)
    dataset = factories.dataset("mixed")
    genres = [factories.genre("fiction"), factories.genre("travel")]
    premises = [
        factories.premise(
            dataset, rng.choice(genres), split=rng.choice([Split.DEV, Split.TRAIN, ""]), text=rng.choice(TEXTS)
        )
        for _ in range(12)
    ]
    pairs = [
        factories.pair(dataset, rng.choice(premises), [rng.choice(LABELS)], hypothesis=rng.choice(TEXTS))
        for _ in range(30)
    ]
    workers = validators(8)
    assert_no_drift()
    for step in range(120):
        action = rng.random()
        if action < 0.45:
            pair = rng.choice(pairs)
            try:
                worker = rng.choice([*workers, None])
                add_label(pair, rng.choice(LABELS), worker=worker and Worker.objects.get(pk=worker.pk))
            except LabelRefused:
                pass
        elif action < 0.8:
            batch = rng.sample(pairs, rng.randint(1, 5))
            try:
                worker = Worker.objects.get(pk=rng.choice(workers).pk)  # fresh: is_excluded may have moved
                add_labels([(pair, rng.choice(LABELS)) for pair in batch], worker=worker)
            except LabelRefused:
                pass
        elif action < 0.88:
            chosen = Worker.objects.filter(pk=rng.choice(workers).pk)
            set_workers_excluded(chosen, rng.random() < 0.6, teams=[default_team_id()])
        elif action < 0.93:
            import_pairs_file(
                write_jsonl(tmp_path / f"import{step}.jsonl", corpus_rows(6, step)), dataset, split=Split.TEST
            )
            pairs = list(Pair.objects.filter(dataset=dataset))
        elif action < 0.96:
            tallies.fold()
        else:
            assign_splits(dataset, dev=rng.randint(0, 9), test=rng.randint(0, 9), seed=step)
        if step % 30 == 29:
            # Exclusions run a recompute, which rebuilds the tallies: the other writers must
            # stand on their own in between, so check before any further recompute.
            assert_no_drift()
    assert_no_drift()
    assert PairTally.objects.exists() and LengthTally.objects.filter(kind=LengthKind.PREMISE).exists()
    for split in (None, Split.DEV, Split.TEST, Split.TRAIN):
        assert agreement_stats(Scope.of_dataset(dataset, split)) == agreement_stats(
            Scope.of_dataset(dataset, split), source="pairs"
        )
    report = recompute_gold(lengths=True)
    assert report.disagreements == 0
    assert present(report.tally_drift).keys == 0


def test_a_write_that_skips_the_tallies_is_reported_as_drift_and_repaired():
    dataset = factories.dataset("drifting")
    premise = factories.premise(dataset)
    pair = factories.pair(dataset, premise, ["entailment", "entailment"])
    # A raw update no writer of corpus.services made: the pair's counters and the gold report move.
    Pair.objects.filter(pk=pair.pk).update(hypothesis="now four words long")
    PairTally.objects.create(
        dataset=dataset,
        split="dev",
        genre=premise.genre,
        author_label="neutral",
        label_count=1,
        entailment_votes=0,
        neutral_votes=1,
        contradiction_votes=0,
        n=3,
    )
    report = recompute_gold(fix=False, lengths=True)
    assert present(report.tally_drift).keys == 3  # the stray key, and the hypothesis length moved (old and new length)
    assert present(report.tally_drift).rows == 5
    assert "maintained aggregates drifting" in report.summary()
    assert not present(report.tally_drift).rebuilt
    report = recompute_gold(lengths=True)
    assert present(report.tally_drift).rebuilt
    assert_no_drift()


def test_premises_of_two_splits_moving_into_one_add_up_in_every_tally():
    dataset = factories.dataset("merging")
    same_text = "The ferry left the harbour at dawn with six passengers."
    for split in (Split.DEV, Split.TEST):
        premise = factories.premise(dataset, split=split, text=same_text)
        factories.pair(dataset, premise, ["entailment"], hypothesis="A boat left the harbour.")
    moving = Premise.objects.filter(dataset=dataset)
    tallies.premises_moving(moving, Split.TRAIN)
    moving.update(split=Split.TRAIN)
    assert_no_drift(dataset)


def test_folding_keeps_every_sum_and_leaves_one_row_per_key():
    dataset = factories.dataset("folded")
    premise = factories.premise(dataset)
    pairs = [factories.pair(dataset, premise, ["neutral"]) for _ in range(4)]
    for worker, pair in zip(validators(4, "f"), pairs, strict=False):
        add_labels([(pair, "neutral")], worker=worker)
    before = agreement_stats(Scope.of_dataset(dataset))
    rows_before = PairTally.objects.count()
    tallies.fold()
    assert PairTally.objects.count() < rows_before
    keys = PairTally.objects.values_list(*tallies.PAIR_KEY)
    assert len(set(keys)) == len(keys)
    assert agreement_stats(Scope.of_dataset(dataset)) == before
    assert_no_drift()


def test_the_agreement_report_reads_the_tallies_not_the_pairs(django_assert_max_num_queries):
    dataset = factories.dataset("report")
    premise = factories.premise(dataset)
    factories.pair(dataset, premise, ["entailment"] * 5)
    # Pairs changed behind the tallies' back: the report follows the tallies (until a recompute).
    Pair.objects.filter(dataset=dataset).update(author_label="neutral")
    with django_assert_max_num_queries(2):
        stats = agreement_stats(Scope.of_dataset(dataset))
    assert stats["gold_eq_author"] == 1.0
    assert agreement_stats(Scope.of_dataset(dataset), source="pairs")["gold_eq_author"] == 0.0


def test_a_long_writer_folds_its_deltas_once_when_it_ends():
    """recompute_gold's fix commits hundreds of batches of deltas: they are folded once, when it
    ends, not left for the beat (and no batch's commit folds)."""
    dataset = factories.dataset("deferred")
    premise = factories.premise(dataset)
    pairs = [factories.pair(dataset, premise, ["neutral"]) for _ in range(4)]
    with tallies.folds_deferred():
        for worker, pair in zip(validators(4, "d"), pairs, strict=False):
            add_labels([(pair, "neutral")], worker=worker)
        rows_inside = PairTally.objects.count()
    assert PairTally.objects.count() < rows_inside
    assert_no_drift()


def test_no_commit_folds_and_the_beat_task_does(settings, django_capture_on_commit_callbacks):
    """No writer's request folds, with a broker or without (a fold reads every tally table): a
    commit leaves its deltas, the scheduled task folds them."""
    from corpus.tasks import fold_tallies

    assert any(entry["task"] == fold_tallies.name for entry in settings.CELERY_BEAT_SCHEDULE.values())
    dataset = factories.dataset("beat")
    premise = factories.premise(dataset)
    pairs = [factories.pair(dataset, premise, ["neutral"]) for _ in range(4)]
    rows_before = PairTally.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        for worker, pair in zip(validators(4, "b"), pairs, strict=False):
            add_labels([(pair, "neutral")], worker=worker)
    rows_after_commits = PairTally.objects.count()
    assert rows_after_commits > rows_before  # every label's deltas, unfolded
    fold_tallies.apply().get()
    assert PairTally.objects.count() < rows_after_commits
    assert_no_drift()


@pytest.mark.django_db(transaction=True)
def test_a_fold_leaves_room_for_the_next_deltas_not_a_larger_table():
    """With autovacuum off (or behind), the rows a fold deleted stayed in the table and
    each fold grew it by the rows it wrote. A fold vacuums what it folded: the next deltas and the
    next fold fit in the room the last one left."""
    from django.db import connection

    dataset, genre = factories.dataset("roomy"), factories.genre("fiction")
    table = WordTally._meta.db_table

    held: list[tuple[object, ...]] = []

    def others_holding_snapshots():
        # VACUUM keeps every row an open snapshot on this database may still see: another backend
        # here (the suite's Celery worker in a task, an autovacuum ANALYZE) would make the fold's
        # room look missing. The fold is measured once they are done (at most 30 s).
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid, backend_type, left(query, 80) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL"
            )
            return cursor.fetchall()

    def deltas_folded():
        for _ in range(40):  # 40 transactions of deltas on the same 100 keys
            tallies.insert_deltas(
                WordTally,
                tallies.WORD_KEY,
                {(dataset.pk, "train", genre.pk, "neutral", f"w{i}"): 1 for i in range(100)},
            )
        deadline = time.monotonic() + 30
        while (others := others_holding_snapshots()) and time.monotonic() < deadline:
            time.sleep(0.1)
        held.extend(others)
        tallies.fold()
        assert WordTally.objects.filter(dataset=dataset).count() == 100

    def size():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_relation_size(%s)", [table])
            return cursor.fetchone()[0]

    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    # A snapshot taken between the wait and the fold (a task or an ANALYZE starting just then) still
    # keeps one fold's rows: three tries of three rounds, and without the fold's VACUUM every try
    # grows the table (4,000 more rows a round).
    tries: list[tuple[int, int]] = []
    try:
        deltas_folded()
        for _ in range(3):
            after_one = size()
            for _ in range(3):
                deltas_folded()
            tries.append((after_one, size()))
            if size() <= after_one + 2 * 8192:
                break
        else:
            raise AssertionError(("sizes before and after", tries, "snapshots held by", held))
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")
    folds = 1 + 3 * len(tries)
    assert sum(WordTally.objects.filter(dataset=dataset).values_list("n", flat=True)) == folds * 40 * 100


def test_the_validation_flags_move_the_pair_tally_with_every_writer_of_them():
    """The pair tally keys `needs_validation` and `stopped_early` (the cost page's pool,
    the adjudication page's settled pairs), so marking pairs for validation, a train sample, a
    stopping rule's stops and the fixed rule's reopening all move it: no drift after each."""
    from corpus.models import StoppingRule
    from corpus.services import set_needs_validation
    from corpus.stopping_policies import set_stopping_policy
    from validation.services import sample_train_for_validation

    dataset = factories.dataset("flagged")
    workers = validators(4)
    dev = [factories.pair(dataset, factories.premise(dataset, split=Split.DEV), ["entailment"]) for _ in range(6)]
    train = [factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), ["neutral"]) for _ in range(8)]
    for pair in dev[:4]:
        add_labels([(pair, "entailment")], worker=workers[0])
        add_labels([(pair, "entailment")], worker=workers[1])  # three agree: settled under the decided rule
    assert_no_drift()
    assert set_needs_validation(Pair.objects.filter(pk__in=[p.pk for p in train[:3]]), True) == 3
    assert_no_drift()
    _, _, stopped = set_stopping_policy(dataset, Split.DEV, StoppingRule.DECIDED)
    assert stopped == 4
    assert_no_drift()
    set_stopping_policy(dataset, Split.DEV, StoppingRule.FIXED)  # reopens them
    assert not Pair.objects.filter(stopped_early=True).exists()
    assert_no_drift()
    assert set_needs_validation(Pair.objects.filter(pk__in=[p.pk for p in dev[4:]]), False) == 2
    sample_train_for_validation(dataset, 0.75, seed=3)
    assert_no_drift()
    queued = tallies.pair_counts(Scope.of_dataset(dataset), by=("needs_validation", "stopped_early"))
    assert {(q, s): n for q, s, n in queued} == {(True, False): 4 + 6, (False, False): 4}
