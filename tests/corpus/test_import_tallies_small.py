"""A corpus import leaves its tallies small, and its tables analysed.

An import is one transaction: its deltas are netted per key while it runs (`tallies.deltas_gathered`)
and written before it commits, so the tables gain one row per key the import touched, not one per
word of every hypothesis; the sums are exactly the truth grouped from the pairs. Once committed, it
ANALYZEs the tables it filled (a plan made on an empty table's statistics walks every open claim)."""

import pytest
from django.db import connection

from corpus import tallies
from corpus.giveaways import tokenize, words_of
from corpus.labels import LABELS
from corpus.models import LengthTally, Pair, PairTally, Premise, Split, ValidationLabel, WordTally
from importers.services import filled_tables, import_pairs_file
from tests import factories

from .test_tallies import TEXTS, corpus_rows, write_jsonl


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


@pytest.mark.django_db
def test_a_gathered_block_adds_to_the_rows_a_key_has_and_drops_a_sum_come_to_zero():
    dataset = factories.dataset("merged")
    genre = factories.genre("fiction")
    dog, cat = ((dataset.pk, "dev", genre.pk, "entailment", word) for word in ("dog", "cat"))
    tallies.insert_deltas(WordTally, tallies.WORD_KEY, {dog: 3})
    tallies.insert_deltas(WordTally, tallies.WORD_KEY, {dog: 1})  # a writer's delta, not folded yet
    with tallies.deltas_gathered():
        tallies.insert_deltas(WordTally, tallies.WORD_KEY, {dog: 2, cat: 5})
    # One of dog's rows took the 2; cat, a key the tally lacked, gained its row.
    assert sorted(WordTally.objects.values_list("word", "n")) == [("cat", 5), ("dog", 3), ("dog", 3)]
    with tallies.deltas_gathered():
        tallies.insert_deltas(WordTally, tallies.WORD_KEY, {cat: -5})
    assert not WordTally.objects.filter(word="cat").exists()  # its sum came to zero: no row left


@pytest.mark.django_db
def test_a_second_import_into_the_same_keys_leaves_the_fold_nothing_and_moves_its_rows_to_new_ids(tmp_path):
    """A second import whose words meet the first's added a row per key beside the
    first's, and the fold after it rewrote every such key (75,685 keys after a second import of 108k
    pairs: 5.48x a GROUP BY of the tally's rows). It adds to the rows the keys have, so the tally
    stays one row per key; each moved sum has a newer row (the give-away listing's rule)."""
    dataset = factories.dataset("twice")
    factories.genre("fiction"), factories.genre("travel")
    import_pairs_file(write_jsonl(tmp_path / "twice_dev.jsonl", corpus_rows(60, seed=3)), dataset, split=Split.DEV)
    tallies.fold()
    before = {row[:-1]: row[-1] for row in WordTally.objects.values_list(*tallies.WORD_KEY, "n")}
    mark = max(WordTally.objects.values_list("pk", flat=True))
    import_pairs_file(write_jsonl(tmp_path / "twice2_dev.jsonl", corpus_rows(60, seed=5)), dataset, split=Split.DEV)
    for model, key_names in ((WordTally, tallies.WORD_KEY), (PairTally, tallies.PAIR_KEY)):
        assert model.objects.count() == keys(model, key_names), model.__name__
    after = {row[:-2]: row[-2:] for row in WordTally.objects.values_list(*tallies.WORD_KEY, "n", "pk")}
    moved = [key for key, (n, _) in after.items() if before.get(key) != n]
    assert moved and set(before) & set(moved)  # sums of keys the first import had moved
    assert all(after[key][1] > mark for key in moved)
    assert tallies.fold() == 0
    assert tallies.check_and_rebuild(dataset, repair=False).keys == 0


def analysed_as_they_are(tables):
    """ANALYZE these tables as they are (emptied by the last test; another test's statistics may be
    of thousands of rows, and a tenth of those is more than a small import writes)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")  # earlier writes counted before the ANALYZE
        cursor.execute(f"ANALYZE {', '.join(tables)}")


def vacuumed_and_analysed(tables):
    """{table: (vacuum count, analyze count)} of these tables (PostgreSQL's statistics views)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, vacuum_count, analyze_count FROM pg_stat_user_tables WHERE relname = ANY(%s)", [tables]
        )
        return {name: (vacuums, analyses) for name, vacuums, analyses in cursor.fetchall()}


def with_rows(tables):
    """Those of `tables` that hold rows."""
    with connection.cursor() as cursor:
        held = []
        for table in tables:
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")
            if cursor.fetchone()[0]:
                held.append(table)
    return held


def assert_refreshed(before, after, tables):
    """Every one of `tables` vacuumed and analysed between `before` and `after`."""
    for name in tables:
        vacuums, analyses = before.get(name, (0, 0))
        assert after[name][0] > vacuums and after[name][1] > analyses, (name, before.get(name), after[name])


@pytest.mark.django_db(transaction=True)
def test_a_committed_import_vacuums_and_analyzes_the_tables_it_filled(tmp_path):
    dataset = factories.dataset("analysed")
    factories.genre("fiction"), factories.genre("travel")
    tables = filled_tables()
    pairs, premises, labels = (model._meta.db_table for model in (Pair, Premise, ValidationLabel))
    assert {pairs, premises, labels, WordTally._meta.db_table} <= set(tables)
    analysed_as_they_are(tables)
    before = vacuumed_and_analysed(tables)
    import_pairs_file(write_jsonl(tmp_path / "analysed_dev.jsonl", corpus_rows(20, seed=4)), dataset, split=Split.DEV)
    filled = with_rows(tables)
    assert {pairs, premises, labels, WordTally._meta.db_table} <= set(filled)
    assert_refreshed(before, vacuumed_and_analysed(tables), filled)


