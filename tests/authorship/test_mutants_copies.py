"""Which hypotheses are called copies (authorship.copies), at the edges: the key a sentence is
compared by and its length, the five-word floor of the trigram rule and its 0.85 threshold, the
paraphrase rule's word counts, edits and shared own words, which earlier sentence a copy points to
(the nearest, then the first written), how alike a paraphrase is said to be, whose sentence a copy
is, and what each stored sentence keeps (its premise, dataset, writer, session and cluster). The new
sentence's premise words are slotted out before the paraphrase lookup, copies that do not match the
pairs one for one store nothing, and the lookup runs with sequential scans off and leaves the
transaction's planner settings as it found them."""

from collections.abc import Sequence

import pytest
from django.db import connection, transaction

from authorship.copies import (
    COPY_SIMILARITY,
    MAX_KEY_CHARS,
    Copy,
    band_lookup,
    can_be_a_copy,
    copies_of,
    copy_key,
    earlier_copies,
    is_paraphrase,
    record_written_sentences,
)
from authorship.models import WrittenSentence
from corpus.models import Dataset, Pair, Premise, Worker
from crowd.models import StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup


@pytest.fixture
def premises(db) -> list[Premise]:
    dataset, genre = writing_setup()
    return add_premises(dataset, genre, 6)


def pair_on(premise: Premise, worker: Worker, hypothesis: str) -> Pair:
    return Pair.objects.create(
        dataset=premise.dataset,
        premise=premise,
        pair_id=f"p{Pair.objects.count()}",
        hypothesis=hypothesis,
        author_label="neutral",
        author=worker,
    )


def submit(
    worker: Worker, session: StudySession | None, written: Sequence[tuple[Premise, str]]
) -> tuple[list[Copy | None], list[WrittenSentence]]:
    """What a writing submit does with its pairs: look each up, then store them."""
    pairs = [pair_on(premise, worker, text) for premise, text in written]
    found = copies_of(worker, session, pairs)
    return found, record_written_sentences(worker, session, pairs, found)


def similarity(first: str, second: str) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT similarity(%s, %s)", [copy_key(first), copy_key(second)])
        (alike,) = cursor.fetchone()
    return float(alike)


# Normalisation and the trigram rule's floor.


def test_the_key_is_the_case_folded_words_cut_at_the_stored_length():
    assert copy_key("  The MAN,  is   Sleeping!  ") == "the man is sleeping"
    long = "word " * 100
    assert len(copy_key(long)) == MAX_KEY_CHARS == 300
    assert copy_key(long) == long.strip()[:300]


def test_five_words_can_be_a_copy_and_four_cannot():
    assert can_be_a_copy("the man is sleeping today")
    assert not can_be_a_copy("the man is sleeping")
    assert not can_be_a_copy("")


# The trigram rule.

SENTENCE = "The tall stranger whistled a cheerful tune beside the lighthouse."
NEAR = "The tall stranger whistled a cheerful song beside the lighthouse."
FAR = "The tall stranger whistled loudly beside the old lighthouse gate."


def test_a_near_copy_by_another_writer_points_to_it_with_its_trigram_similarity(premises, make_worker):
    first, second = make_worker(), make_worker()
    _, (original,) = submit(first, None, [(premises[0], SENTENCE)])

    (copy,), (row,) = submit(second, None, [(premises[1], NEAR)])

    alike = similarity(SENTENCE, NEAR)
    assert COPY_SIMILARITY <= alike < 1
    assert copy is not None
    assert (copy.sentence_id, copy.worker_id, copy.cluster_root_id) == (original.pk, first.pk, original.pk)
    assert not copy.paraphrase and copy.similarity == pytest.approx(alike)
    assert row.copy_of_id == original.pk and row.cluster_root_id == original.pk
    assert row.copy_similarity == pytest.approx(alike)
    assert row.copies_other_writer is True


def test_a_sentence_below_the_threshold_is_no_trigram_copy(premises, make_worker):
    submit(make_worker(), None, [(premises[0], SENTENCE)])
    alike = similarity(SENTENCE, FAR)
    assert 0.3 < alike < COPY_SIMILARITY

    (copy,), (row,) = submit(make_worker(), None, [(premises[1], FAR)])

    assert copy is None
    assert row.copy_of_id is None and row.copy_similarity is None and row.copies_other_writer is None


def test_an_exact_copy_is_alike_one_and_the_nearest_earlier_sentence_is_chosen(premises, make_worker):
    writers = [make_worker() for _ in range(3)]
    submit(writers[0], None, [(premises[0], NEAR)])
    _, (exact,) = submit(writers[1], None, [(premises[1], SENTENCE)])

    (copy,), _ = submit(writers[2], None, [(premises[2], SENTENCE)])

    assert copy is not None and copy.sentence_id == exact.pk and copy.similarity == 1.0


