"""The copy check's candidates (authorship.copies): the earlier sentences sharing a MinHash band of
a new sentence's trigrams (`copy_bands`, migration 0014). On real hypotheses (SNLI dev), every pair
the trigram rule holds alike shares a band, so does almost every pair a changed word leaves alike,
and pairs far apart rarely do: each one that does is a row the lookup reads and rejects."""

import json

import pytest
from django.db import connection, transaction

from authorship.copies import COPY_SIMILARITY, can_be_a_copy, copy_key
from tests.conftest import shared_file

SENTENCES = 3_000
FAR = 0.5


def real_keys() -> list[str]:
    """The first SENTENCES distinct keys of SNLI dev's hypotheses that can be copies, in file order."""
    keys: dict[str, None] = {}
    with shared_file("snli_1.0_dev.jsonl").open() as lines:
        for line in lines:
            key = copy_key(json.loads(line)["sentence2"])
            if can_be_a_copy(key):
                keys.setdefault(key)
            if len(keys) == SENTENCES:
                break
    return list(keys)


def with_a_word_changed(key: str) -> str:
    words = key.split()
    words[len(words) // 2] += "s"
    return " ".join(words)


@pytest.fixture(scope="module")
def measured(django_db_setup, django_db_blocker):
    """Counts over the real keys, in a transaction rolled back at the end."""
    keys = real_keys()
    with django_db_blocker.unblock(), connection.cursor() as cursor, transaction.atomic():
        cursor.execute("CREATE TEMP TABLE band_keys (id serial PRIMARY KEY, key text, bands integer[])")
        cursor.execute(
            "INSERT INTO band_keys (key, bands) SELECT key, copy_bands(key) FROM unnest(%s::text[]) AS key", [keys]
        )
        cursor.execute("CREATE INDEX ON band_keys USING gin (key gin_trgm_ops)")
        cursor.execute("CREATE INDEX ON band_keys USING gin (bands)")
        cursor.execute("ANALYZE band_keys")
        cursor.execute("SELECT set_config('pg_trgm.similarity_threshold', %s, true)", [str(COPY_SIMILARITY)])
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE a.bands && b.bands)"
            " FROM band_keys a JOIN band_keys b ON a.key % b.key AND a.id < b.id"
        )
        alike = cursor.fetchone()
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE copy_bands(changed) && copy_bands(key)) FROM unnest(%s::text[],"
            " %s::text[]) AS pair(key, changed) WHERE similarity(key, changed) >= %s",
            [keys, [with_a_word_changed(key) for key in keys], COPY_SIMILARITY],
        )
        changed = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FROM band_keys a JOIN band_keys b ON a.bands && b.bands AND a.id < b.id"
            " WHERE similarity(a.key, b.key) < %s",
            [FAR],
        )
        (far_sharing,) = cursor.fetchone()
        transaction.set_rollback(True)
    return {"alike": alike, "changed": changed, "far_sharing": far_sharing, "pairs": len(keys) * (len(keys) - 1) // 2}


def test_every_pair_of_real_hypotheses_the_trigram_rule_holds_alike_shares_a_band(measured):
    pairs, sharing = measured["alike"]
    assert pairs >= 10  # the data holds such pairs: the test is not passed by having none
    assert sharing == pairs


def test_a_changed_word_leaves_almost_every_pair_still_alike_in_a_band(measured):
    pairs, sharing = measured["changed"]
    assert pairs >= 300
    # 1 - (1 - 0.85^6)^15: a pair just at the threshold is missed once in a thousand, closer ones less.
    assert sharing >= 0.995 * pairs


def test_pairs_far_apart_rarely_share_a_band(measured):
    # Real hypotheses share common trigrams ("a man is"); a band is six minimum hashes, all equal.
    assert measured["far_sharing"] <= measured["pairs"] / 1_000
