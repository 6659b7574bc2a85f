"""Copies across writers, sessions and studies.

A new hypothesis is looked up, at submit, among every hypothesis written on the platform before it
(`WrittenSentence`, by its normalised text): a near-copy of a sentence on another premise, by
another writer or by the same writer in another session, is a copy (copies inside one session are
`repeated`). "Near" is pg_trgm's trigram similarity, at least COPY_SIMILARITY. The candidates are
the earlier sentences sharing a MinHash band of their trigrams with it (`copy_bands`, migration
0014, and its GIN index): a pair 0.85 alike shares one 99.9% of the time, one 0.9 alike all but
never fails to, and unrelated sentences almost never do, so a lookup reads a handful of rows where
the trigram index read every sentence sharing a common trigram. Each candidate's similarity is then
computed exactly. Thresholds were measured on SNLI dev (bench/copy_check.py; docs/quality.md,
"Copies across writers").

Paraphrases: a template with one word changed is far apart by trigrams, and short sentences are
never compared by them. So each sentence is stored with its template signature too
(authorship.paraphrase); when the trigram rule finds nothing, earlier sentences sharing own words
are candidates (a GIN index answers), judged by `is_paraphrase`.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from corpus.models import Pair, Worker
from crowd.models import StudySession

from . import paraphrase
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
# Paraphrases of a template: signatures of at least this many words, at most this many word edits
# apart, sharing at least PARAPHRASE_SHARED_OWN_WORDS words not from either premise (two flagged
# 1.6% of SNLI dev's honest writers; three keep it near the trigram rule's, docs/quality.md).
PARAPHRASE_MIN_WORDS = 6
PARAPHRASE_MAX_EDITS = 2
PARAPHRASE_SHARED_OWN_WORDS = 3
# Short sentences: the same signature, both of at most this many words. Honest short twins are
# almost all made of their premises' words ("a man is outside" about a man), which slot out.
SHORT_MAX_WORDS = 4
MIN_SHARED_OWN_WORDS = 2
# Candidates looked at, those sharing most own words first: a farm's template shares all but one.
PARAPHRASE_CANDIDATES = 100


def copy_key(text: str) -> str:
    """The text a sentence is compared by: case-folded words, one space apart, at most MAX_KEY_CHARS."""
    return normalised_sentence(text)[:MAX_KEY_CHARS]


def can_be_a_copy(key: str) -> bool:
    """Long enough that another writer's same sentence is no coincidence."""
    return len(key.split()) >= MIN_COPY_WORDS


@dataclass(frozen=True)
class Copy:
    """The earlier sentence a new one copies, and how alike they are (1.0: the same words): by
    trigrams for a near-copy, by words (1 - word edits / words) for a paraphrase."""

    sentence_id: int
    worker_id: int
    cluster_root_id: int
    similarity: float
    paraphrase: bool = False

    def own(self, worker: Worker) -> bool:
        """A repeat of the writer's own sentence from another session."""
        return self.worker_id == worker.pk


def _exclusions(worker: Worker, study_session: StudySession | None) -> tuple[str, list[int]]:
    """SQL condition on an earlier sentence `w` and its parameters: not the writer's own sentence of
    this session (that is `repeated`'s to find). Another premise is each lookup's own condition."""
    if study_session is None:
        return "true", []
    return "NOT (w.worker_id = %s AND w.study_session_id = %s)", [worker.pk, study_session.pk]


def nearest_sql(table: str, condition: str) -> str:
    """The PostgreSQL lookup of several sentences at once, each on its own premise (parameters: the
    keys and their premises' ids as two arrays, the threshold, then the condition's), one row for
    each key that has a near-copy: its position (from 1) and the copy. Each key is its own lookup
    of the band index in a nested loop; bench/copy_check.py explains it on a large table."""
    return (
        "SELECT k.position, near.* FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY AS k(key, premise_id, position)"
        " CROSS JOIN LATERAL (SELECT w.id, w.worker_id, COALESCE(w.cluster_root_id, w.id),"
        f" similarity(w.normalised, k.key) AS alike FROM {table} w"
        " WHERE copy_bands(w.normalised) && copy_bands(k.key) AND similarity(w.normalised, k.key) >= %s"
        f" AND w.premise_id <> k.premise_id AND {condition}"
        " ORDER BY alike DESC, w.id LIMIT 1) near"
    )


@contextmanager
def band_lookup(cursor: Any) -> Iterator[None]:
    """Around the lookup, in a transaction: sequential scans are off for the lookup alone, as the
    planner cannot price a band match and might scan the table, computing every row's bands. One
    statement sets it and reads the setting before (OFFSET 0 keeps that subquery apart)."""
    cursor.execute(
        "SELECT before.seqscan, set_config('enable_seqscan', 'off', true)"
        " FROM (SELECT current_setting('enable_seqscan') AS seqscan OFFSET 0) before"
    )
    (seqscan, _) = cursor.fetchone()
    try:
        yield
    finally:
        cursor.execute("SELECT set_config('enable_seqscan', %s, true)", [seqscan])