def test_of_two_equally_near_sentences_the_first_written_is_the_one_copied(premises, make_worker):
    writers = [make_worker() for _ in range(3)]
    _, (first,) = submit(writers[0], None, [(premises[0], SENTENCE)])
    submit(writers[1], None, [(premises[1], SENTENCE)])

    (copy,), _ = submit(writers[2], None, [(premises[2], SENTENCE)])

    assert copy is not None and copy.sentence_id == first.pk and copy.worker_id == writers[0].pk


def test_a_copy_of_a_copy_keeps_the_first_sentence_as_its_cluster_root(premises, make_worker):
    writers = [make_worker() for _ in range(3)]
    _, (root,) = submit(writers[0], None, [(premises[0], SENTENCE)])
    _, (middle,) = submit(writers[1], None, [(premises[1], SENTENCE)])
    # Only the middle one is left to be found: the root is on the third writer's premise.
    root.premise = premises[2]
    root.save()

    (copy,), (row,) = submit(writers[2], None, [(premises[2], SENTENCE)])

    assert copy is not None and copy.sentence_id == middle.pk and copy.cluster_root_id == root.pk
    assert row.copy_of_id == middle.pk and row.cluster_root_id == root.pk


def test_short_sentences_are_never_trigram_copies(premises, make_worker):
    """Four words of a premise's own (slotted out) coincide honestly: no copy either way."""
    text = "Premise number says boat."
    submit(make_worker(), None, [(premises[0], text)])

    (copy,), _ = submit(make_worker(), None, [(premises[1], text)])

    assert copy is None


def test_five_words_by_another_writer_are_a_trigram_copy(premises, make_worker):
    text = "Premise number says the boat."
    submit(make_worker(), None, [(premises[0], text)])

    (copy,), _ = submit(make_worker(), None, [(premises[1], text)])

    assert copy is not None and not copy.paraphrase and copy.similarity == 1.0


# Whose sentence, which session, which premise.


def test_the_writers_own_sentence_of_another_session_is_a_copy_of_their_own(premises, make_worker):
    dataset = premises[0].dataset
    study = make_study(dataset, slug="own-study")
    worker = make_worker()
    sessions = [StudySession.objects.create(study=study, worker=worker, external_session_id=f"s{n}") for n in range(2)]
    _, (first,) = submit(worker, sessions[0], [(premises[0], SENTENCE)])

    (same_session,), _ = submit(worker, sessions[0], [(premises[1], SENTENCE)])
    (copy,), (row,) = submit(worker, sessions[1], [(premises[2], SENTENCE)])

    assert same_session is None  # the session's own repeats are `repeated`'s to find
    assert copy is not None and copy.own(worker) and copy.sentence_id == first.pk
    assert row.copies_other_writer is False and row.study_session_id == sessions[1].pk


def test_without_a_session_the_writers_own_earlier_sentence_is_a_copy(premises, make_worker):
    worker = make_worker()
    _, (first,) = submit(worker, None, [(premises[0], SENTENCE)])

    (copy,), (row,) = submit(worker, None, [(premises[1], SENTENCE)])

    assert copy is not None and copy.sentence_id == first.pk and copy.own(worker)
    assert row.copies_other_writer is False and row.study_session_id is None


def test_a_session_excludes_only_its_own_writer_in_it(premises, make_worker):
    """Another writer's sentence, written in the same study, is still a copy."""
    study = make_study(premises[0].dataset, slug="shared-study")
    first, second = make_worker(), make_worker()
    session = StudySession.objects.create(study=study, worker=first, external_session_id="one")
    submit(first, session, [(premises[0], SENTENCE)])
    other = StudySession.objects.create(study=study, worker=second, external_session_id="two")

    (copy,), _ = submit(second, other, [(premises[1], SENTENCE)])

    assert copy is not None and not copy.own(second)


def test_the_same_premise_is_never_a_copy(premises, make_worker):
    submit(make_worker(), None, [(premises[0], SENTENCE)])

    (copy,), _ = submit(make_worker(), None, [(premises[0], SENTENCE)])

    assert copy is None


def test_a_stored_sentence_keeps_its_pair_premise_dataset_writer_key_and_signature(premises, make_worker):
    study = make_study(premises[0].dataset, slug="kept-study")
    worker = make_worker()
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="kept")

    _, (row,) = submit(worker, session, [(premises[3], "The boat NEVER left the harbour!")])

    row = WrittenSentence.objects.get(pk=row.pk)
    assert row.pair.hypothesis == "The boat NEVER left the harbour!"
    assert row.premise_id == premises[3].pk and row.dataset_id == Dataset.objects.get().pk
    assert row.worker_id == worker.pk and row.study_session_id == session.pk
    assert row.normalised == "the boat never left the harbour"
    assert row.signature == "the _ never _ the _" and row.own_words == ["never"]
    assert row.copy_of_id is None and row.cluster_root_id is None


