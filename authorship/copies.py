"""Copies across writers, sessions and studies (issue 50, item 3).

A new hypothesis is looked up, at submit, among every hypothesis written on the platform before it
(`WrittenSentence`: one row per written pair, by its normalised text): a near-copy of a sentence on
another premise, written by another writer or by the same writer in another session, is a copy.
Copies inside one session are `repeated` (authorship.judgements.repeated_sentences), as before.

"Near" is pg_trgm's trigram similarity of the normalised texts, answered by a GIN trigram index
(`%` with the threshold set for the transaction), not a scan.

Thresholds, measured on SNLI dev's 10,000 hypotheses replayed as 1,107 writers of three premises
each (bench/copy_check.py; docs/quality.md, "Copies across writers"): honest people write the same
short sentence ("a man is outside", "the woman is running") often, so sentences under five words
are never copies, and a similarity of 0.85 keeps honest writers' flagged sessions far under 1%.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from corpus.models import Pair, Worker
from crowd.models import StudySession

from .judgements import normalised_sentence
from .models import WrittenSentence

# pg_trgm similarity of the normalised texts from which a sentence is a near-copy ("the man is
# sleeping at the station" and "the man is sleeping at the bus station" are 0.88 apart).
COPY_SIMILARITY = 0.85
# Honest writers share short sentences: 2% of SNLI dev's 3- and 4-word hypotheses have an exact
# twin by another writer. A copy has at least this many words.
MIN_COPY_WORDS = 5
# The stored key: enough of a sentence to tell it apart (hypotheses are at most 500 characters).
MAX_KEY_CHARS = 300


def copy_key(text: str) -> str:
    """The text a sentence is compared by: case-folded words, one space apart, at most MAX_KEY_CHARS."""
    return normalised_sentence(text)[:MAX_KEY_CHARS]


def can_be_a_copy(key: str) -> bool:
    """Long enough that another writer's same sentence is no coincidence."""
    return len(key.split()) >= MIN_COPY_WORDS


@dataclass(frozen=True)
class Copy:
    """The earlier sentence a new one copies, and how alike they are (1.0: the same words)."""

    sentence_id: int
    worker_id: int
    cluster_root_id: int
    similarity: float

    def own(self, worker: Worker) -> bool:
        """A repeat of the writer's own sentence from another session."""
        return self.worker_id == worker.pk


def _exclusions(worker: Worker, study_session: StudySession | None, premise_id: int) -> tuple[str, list[int]]:
    """SQL condition and parameters: another premise, and not the writer's own sentence of this
    session (that is `repeated`'s to find)."""
    if study_session is None:
        return "premise_id <> %s", [premise_id]
    return "premise_id <> %s AND NOT (worker_id = %s AND study_session_id = %s)", [
        premise_id,
        worker.pk,
        study_session.pk,
    ]


def nearest_sql(table: str, condition: str) -> str:
    """The PostgreSQL lookup (parameters: the key twice, then the condition's); bench/copy_check.py
    explains it on a large table."""
    return (
        f"SELECT id, worker_id, COALESCE(cluster_root_id, id), similarity(normalised, %s) AS alike "
        f"FROM {table} WHERE normalised %% %s AND {condition} ORDER BY alike DESC, id LIMIT 1"
    )


@contextmanager
def trigram_lookup(cursor: Any) -> Iterator[None]:
    """Around the lookup, in a transaction: `%` reads its threshold from pg_trgm.similarity_threshold,
    set for this transaction only. Sequential scans are off for the lookup alone (and put back as
    they were): the planner prices similarity() like an addition, so on a table of some thousand
    rows it scans (73 ms measured at 10,000 rows) where the trigram index answers in 14 ms."""
    cursor.execute("SELECT set_config('pg_trgm.similarity_threshold', %s, true)", [str(COPY_SIMILARITY)])
    cursor.execute("SELECT current_setting('enable_seqscan')")
    (seqscan,) = cursor.fetchone()
    cursor.execute("SELECT set_config('enable_seqscan', 'off', true)")
    try:
        yield
    finally:
        cursor.execute("SELECT set_config('enable_seqscan', %s, true)", [seqscan])


def _nearest_on_postgresql(key: str, condition: str, params: list[int]) -> Copy | None:
    with connection.cursor() as cursor, trigram_lookup(cursor):
        cursor.execute(nearest_sql(WrittenSentence._meta.db_table, condition), [key, key, *params])
        row = cursor.fetchone()
    return None if row is None else Copy(row[0], row[1], row[2], float(row[3]))


def earlier_copy(worker: Worker, study_session: StudySession | None, premise_id: int, text: str) -> Copy | None:
    """The earlier written sentence `text` (written on `premise_id`) is a near-copy of, or None."""
    key = copy_key(text)
    if not can_be_a_copy(key):
        return None
    condition, params = _exclusions(worker, study_session, premise_id)
    with transaction.atomic():
        return _nearest_on_postgresql(key, condition, params)


def copies_of(worker: Worker, study_session: StudySession | None, pairs: Sequence[Pair]) -> list[Copy | None]:
    """For each new pair, before it is recorded: the earlier sentence its hypothesis copies, or None."""
    return [earlier_copy(worker, study_session, pair.premise_id, pair.hypothesis) for pair in pairs]


def record_written_sentences(
    worker: Worker, study_session: StudySession | None, pairs: Sequence[Pair], copies: Sequence[Copy | None]
) -> list[WrittenSentence]:
    """Store the new pairs' sentences (in the submit's transaction), each with the copy found."""
    return WrittenSentence.objects.bulk_create(
        WrittenSentence(
            pair=pair,
            premise_id=pair.premise_id,
            worker=worker,
            study_session=study_session,
            normalised=copy_key(pair.hypothesis),
            copy_of_id=None if copy is None else copy.sentence_id,
            copy_similarity=None if copy is None else copy.similarity,
            cluster_root_id=None if copy is None else copy.cluster_root_id,
        )
        for pair, copy in zip(pairs, copies, strict=True)
    )
