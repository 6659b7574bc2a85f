"""Each pair's counted labels in their export slots (corpus migration 0038, the table the export's
lines join): whatever writes the labels (an import, a validator, a replacement, an exclusion, the
market's word, an erasure, a rating, a delete), the table holds what the Python definition
(`modeling.snapshots.selectors.counted_label_slots` of the labels that count) says, row for row."""

import importlib
import threading
from collections import defaultdict
from typing import Any

import pytest
from django.db import connection, connections

from corpus.models import Label, Pair, ValidationLabel
from corpus.selectors import labels_that_count
from corpus.services import add_labels, release_awaiting_labels
from modeling.snapshots.database_lines import COUNTED_TABLE
from modeling.snapshots.selectors import counted_label_slots
from tests.modeling.test_export_sql_lines import awkward_corpus

L = Label
Slots = tuple[list[str | None], list[int | None]]


def expected() -> dict[int, Slots]:
    """{pair id: (the five slots' labels, their ratings)} by the Python definition."""
    counted: dict[int, list[tuple[int, str, int | None]]] = defaultdict(list)
    rows = ValidationLabel.objects.filter(labels_that_count()).order_by("pair_id", "position")
    for pair, position, label, rating in rows.values_list("pair_id", "position", "label", "ordinal"):
        counted[pair].append((position, label, rating))
    slots: dict[int, Slots] = {}
    for pair, labels in counted.items():
        words: list[str | None] = [None] * 5
        ratings: list[int | None] = [None] * 5
        for slot, label, rating in counted_label_slots(labels):
            words[slot - 1], ratings[slot - 1] = label, rating
        slots[pair] = (words, ratings)
    return slots


def table() -> dict[int, Slots]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pair_pk, slot_labels, slot_ratings FROM {COUNTED_TABLE}")
        return {pair: (labels, ratings) for pair, labels, ratings in cursor.fetchall()}


def row_version(pair: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT ctid::text FROM {COUNTED_TABLE} WHERE pair_pk = %s", [pair])
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_every_way_labels_change_leaves_the_table_as_the_python_definition_says(make_worker: Any) -> None:
    dataset = awkward_corpus(make_worker)  # imports, replacements, waiting labels, ratings, excluded authors
    assert table() == expected()
    slots = [labels for labels, _ in expected().values()]
    assert any(None not in labels for labels in slots), "no pair with five counted labels"
    healed = ValidationLabel.objects.filter(labels_that_count(), position__gt=5).values_list("pair_id", flat=True)
    assert healed and all(None not in table()[pair][0] for pair in healed), "no healed pair, or one not in order"

    five = Pair.objects.filter(dataset=dataset, label_count=5).order_by("pk").first()
    assert five is not None
    ValidationLabel.objects.filter(pair=five, position=3).update(excluded=True)  # a blank slot between two
    assert table()[five.pk][0][2] is None and table()[five.pk][0][3] is not None
    assert table() == expected()

    validator = make_worker()
    open_pairs = list(Pair.objects.filter(dataset=dataset, label_count__lt=5).order_by("pk")[:4])
    add_labels([(pair, L.NEUTRAL) for pair in open_pairs], worker=validator, seconds=2.0)
    assert table() == expected()

    ValidationLabel.objects.filter(worker=validator).update(excluded=True)  # an exclusion marks them
    assert table() == expected()
    ValidationLabel.objects.filter(worker=validator).update(excluded=False)  # and readmits them
    assert table() == expected()

    release_awaiting_labels(7)  # the market vouched for the waiting labels
    assert table() == expected()

    rated = ValidationLabel.objects.filter(pair__dataset=dataset, position=2).order_by("pk").first()
    assert rated is not None
    ValidationLabel.objects.filter(pk=rated.pk).update(ordinal=4)
    assert table() == expected()
    assert table()[rated.pair_id][1][1] == 4

    moved = ValidationLabel.objects.filter(pair__dataset=dataset, position=5).order_by("pk").first()
    assert moved is not None
    ValidationLabel.objects.filter(pk=moved.pk).update(position=7)  # a label moved out of the first five
    assert table() == expected()

    ValidationLabel.objects.filter(worker=validator).delete()  # an erasure deletes the person's labels
    assert table() == expected()
    gone = Pair.objects.filter(dataset=dataset).order_by("pk").first()
    assert gone is not None and gone.pk in table()
    gone.delete()
    assert gone.pk not in table()
    assert table() == expected()


@pytest.mark.django_db
def test_an_update_that_moves_no_counted_label_writes_no_row(make_worker: Any) -> None:
    awkward_corpus(make_worker)
    label = ValidationLabel.objects.filter(labels_that_count()).order_by("pk").first()
    assert label is not None
    before = row_version(label.pair_id)
    ValidationLabel.objects.filter(pk=label.pk).update(seconds=9.5)
    assert row_version(label.pair_id) == before
    ValidationLabel.objects.filter(pk=label.pk).update(
        label=L.CONTRADICTION if label.label != L.CONTRADICTION else L.NEUTRAL
    )
    assert row_version(label.pair_id) != before
    assert table() == expected()


@pytest.mark.django_db
def test_the_migrations_fill_gives_the_rows_the_triggers_keep(make_worker: Any) -> None:
    awkward_corpus(make_worker)
    kept = table()
    migration = importlib.import_module("corpus.migrations.0038_pair_counted_labels")
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {COUNTED_TABLE}")
        cursor.execute(migration.FILL)
    assert table() == kept == expected()


@pytest.mark.django_db
def test_emptying_the_label_table_empties_the_counted_labels(make_worker: Any) -> None:
    awkward_corpus(make_worker)
    assert table()
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred foreign-key checks pending
        cursor.execute(f"TRUNCATE {ValidationLabel._meta.db_table} CASCADE")
    assert table() == {}


@pytest.mark.django_db(transaction=True)
def test_validators_labelling_one_pair_at_once_each_find_their_label_in_the_table(make_worker: Any) -> None:
    awkward_corpus(make_worker)
    pair = Pair.objects.filter(label_count=1).order_by("pk").first()
    assert pair is not None
    validators = [make_worker() for _ in range(4)]
    start = threading.Barrier(len(validators))
    errors: list[BaseException] = []

    def label(worker: Any) -> None:
        try:
            start.wait()
            add_labels([(pair, L.CONTRADICTION)], worker=worker, seconds=1.0)
        except BaseException as error:  # reported by the assertion after the join
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=label, args=(worker,)) for worker in validators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert table()[pair.pk][0].count(L.CONTRADICTION) == 4
    assert table() == expected()