def test_the_lookup_runs_with_sequential_scans_off(db):
    # With statistics from when the table was small, a scan would compute every row's bands.
    with transaction.atomic(), connection.cursor() as cursor, band_lookup(cursor):
        cursor.execute("SELECT current_setting('enable_seqscan')")
        assert cursor.fetchone() == ("off",)


def test_the_lookup_leaves_sequential_scans_as_they_were(premises, make_worker):
    with transaction.atomic(), connection.cursor() as cursor:
        earlier_copies(make_worker(), None, [(premises[0].pk, SENTENCE, premises[0].text)])
        cursor.execute("SELECT current_setting('enable_seqscan')")
        (seqscan,) = cursor.fetchone()
    assert seqscan == "on"


# The paraphrase rule.

LONG = ("the", "crowd", "listen", "to", "the", "band", "in", "square")


def test_paraphrase_needs_two_shared_own_words_even_for_the_same_short_signature():
    assert is_paraphrase(("tourist", "enjoy"), ("tourist", "enjoy"), 2)
    assert not is_paraphrase(("tourist", "enjoy"), ("tourist", "enjoy"), 1)


def test_long_signatures_two_edits_apart_sharing_three_own_words_are_paraphrases():
    two_edits = ("the", "audience", "listen", "to", "the", "group", "in", "square")
    three_edits = ("the", "audience", "listen", "to", "the", "group", "in", "plaza")
    assert is_paraphrase(LONG, two_edits, 3)
    assert not is_paraphrase(LONG, two_edits, 2)
    assert not is_paraphrase(LONG, three_edits, 5)


def test_six_words_are_long_enough_and_five_are_neither_long_nor_short():
    six = ("crowd", "listen", "band", "in", "the", "square")
    assert is_paraphrase(six, six, 3)
    assert is_paraphrase(six, ("crowd", "listen", "band", "in", "a", "square"), 3)
    five = ("crowd", "listen", "band", "in", "square")
    assert not is_paraphrase(five, five, 5)
    assert not is_paraphrase(six, five, 5)  # one edit, but the shorter has five words


def test_short_signatures_of_four_words_must_be_the_same():
    four = ("tourist", "enjoy", "loud", "concert")
    assert is_paraphrase(four, four, 4)
    assert not is_paraphrase(four, ("tourist", "enjoy", "loud", "festival"), 3)
    assert not is_paraphrase(four, (*four, "today"), 4)


def test_a_paraphrase_is_as_alike_as_its_word_edits_over_the_longer_signature(premises, make_worker):
    first = make_worker()
    _, (original,) = submit(first, None, [(premises[0], "The crowd listens to the band in the square.")])

    (copy,), (row,) = submit(
        make_worker(), None, [(premises[1], "The audience listens to the band in the old square.")]
    )

    assert similarity(original.normalised, row.normalised) < COPY_SIMILARITY
    assert original.signature == "the crowd listen to the band in the square"
    assert copy is not None and copy.paraphrase
    assert copy.sentence_id == original.pk and copy.worker_id == first.pk and copy.cluster_root_id == original.pk
    # One word replaced and one inserted, of ten: 1 - 2/10.
    assert row.copy_similarity == pytest.approx(1 - 2 / 10)


def test_a_sentence_with_two_own_words_is_looked_up_for_paraphrases(premises, make_worker):
    text = "Tourists enjoy."
    _, (original,) = submit(make_worker(), None, [(premises[0], text)])
    assert original.own_words == ["enjoy", "tourist"]

    (copy,), _ = submit(make_worker(), None, [(premises[1], text)])

    assert copy is not None and copy.paraphrase and copy.sentence_id == original.pk and copy.similarity == 1.0


def test_copies_that_do_not_match_the_pairs_one_for_one_store_nothing(premises, make_worker):
    worker = make_worker()
    pairs = [pair_on(premises[0], worker, SENTENCE), pair_on(premises[1], worker, NEAR)]

    with pytest.raises(ValueError):
        record_written_sentences(worker, None, pairs, [None])

    assert not WrittenSentence.objects.exists()


def test_a_template_filled_with_each_premises_words_is_a_paraphrase_alike_one(premises, make_worker):
    """The premise's words are slotted out of the new sentence as they were of the stored one."""
    premises[0].text, premises[1].text = "A dog jumps over a log.", "A child plays with sand."
    for premise in premises[:2]:
        premise.save()
    _, (original,) = submit(make_worker(), None, [(premises[0], "The dog is waiting near the old fountain.")])

    (copy,), (row,) = submit(make_worker(), None, [(premises[1], "The child is waiting near the old fountain.")])

    assert similarity(original.normalised, row.normalised) < COPY_SIMILARITY
    assert original.signature == row.signature == "the _ is wait near the old fountain"
    assert copy is not None and copy.paraphrase and copy.sentence_id == original.pk
    assert copy.similarity == 1.0
