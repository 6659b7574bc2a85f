"""The writing claim's order table (`collection_premise_claim_order`), kept from the premises by
triggers: every way a premise is written reaches its row, a claim writes that row and never the
premise, and a premise writer (a submit, a hold, the split draw) waiting on a claimer's row never
deadlocks with the claim's commit."""

import threading
import time

import pytest
from django.db import connection, connections, transaction
from django.db.models import F

from collection import premise_pool, splits, writing_claims
from corpus.models import Genre, Premise, PremiseStatus
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.present import present


def order_rows() -> dict[int, tuple[int, int, bool, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT premise_id, dataset_id, genre_id, claimable, writings_done FROM {writing_claims.ORDER_TABLE}"
        )
        return {pk: tuple(rest) for pk, *rest in cursor.fetchall()}


def as_premises_say() -> dict[int, tuple[int, int, bool, int]]:
    return {
        premise.pk: (
            premise.dataset_id,
            premise.genre_id,
            premise.status == PremiseStatus.AVAILABLE and premise.split != "",
            premise.writings_done,
        )
        for premise in Premise.objects.all()
    }


def claims_made(premise: Premise) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT claims_made FROM {writing_claims.ORDER_TABLE} WHERE premise_id = %s", [premise.pk])
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_every_way_a_premise_is_written_reaches_its_claim_order_row():
    dataset, genre = writing_setup("order-rows")
    other_genre = Genre.objects.create(slug="order-other", name="Other", is_training=True, family=genre.family)
    first, second, third, fourth = add_premises(dataset, genre, 4)
    with connection.cursor() as cursor:  # a bulk load's one statement, as COPY or an import writes them
        cursor.execute(
            "INSERT INTO collection_premise (dataset_id, genre_id, prompt_id, text, text_hash, parse, binary_parse,"
            " split, status, writings_done, source, created_at)"
            " SELECT %s, %s, 'bulk' || n, 'Bulk premise ' || n || '.', md5(n::text), '', '', '', 'available', 0, '',"
            " now() FROM generate_series(1, 5) n",
            [dataset.pk, genre.pk],
        )
    assert order_rows() == as_premises_say()
    assert len(order_rows()) == 9
    bulk = Premise.objects.filter(prompt_id__startswith="bulk").values_list("pk", flat=True)
    assert [order_rows()[pk][2] for pk in bulk] == [False] * 5  # no split: not claimable

    Premise.objects.filter(pk=first.pk).update(status=PremiseStatus.HELD)
    Premise.objects.filter(pk=second.pk).update(split="")
    Premise.objects.filter(pk=third.pk).update(writings_done=F("writings_done") + 2)
    Premise.objects.filter(pk=fourth.pk).update(genre=other_genre)
    Premise.objects.filter(prompt_id__startswith="bulk").update(split="train")
    rows = order_rows()
    assert rows == as_premises_say()
    assert rows[first.pk][2] is False and rows[second.pk][2] is False
    assert rows[third.pk][3] == 2 and rows[fourth.pk][1] == other_genre.pk
    assert sum(claimable for (_, _, claimable, _) in rows.values()) == 7

    Premise.objects.filter(pk__in=[first.pk, third.pk]).delete()
    assert set(order_rows()) == set(Premise.objects.values_list("pk", flat=True))
    assert len(order_rows()) == 7
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred check left pending on the rows
        cursor.execute("TRUNCATE collection_premise CASCADE")
    assert order_rows() == {}


@pytest.mark.django_db
def test_a_claim_counts_itself_on_the_order_row_and_never_writes_the_premise(make_worker):
    dataset, genre = writing_setup("order-claim", writings_per_premise=2)
    (premise,) = add_premises(dataset, genre, 1)

    def premise_version() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SELECT xmin::text FROM collection_premise WHERE id = %s", [premise.pk])
            return cursor.fetchone()[0]

    before = premise_version()
    for _ in range(2):
        assert present(writing_claims.claim_next_premise(make_worker(), dataset=dataset)).premise_id == premise.pk
    assert claims_made(premise) == 2
    assert premise_version() == before
    assert writing_claims.claim_next_premise(make_worker(), dataset=dataset) is None


def backends_waiting_on_a_lock(own_pids: set[int]) -> int:
    # This database's only: the suite's other workers run their own lock tests at the same time.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() "
            "AND NOT (pid = ANY(%s))",
            [list(own_pids)],
        )
        return cursor.fetchone()[0]


def submit_on(premise: Premise) -> None:
    """A writing submit's locks and its count of the writing."""
    with transaction.atomic():
        locked = writing_claims.lock_written_premise(premise.pk)
        locked.writings_done += 1
        locked.save(update_fields=["writings_done"])


def hold(premise: Premise) -> None:
    premise_pool.hold_premises(Premise.objects.filter(pk=premise.pk))


def draw_splits(premise: Premise) -> None:
    splits.assign_splits(premise.dataset, dev=0, test=0)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("door", [submit_on, hold, draw_splits], ids=["submit", "hold", "split draw"])
def test_a_premise_writer_waiting_on_a_claimers_order_row_lets_the_claims_commit_through(door):
    """A claimer holds the premise's order row and, at its commit, key-shares the premise (its
    insert's foreign key); a writer of the premise (a submit, a researcher's hold, the split draw)
    locks the premise, then waits on the order row. With the premise locked FOR UPDATE the two would
    wait on each other: a deadlock."""
    dataset, genre = writing_setup("order-locks")
    (premise,) = add_premises(dataset, genre, 1, split="")
    claimer = connections.create_connection("default")
    claimer.set_autocommit(False)
    with claimer.cursor() as cursor:
        cursor.execute("SET lock_timeout = '10s'")
        cursor.execute(
            f"SELECT 1 FROM {writing_claims.ORDER_TABLE} WHERE premise_id = %s FOR NO KEY UPDATE", [premise.pk]
        )
        cursor.execute("SELECT pg_backend_pid()")
        claimer_pid = cursor.fetchone()[0]
    errors: list[BaseException] = []

    def write() -> None:
        try:
            door(premise)
        except BaseException as error:  # reported by the assertion after the join
            errors.append(error)
        finally:
            connections.close_all()

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        own_pid = cursor.fetchone()[0]
    writer = threading.Thread(target=write)
    writer.start()
    try:
        deadline = time.monotonic() + 10
        while backends_waiting_on_a_lock({claimer_pid, own_pid}) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert backends_waiting_on_a_lock({claimer_pid, own_pid}) == 1  # the writer, on the order row
        with claimer.cursor() as cursor:  # what the claim's foreign key takes at its commit
            cursor.execute("SELECT 1 FROM collection_premise WHERE id = %s FOR KEY SHARE", [premise.pk])
        claimer.commit()
    finally:
        claimer.close()
        writer.join(timeout=30)
    assert not errors, errors
    premise.refresh_from_db()
    assert order_rows()[premise.pk] == as_premises_say()[premise.pk]
