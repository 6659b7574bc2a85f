"""Issue 53 item 3: a corpus import leaves its tallies small, and its tables analysed.

An import is one transaction: its deltas are netted per key while it runs (`tallies.deltas_gathered`)
and written before it commits, so the tables gain one row per key the import touched, not one per
word of every hypothesis; the sums are exactly the truth grouped from the pairs. Once committed, it
ANALYZEs the tables it filled (a plan made on an empty table's statistics walks every open claim)."""

import pytest
from django.db import connection

from corpus import tallies
from corpus.models import LengthTally, Pair, PairTally, Premise, Split, ValidationLabel, WordTally
from importers.services import filled_tables, import_pairs_file
from tests import factories

from .test_tallies import corpus_rows, write_jsonl


def keys(model, key_names):
    return model.objects.values_list(*key_names).distinct().count()


@pytest.mark.django_db
def test_an_import_writes_one_tally_row_per_key_and_the_truth(tmp_path):
    dataset = factories.dataset("gathered")
    factories.genre("fiction"), factories.genre("travel")
    rows = corpus_rows(120, seed=3)  # five texts, two genres: many pairs share every key
    # Twelve chunks of ten: each chunk's deltas share keys with the others'.
    import_pairs_file(write_jsonl(tmp_path / "gathered_dev.jsonl", rows), dataset, split=Split.DEV, chunk_size=10)
    for model, key_names in ((WordTally, tallies.WORD_KEY), (PairTally, tallies.PAIR_KEY)):
        # One row per key: nothing for a fold to net.
        assert model.objects.count() == keys(model, key_names), model.__name__
    assert WordTally.objects.count() < 120  # a row per word of every hypothesis was several hundred
    assert LengthTally.objects.count() == keys(LengthTally, tallies.LENGTH_KEY)
    assert tallies.check_and_rebuild(dataset, repair=False).keys == 0


@pytest.mark.django_db
def test_deltas_outside_a_gathered_block_are_written_at_once():
    dataset = factories.dataset("not-gathered")
    genre = factories.genre("fiction")
    key = (dataset.pk, "dev", genre.pk, "entailment", "dog")
    with tallies.deltas_gathered():
        tallies.insert_deltas(WordTally, tallies.WORD_KEY, {key: 1})
        tallies.insert_deltas(WordTally, tallies.WORD_KEY, {key: 2})
        assert not WordTally.objects.exists()  # held, netted
    assert list(WordTally.objects.values_list("word", "n")) == [("dog", 3)]
    tallies.insert_deltas(WordTally, tallies.WORD_KEY, {key: -3})
    assert WordTally.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_committed_import_analyzes_the_tables_it_filled(tmp_path):
    dataset = factories.dataset("analysed")
    factories.genre("fiction"), factories.genre("travel")
    tables = filled_tables()
    pairs, premises, labels = (model._meta.db_table for model in (Pair, Premise, ValidationLabel))
    assert {pairs, premises, labels, WordTally._meta.db_table} <= set(tables)

    def analysed():
        with connection.cursor() as cursor:
            cursor.execute("SELECT relname, analyze_count FROM pg_stat_user_tables WHERE relname = ANY(%s)", [tables])
            return dict(cursor.fetchall())

    before = analysed()
    import_pairs_file(write_jsonl(tmp_path / "analysed_dev.jsonl", corpus_rows(20, seed=4)), dataset, split=Split.DEV)
    after = analysed()
    assert set(after) == set(tables)
    assert all(after[name] > before.get(name, 0) for name in tables), (before, after)