def _nearest_on_postgresql(keys: Sequence[tuple[str, int]], condition: str, params: list[int]) -> list[Copy | None]:
    """For each (key, premise id), its nearest earlier sentence on another premise, or None."""
    found: list[Copy | None] = [None] * len(keys)
    with connection.cursor() as cursor, band_lookup(cursor):
        cursor.execute(
            nearest_sql(WrittenSentence._meta.db_table, condition),
            [[key for key, _ in keys], [premise_id for _, premise_id in keys], COPY_SIMILARITY, *params],
        )
        for position, sentence_id, worker_id, cluster_root_id, alike in cursor.fetchall():
            found[position - 1] = Copy(sentence_id, worker_id, cluster_root_id, float(alike))
    return found


def is_paraphrase(signature: Sequence[str], earlier: Sequence[str], shared_own_words: int) -> bool:
    """Whether two signatures (authorship.paraphrase) are one template written twice."""
    if shared_own_words < MIN_SHARED_OWN_WORDS:
        return False
    if min(len(signature), len(earlier)) >= PARAPHRASE_MIN_WORDS:
        close = paraphrase.word_edits(signature, earlier) <= PARAPHRASE_MAX_EDITS
        return close and shared_own_words >= PARAPHRASE_SHARED_OWN_WORDS
    if max(len(signature), len(earlier)) <= SHORT_MAX_WORDS:
        return tuple(signature) == tuple(earlier)
    return False


def paraphrase_sql(table: str, condition: str) -> str:
    """Candidates on another premise sharing at least MIN_SHARED_OWN_WORDS own words, most shared
    first (parameters: the own words three times, the premise's id, then the condition's)."""
    shared = "cardinality(ARRAY(SELECT unnest(w.own_words) INTERSECT SELECT unnest(%s::varchar[])))"
    return (
        f"SELECT w.id, w.worker_id, COALESCE(w.cluster_root_id, w.id), w.signature, {shared} AS shared "
        f"FROM {table} w WHERE w.own_words && %s::varchar[] AND {shared} >= {MIN_SHARED_OWN_WORDS}"
        f" AND w.premise_id <> %s AND {condition} ORDER BY shared DESC, w.id LIMIT {PARAPHRASE_CANDIDATES}"
    )


def _earlier_paraphrase(
    signature: str, own_words: list[str], premise_id: int, condition: str, params: list[int]
) -> Copy | None:
    if len(own_words) < MIN_SHARED_OWN_WORDS:
        return None
    words = signature.split()
    with connection.cursor() as cursor:
        cursor.execute(
            paraphrase_sql(WrittenSentence._meta.db_table, condition),
            [own_words, own_words, own_words, premise_id, *params],
        )
        candidates = cursor.fetchall()
    for sentence_id, worker_id, cluster_root_id, earlier, shared in candidates:
        earlier_words = earlier.split()
        if is_paraphrase(words, earlier_words, shared):
            edits = paraphrase.word_edits(words, earlier_words)
            similarity = 1 - edits / max(len(words), len(earlier_words))
            return Copy(sentence_id, worker_id, cluster_root_id, similarity, paraphrase=True)
    return None


def earlier_copies(
    worker: Worker, study_session: StudySession | None, written: Sequence[tuple[int, str, str]]
) -> list[Copy | None]:
    """For each (premise id, text, the premise's text) written: the earlier written sentence the text
    is a near-copy or a paraphrase of, or None. The near-copies of all of them in one lookup
    (`nearest_sql`), then a paraphrase lookup for each text that has none."""
    condition, params = _exclusions(worker, study_session)
    keys = [(copy_key(text), premise_id) for premise_id, text, _ in written]
    with transaction.atomic():
        looked_up = [index for index, (key, _) in enumerate(keys) if can_be_a_copy(key)]
        found: list[Copy | None] = [None] * len(written)
        if looked_up:
            for index, copy in zip(
                looked_up, _nearest_on_postgresql([keys[index] for index in looked_up], condition, params), strict=True
            ):
                found[index] = copy
        for index, (premise_id, text, premise_text) in enumerate(written):
            if found[index] is None:
                signature, own_words = paraphrase.stored_signature(text, premise_text)
                found[index] = _earlier_paraphrase(signature, own_words, premise_id, condition, params)
        return found


def copies_of(worker: Worker, study_session: StudySession | None, pairs: Sequence[Pair]) -> list[Copy | None]:
    """For each new pair, before it is recorded: the earlier sentence its hypothesis copies, or None."""
    return earlier_copies(
        worker, study_session, [(pair.premise_id, pair.hypothesis, pair.premise.text) for pair in pairs]
    )


def record_written_sentences(
    worker: Worker, study_session: StudySession | None, pairs: Sequence[Pair], copies: Sequence[Copy | None]
) -> list[WrittenSentence]:
    """Store the new pairs' sentences (in the submit's transaction), each with the copy found."""
    return WrittenSentence.objects.bulk_create(
        WrittenSentence(
            pair=pair,
            premise_id=pair.premise_id,
            dataset_id=pair.dataset_id,
            worker=worker,
            study_session=study_session,
            normalised=copy_key(pair.hypothesis),
            signature=signature,
            own_words=own_words,
            copy_of_id=None if copy is None else copy.sentence_id,
            copy_similarity=None if copy is None else copy.similarity,
            copies_other_writer=None if copy is None else not copy.own(worker),
            cluster_root_id=None if copy is None else copy.cluster_root_id,
        )
        for pair, copy in zip(pairs, copies, strict=True)
        for signature, own_words in [paraphrase.stored_signature(pair.hypothesis, pair.premise.text)]
    )
