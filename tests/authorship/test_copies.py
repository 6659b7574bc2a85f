"""Copies across writers, sessions and studies (authorship.copies): a new hypothesis
is looked up among every earlier written one at submit, the copy is flagged, and a study that holds
codes holds the code of a session of copies, as it does for untyped sentences."""

import pytest
from django.db import connection

from authorship.copies import COPY_SIMILARITY, band_lookup, copy_key, nearest_sql
from authorship.models import WritingEvidence, WrittenSentence
from collection import services, writing_claims
from crowd.models import StudySession, TypingEvidenceAction
from tests.authorship import records
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

# The template farm: one shared list, long enough to be no coincidence (five words or more).
TEMPLATES = [
    {
        "entailment": "The crowd listens to the band in the square.",
        "neutral": "The band plays songs from their first album.",
        "contradiction": "The square is completely empty and silent.",
    },
    {
        "entailment": "Some people are standing outside near the music.",
        "neutral": "Several tourists came to the city for the festival.",
        "contradiction": "Everyone stays at home and watches the television.",
    },
    {
        "entailment": "A group of musicians is performing for an audience.",
        "neutral": "The drummer practised every evening for a month.",
        "contradiction": "The old piano has not been played this week.",
    },
]


def typed_page(texts):
    return records.page({name: records.typed(text) for name, text in texts.items()})


def write(worker, session, texts):
    """One writing task, typed at a person's pace (the typing record passes every typing check)."""
    claim = present(writing_claims.claim_next_premise(worker, study_session=session))
    records.age_claim(claim.token)
    return services.submit_hypotheses(worker, claim.token, typing_evidence=typed_page(texts), **texts)


@pytest.fixture
def dataset(db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 40)
    return dataset


def holding_study(dataset, tasks=3, slug="copy-study"):
    return make_study(dataset, slug=slug, tasks_per_batch=tasks, typing_evidence_action=TypingEvidenceAction.HOLD_CODE)


def visit(study, worker, session_id):
    return StudySession.objects.create(study=study, worker=worker, external_session_id=session_id)


def flags_of(session):
    return [row.flags for row in WritingEvidence.objects.filter(study_session=session).order_by("pk")]


def test_ids_writing_from_one_template_list_have_their_codes_held_as_copies(dataset, make_worker):
    """Today: each id's nine typed sentences are compared with its own only; nothing is flagged."""
    study = holding_study(dataset)
    sessions = []
    for n in range(4):
        worker = make_worker(username=f"farm-{n}")
        session = visit(study, worker, f"farm-session-{n}")
        for texts in TEMPLATES:
            write(worker, session, texts)
        session.refresh_from_db()
        sessions.append(session)
    first, *later = sessions
    assert first.completion_code and not first.code_held_reason
    for session in later:
        assert all("copy" in flags for flags in flags_of(session))
        assert session.completion_code == ""
        assert session.code_held_reason.startswith("Sentences not typed by the writer: 9 of 9")


def test_one_id_repeating_its_sentences_over_new_sessions_is_held(dataset, make_worker):
    """A new session id each visit (as MTurk assignments come): today each visit is judged alone."""
    study = holding_study(dataset, tasks=1)
    worker = make_worker(username="repeater")
    sessions = [visit(study, worker, f"assignment-{n}") for n in range(3)]
    for session in sessions:
        write(worker, session, TEMPLATES[0])
        session.refresh_from_db()
    assert sessions[0].completion_code
    for session in sessions[1:]:
        assert flags_of(session) == [["copy"]] * 3
        assert session.completion_code == "" and "3 of 3" in session.code_held_reason
    copied = WrittenSentence.objects.filter(study_session=sessions[2]).select_related("copy_of")
    assert {row.copy_of.worker_id for row in copied if row.copy_of is not None} == {worker.pk}
    assert all(row.copy_of is not None for row in copied)


def test_repeats_inside_one_session_stay_repeated_not_copies(dataset, make_worker):
    study = holding_study(dataset)
    worker = make_worker()
    session = visit(study, worker, "one-visit")
    for _ in range(3):
        write(worker, session, TEMPLATES[0])
    flags = flags_of(session)
    assert sum("repeated" in found for found in flags) == 6
    assert not any("copy" in found for found in flags)


