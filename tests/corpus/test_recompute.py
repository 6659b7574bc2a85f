"""recompute_gold: finds counters that disagree with the label table and fixes them, a batch of pairs an UPDATE."""

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corpus.gold import gold_from_votes
from corpus.models import NO_GOLD, Dataset, Pair, ValidationLabel, Worker
from corpus.recompute import recompute_gold
from tests.importers.helpers import C, E, N, make_dataset, make_labelled_pairs

pytestmark = pytest.mark.django_db

TABLE = [
    [E, E, E, N, C],
    [N, E, E, E, N],
    [C, C, N, E, N],
    [E, N],
    [C],
]


def counters(pair):
    pair.refresh_from_db()
    return (pair.label_count, pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes, pair.gold_label)


def expected_counters(labels):
    e, n, c = labels.count(E), labels.count(N), labels.count(C)
    return (len(labels), e, n, c, gold_from_votes(e, n, c))


def test_fresh_pairs_are_all_reported_then_fixed_from_the_label_table():
    pairs = make_labelled_pairs(make_dataset(), TABLE)
    # The helper leaves counters at zero, so every pair disagrees with its labels.
    report = recompute_gold()
    assert report.pairs_checked == len(TABLE)
    assert report.disagreements == len(TABLE)
    assert report.fixed == len(TABLE)
    for pair, labels in zip(pairs, TABLE, strict=False):
        assert counters(pair) == expected_counters(labels)
    again = recompute_gold()
    assert (again.disagreements, again.fixed, again.examples) == (0, 0, [])


def test_a_corrupted_counter_is_reported_with_its_stored_and_recomputed_values():
    pairs = make_labelled_pairs(make_dataset(), TABLE)
    recompute_gold()
    Pair.objects.filter(pk=pairs[1].pk).update(neutral_votes=4, gold_label=N)
    report = recompute_gold(fix=False)
    assert report.disagreements == 1 and report.fixed == 0
    assert report.examples == [{"pair_id": "p1", "stored": (5, 3, 4, 0, N), "recomputed": (5, 3, 2, 0, E)}]
    assert counters(pairs[1]) == (5, 3, 4, 0, N)  # a check changes nothing
    report = recompute_gold()
    assert (report.disagreements, report.fixed) == (1, 1)
    assert counters(pairs[1]) == (5, 3, 2, 0, E)


def test_the_fix_of_a_batch_is_one_update_statement():
    def fix_statements(times):
        make_labelled_pairs(make_dataset(f"d{times}"), TABLE * times)
        with CaptureQueriesContext(connection) as queries:
            report = recompute_gold()
        assert report.fixed == len(TABLE) * times
        return [q["sql"] for q in queries.captured_queries]

    small = fix_statements(4)
    updates = [sql for sql in small if sql.lstrip().upper().startswith("UPDATE")]
    assert len(updates) == 1
    # count, compare (pks), the batch's lock, recount and update with its tally deltas; then the
    # maintained aggregates (every folded tally: a lock, grouped reads, deletes and inserts). None
    # of it grows with the pairs: twice the pairs, in the same one batch, take as many statements.
    # The first dataset goes too: the fold's work per dataset it touched (artifacts' kept listing)
    # is the same for each, so both measurements touch one dataset.
    Dataset.objects.all().delete()
    assert len(fix_statements(8)) == len(small)


def test_a_pair_whose_labels_are_gone_gets_zero_counters():
    pairs = make_labelled_pairs(make_dataset(), [[E, E, E, E, E]])
    recompute_gold()
    ValidationLabel.objects.filter(pair=pairs[0]).delete()
    report = recompute_gold()
    assert report.disagreements == 1
    assert counters(pairs[0]) == (0, 0, 0, 0, NO_GOLD)


def make_validators(count):
    # Users without a password: hashing four passwords would be most of this test's time.
    return [Worker.objects.create(user=User.objects.create(username=f"validator{i}")) for i in range(count)]