@pytest.mark.django_db
def test_a_long_import_folds_its_deltas_as_it_goes(tmp_path, monkeypatch):
    """Beyond `GATHERED_KEYS_WRITTEN_AT` keys held, an import moves its deltas to a staging table of
    its transaction and sums them per key into the tally once, at its end: the rows it adds are the
    keys it touched, as many for a file four times as long (written each time the
    limit was reached, the tally gained a row per key each time, and a fold of millions of rows
    waited after the import)."""
    monkeypatch.setattr(tallies.engine, "GATHERED_KEYS_WRITTEN_AT", 20)  # staged after every chunk or two
    factories.genre("fiction"), factories.genre("travel")
    added = {}
    for count in (120, 480):
        dataset = factories.dataset(f"long-{count}")
        rows = corpus_rows(count, seed=3)  # five texts, two genres: the same keys, however many pairs
        import_pairs_file(write_jsonl(tmp_path / f"long{count}_dev.jsonl", rows), dataset, chunk_size=10)
        added[count] = {
            model: model.objects.filter(dataset=dataset).count() for model in (WordTally, PairTally, LengthTally)
        }
        for model, key_names in ((WordTally, tallies.WORD_KEY), (LengthTally, tallies.LENGTH_KEY)):
            of_dataset = model.objects.filter(dataset=dataset)
            assert added[count][model] == of_dataset.values_list(*key_names).distinct().count(), model.__name__
        assert tallies.check_and_rebuild(dataset, repair=False).keys == 0
    # The word rows are bounded by the words the texts hold (each under a genre and a label, and the
    # hypotheses' own row), not by the file's length.
    words = {word for text in TEXTS for word in words_of(tokenize(text))}
    assert added[120][WordTally] <= added[480][WordTally] <= 2 * len(LABELS) * (len(words) + 1)


def premise_import(tmp_path):
    from collection.premise_import import import_premises

    path = tmp_path / "premises.txt"
    path.write_text(
        "A man walks his dog along the quiet river at dawn.\nTwo children are reading books in the library.\n"
    )
    import_premises([path], factories.genre("fiction"), "analysed-premises", split=Split.TRAIN)
    return [Premise]


def dnc_import(tmp_path):
    from importers.dnc_import import import_dnc_file
    from tests.conftest import shared_file

    import_dnc_file(shared_file("dnc/dev/recast_sentiment_data.json"))
    return [Premise, Pair, ValidationLabel]


def mpe_import(tmp_path):
    from importers import mpe
    from importers.mpe_items import import_mpe_file
    from tests.importers.helpers import ensure_genres

    ensure_genres("captions")
    premises = tuple(mpe.MpePremise("9.jpg", n, f"Caption {n} of a dog on grass.") for n in range(4))
    items = [
        mpe.MpeItem(0, "1", premises, "A dog sleeps.", mpe.Judgments(1, 2, 2), "neutral"),
        mpe.MpeItem(0, "2", premises, "An animal outside.", mpe.Judgments(4, 1, 0), "entailment"),
    ]
    mpe.write_mpe(tmp_path / "mpe_dev.txt", items)
    import_mpe_file(tmp_path / "mpe_dev.txt", "analysed-mpe")
    return [Premise, Pair, ValidationLabel]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("importing", [premise_import, dnc_import, mpe_import], ids=lambda f: f.__name__)
def test_every_import_refreshes_what_it_filled_once_committed(tmp_path, importing):
    """Not the pairs import alone: the premise import (whose premises the writing claim
    walks), DNC files and recasts, and MPE files leave their tables and tallies vacuumed and analysed."""
    tallies_tables = [
        model._meta.db_table for maintained in tallies.MAINTAINED.values() for model, _ in maintained.tables
    ]
    everything = [model._meta.db_table for model in (Premise, Pair, ValidationLabel)] + tallies_tables
    analysed_as_they_are(everything)
    before = vacuumed_and_analysed(everything)
    filled = [model._meta.db_table for model in importing(tmp_path)] + with_rows(tallies_tables)
    assert_refreshed(before, vacuumed_and_analysed(everything), filled)


@pytest.mark.django_db(transaction=True)
def test_a_small_import_into_a_large_table_leaves_its_statistics(tmp_path):
    """A table the import grew by less than a tenth (`corpus.bulk.GROWN_BY`, autovacuum's own share)
    is neither vacuumed nor analysed again: a recast of a few pairs, or a few premises, from a
    researcher's page into a corpus of millions would read every table."""
    premises = Premise._meta.db_table
    dataset, genre = factories.dataset("large"), factories.genre("fiction")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {premises} (dataset_id, genre_id, prompt_id, text, text_hash, split, status, source,"
            " writings_done, sentences, parse, binary_parse, created_at)"
            " SELECT %s, %s, 'p' || g, 'Premise ' || g, md5(g::text), 'train', 'available', '', 0, '[]', '', '',"
            " now() FROM generate_series(1, 3000) g",
            [dataset.pk, genre.pk],
        )
        cursor.execute("SELECT pg_stat_force_next_flush()")  # the 3,000 rows counted before the ANALYZE
        cursor.execute(f"VACUUM ANALYZE {premises}")
    before = vacuumed_and_analysed([premises])
    premise_import(tmp_path)  # two premises more
    assert vacuumed_and_analysed([premises]) == before