def test_honest_writers_sharing_a_short_sentence_are_not_copies(dataset, make_worker):
    """Short sentences coincide among honest writers (2% of SNLI dev's 3-4-word hypotheses), built
    of their premise's words ("the boat left the harbour at dawn") and function words."""
    short = {
        "entailment": "A boat left.",
        "neutral": "The harbour is busy.",
        "contradiction": "Nobody left the harbour.",
    }
    study = holding_study(dataset, tasks=1)
    for n in range(2):
        worker = make_worker(username=f"honest-{n}")
        session = visit(study, worker, f"honest-{n}")
        write(worker, session, short)
        session.refresh_from_db()
        assert session.completion_code
        assert flags_of(session) == [[], [], []]


def test_another_writer_on_the_same_premise_is_not_a_copy(db, make_worker):
    """Two people who read the same premise may well write its obvious entailment alike."""
    dataset, genre = writing_setup(writings_per_premise=2)
    add_premises(dataset, genre, 1)
    for n in range(2):
        write(make_worker(username=f"same-premise-{n}"), None, TEMPLATES[0])
    assert not any("copy" in row.flags for row in WritingEvidence.objects.all())
    assert WrittenSentence.objects.count() == 6


def test_copies_are_found_across_studies_and_outside_a_study(dataset, make_worker):
    first = visit(holding_study(dataset, tasks=1, slug="first-study"), make_worker(), "a")
    write(first.worker, first, TEMPLATES[1])
    later = visit(holding_study(dataset, tasks=1, slug="second-study"), make_worker(), "b")
    write(later.worker, later, TEMPLATES[1])
    write(make_worker(), None, TEMPLATES[1])
    assert flags_of(later) == [["copy"]] * 3
    outside = WritingEvidence.objects.filter(study_session__isnull=True)
    assert [row.flags for row in outside] == [["copy"]] * 3


def test_a_copy_of_a_copy_joins_the_first_sentences_cluster(dataset, make_worker):
    for n in range(3):
        write(make_worker(username=f"cluster-{n}"), None, TEMPLATES[2])
    rows = list(WrittenSentence.objects.filter(normalised=copy_key(TEMPLATES[2]["neutral"])).order_by("pk"))
    assert rows[0].cluster_root_id is None and rows[0].copy_of_id is None
    assert [row.cluster_root_id for row in rows[1:]] == [rows[0].pk, rows[0].pk]


def test_case_and_punctuation_do_not_hide_a_copy(dataset, make_worker):
    write(make_worker(), None, TEMPLATES[0])
    recased = {name: text.replace("The ", "THE ", 1).replace(".", "!") for name, text in TEMPLATES[0].items()}
    write(make_worker(), None, recased)
    assert sum("copy" in row.flags for row in WritingEvidence.objects.all()) == 3


def near_copies():
    return {name: text.replace("The ", "A ", 1) for name, text in TEMPLATES[0].items()}


def test_a_near_copy_with_a_word_changed_is_a_copy_on_postgresql(dataset, make_worker):
    write(make_worker(), None, TEMPLATES[0])
    write(make_worker(), None, near_copies())
    rows = WrittenSentence.objects.filter(copy_of__isnull=False)
    assert rows.count() == 3
    assert all(row.copy_similarity is not None and COPY_SIMILARITY <= row.copy_similarity < 1 for row in rows)


def test_near_copies_are_found_through_the_band_index(dataset, make_worker):
    """The embedded cluster has pg_trgm as a server has: near copies, not only the same words."""
    write(make_worker(), None, TEMPLATES[0])
    write(make_worker(), None, near_copies())
    found = WrittenSentence.objects.filter(copy_of__isnull=False).count()
    assert found == 3


