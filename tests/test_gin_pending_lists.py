"""The GIN indexes the writing submit both reads and writes (the written sentences' copy bands and own
words, the pair search table's trigrams) keep a pending list of at most PostgreSQL's least limit: every
copy check and text search reads the list whole, and at the 4 MB default it held thousands of rows
between merges (bench/gin_pending.py). Checked by writing a crowd's worth of sentences and reading
each index's pending list."""

import pytest
from django.db import connection

from authorship.models import GIN_PENDING_LIST_KB, WrittenSentence
from corpus.models import Pair
from tests.collection.writing_helpers import add_premises, writing_setup

pytestmark = pytest.mark.django_db
PAGE_BYTES = 8192
SENTENCES = 1_000
INDEXES = (
    "written_sentence_copy_bands",
    "written_sentence_own_words",
    "pair_search_hypothesis_trgm",
    "pair_search_pair_id_trgm",
)


def gin_indexes_of(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
            " WHERE i.indrelid = %s::regclass AND a.amname = 'gin'",
            [table],
        )
        return {name for (name,) in cursor.fetchall()}


def test_the_checked_indexes_are_every_gin_index_of_the_submits_tables():
    tables = (WrittenSentence._meta.db_table, "collection_pair_search")
    assert set().union(*(gin_indexes_of(table) for table in tables)) == set(INDEXES)


def test_a_crowds_sentences_leave_each_pending_list_under_its_limit(make_worker):
    dataset, genre = writing_setup()
    (premise,) = add_premises(dataset, genre, 1)
    writer = make_worker()
    words = ["harbour", "lantern", "orchard", "violin", "meadow", "glacier", "saddle", "thimble", "compass", "falcon"]
    pairs = Pair.objects.bulk_create(
        Pair(
            dataset=dataset,
            premise=premise,
            pair_id=f"pending-list-check-pair-{number:06d}",
            hypothesis=f"A sailor number {number} carries the {words[number % 10]} past the old stone harbour wall.",
            author_label="neutral",
        )
        for number in range(SENTENCES)
    )
    WrittenSentence.objects.bulk_create(
        WrittenSentence(
            pair=pair,
            premise=premise,
            dataset=dataset,
            worker=writer,
            normalised=pair.hypothesis.lower().rstrip("."),
            own_words=[*words, str(pair.pk)],
        )
        for pair in pairs
    )
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        for name in INDEXES:
            cursor.execute("SELECT pending_pages, pending_tuples FROM pgstatginindex(%s::regclass)", [name])
            pages, tuples = cursor.fetchone()
            # The insert that fills the list past its limit merges it: at most the limit, and the page
            # that crossed it.
            assert pages * PAGE_BYTES <= GIN_PENDING_LIST_KB * 1024 + PAGE_BYTES, (name, pages, tuples)