def test_labels_of_excluded_workers_are_left_out():
    pairs = make_labelled_pairs(make_dataset(), [[E]])
    pair = pairs[0]
    guesser, *others = make_validators(4)
    for position, (worker, label) in enumerate(zip([guesser, *others], [E, N, N, N], strict=False), start=2):
        ValidationLabel.objects.create(pair=pair, worker=worker, position=position, label=label)
    recompute_gold()
    assert counters(pair) == (5, 2, 3, 0, N)
    # Excluded outside the service (a bulk write): the label's mark moves, the counters do not.
    ValidationLabel.objects.filter(worker=others[0]).update(excluded=True)
    report = recompute_gold()
    assert report.disagreements == 1
    assert counters(pair) == (4, 2, 2, 0, NO_GOLD)


def test_dataset_scope_leaves_other_datasets_alone():
    ours = make_labelled_pairs(make_dataset("ours"), [[E, E, E, E, E]], prefix="o")
    theirs = make_labelled_pairs(make_dataset("theirs"), [[C, C, C, C, C]], prefix="t")
    report = recompute_gold(dataset=Dataset.objects.get(slug="ours"))
    assert report.pairs_checked == 1 and report.fixed == 1
    assert counters(ours[0]) == (5, 5, 0, 0, E)
    assert counters(theirs[0]) == (0, 0, 0, 0, NO_GOLD)


def test_command_reports_then_fixes_and_check_mode_fails_on_disagreement(capsys):
    make_labelled_pairs(make_dataset("cmd"), TABLE)
    with pytest.raises(CommandError, match="5 pairs disagree"):
        call_command("recompute_gold", "--dataset", "cmd", "--check")
    call_command("recompute_gold", "--dataset", "cmd")
    out = capsys.readouterr().out
    assert "disagree with the label table: 5" in out and "pairs fixed: 5" in out
    call_command("recompute_gold", "--dataset", "cmd", "--check")
    assert "pairs fixed: 0" in capsys.readouterr().out
    with pytest.raises(CommandError, match="no dataset"):
        call_command("recompute_gold", "--dataset", "nope")


@pytest.mark.django_db(transaction=True)
def test_a_label_committed_during_the_recompute_is_not_lost():
    """A validator's transaction (label + counters) open while the recompute starts: the recompute waits for it."""
    import threading

    from django.db import connection, connections, transaction
    from django.db.models import F

    from tests.conftest import wait_for

    pairs = make_labelled_pairs(make_dataset("live"), [[E, E, N, N]])
    recompute_gold()
    pair = pairs[0]
    Pair.objects.filter(pk=pair.pk).update(label_count=0)  # something for the recompute to fix
    outcome = {}

    def recompute_in_another_connection():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                outcome["pid"] = cursor.fetchone()[0]
            outcome["report"] = recompute_gold()
        finally:
            connections.close_all()

    with transaction.atomic():
        ValidationLabel.objects.create(pair=pair, position=5, label=E)
        Pair.objects.filter(pk=pair.pk).update(
            label_count=F("label_count") + 1, entailment_votes=F("entailment_votes") + 1
        )
        thread = threading.Thread(target=recompute_in_another_connection)
        thread.start()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (own_pid,) = cursor.fetchone()

        def blocked_by_us_or_finished():
            if "report" in outcome or not thread.is_alive():
                return "finished"
            if "pid" not in outcome:
                return None
            with connection.cursor() as cursor:  # the lock manager's live view, not a snapshot
                cursor.execute("SELECT %s = ANY(pg_blocking_pids(%s))", [own_pid, outcome["pid"]])
                return "blocked" if cursor.fetchone()[0] else None

        state = wait_for(blocked_by_us_or_finished, timeout=60, interval=0.02, message="the recompute to start")
        assert state == "blocked", "the recompute should wait for the open label transaction"
    thread.join(timeout=30)
    assert outcome["report"].fixed == 1
    assert counters(pair) == (5, 3, 2, 0, E)
    assert recompute_gold(fix=False).disagreements == 0