def test_the_lookup_is_answered_by_the_band_index(dataset, make_worker):
    write(make_worker(), None, TEMPLATES[0])
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'written_sentence_copy_bands'")
        assert "copy_bands" in cursor.fetchone()[0]
        with band_lookup(cursor):
            cursor.execute(
                "EXPLAIN " + nearest_sql(WrittenSentence._meta.db_table, "true"),
                [[copy_key(TEMPLATES[0]["neutral"])], [0], COPY_SIMILARITY],
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "written_sentence_copy_bands" in plan


def test_the_workers_page_shows_copies_per_writer_and_which_ids_share_which_sentences(
    dataset, make_worker, client, researcher
):
    from django.urls import reverse

    study = holding_study(dataset, tasks=1)
    farm = [make_worker(username=f"template-{n}") for n in range(3)]
    for n, worker in enumerate(farm):
        write(worker, visit(study, worker, f"farm-{n}"), TEMPLATES[0])
    repeater = make_worker(username="repeater")
    for n in range(2):
        write(repeater, visit(study, repeater, f"again-{n}"), TEMPLATES[1])
    client.force_login(researcher)
    page = client.get(reverse("dashboard:workers")).content.decode()
    writers = page.split('id="table-copy-writers">', 1)[1].split("</table>", 1)[0]

    def stat(worker, name):
        row = writers.split(f'<tr data-worker="{worker.pk}">', 1)[1]
        return row.split(f'data-stat="{name}">', 1)[1].split("<", 1)[0]

    assert [stat(worker, "copies_of_others") for worker in farm[1:]] == ["3", "3"]
    assert stat(repeater, "own_repeats") == "3" and stat(repeater, "copies_of_others") == "0"
    assert f'<tr data-worker="{farm[0].pk}">' not in writers  # the first to write it copied nobody
    clusters = page.split('id="table-copy-clusters">', 1)[1].split("</table>", 1)[0]
    first = clusters.split(TEMPLATES[0]["entailment"], 1)[1].split("</tr>", 1)[0]
    assert all(f"template-{n}</span>" in first for n in range(3)) and "repeater" not in first
    again = clusters.split(TEMPLATES[1]["neutral"], 1)[1].split("</tr>", 1)[0]
    assert 'repeater</span> <span class="muted small">(2, 2)' in again


# Paraphrases: each id changes another word of each template sentence.
WORD_CHANGES = [
    {"crowd": "audience", "album": "record", "silent": "quiet"},
    {"band": "group", "songs": "tunes", "empty": "deserted"},
    {"square": "plaza", "first": "latest", "completely": "totally"},
    {"listens": "dances", "plays": "performs", "square": "park"},
]


def paraphrased(texts, changes):
    def one_word_changed(text):
        for old, new in changes.items():
            if old in text:
                return text.replace(old, new, 1)
        raise AssertionError(f"no word of {changes} in {text!r}")

    return {name: one_word_changed(text) for name, text in texts.items()}


def test_ids_writing_one_template_with_a_word_changed_have_their_codes_held(dataset, make_worker):
    """Trigrams put one changed word of six to eight at 0.49-0.74: below 0.85, nothing was flagged.
    The first id writes the template as it is, each later id changes another word of it."""
    study = holding_study(dataset, tasks=1)
    sessions = []
    for n, changes in enumerate([{}, *WORD_CHANGES[1:]]):
        worker = make_worker(username=f"paraphraser-{n}")
        session = visit(study, worker, f"paraphrase-{n}")
        write(worker, session, paraphrased(TEMPLATES[0], changes) if changes else TEMPLATES[0])
        session.refresh_from_db()
        sessions.append(session)
    first, *later = sessions
    assert first.completion_code and flags_of(first) == [[], [], []]
    for session in later:
        assert flags_of(session) == [["copy"]] * 3
        assert session.completion_code == "" and "3 of 3" in session.code_held_reason
    rows = WrittenSentence.objects.filter(study_session__in=later)
    assert all(row.copy_of is not None and row.copy_similarity is not None and row.copy_similarity < 1 for row in rows)


# A farm of sentences of four words or fewer, none of them from the premise (a boat at dawn).
SHORT_FARM = {
    "entailment": "Musicians perform music.",
    "neutral": "Tourists enjoy concerts.",
    "contradiction": "Everyone stays asleep.",
}


def test_ids_writing_one_list_of_short_sentences_have_their_codes_held(dataset, make_worker):
    """Sentences under five words were never compared: the farm's 4-word list passed untouched."""
    study = holding_study(dataset, tasks=1)
    sessions = []
    for n in range(3):
        worker = make_worker(username=f"short-farm-{n}")
        session = visit(study, worker, f"short-farm-{n}")
        write(worker, session, SHORT_FARM)
        session.refresh_from_db()
        sessions.append(session)
    assert sessions[0].completion_code
    for session in sessions[1:]:
        assert flags_of(session) == [["copy"]] * 3
        assert session.completion_code == ""


def test_written_sentences_keep_their_template_signature(dataset, make_worker):
    write(make_worker(), None, {**TEMPLATES[0], "contradiction": "The boat never left the harbour."})
    row = WrittenSentence.objects.get(normalised="the boat never left the harbour")
    # The premise says "the boat left the harbour at dawn": its words are slots.
    assert row.signature == "the _ never _ the _"
    assert row.own_words == ["never"]
