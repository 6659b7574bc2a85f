"""The writing submit stores each hypothesis's typing evidence and acts on the study's setting
(authorship.services through collection.services.submit_hypotheses)."""

import json

import pytest
from django.core.exceptions import ValidationError

from authorship.models import WritingEvidence
from collection import services, writing_claims
from corpus.models import Pair
from crowd.models import StudySession, TypingEvidenceAction
from tests.authorship import records
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

SENTENCES = {
    "entailment": "A boat left the harbour.",
    "neutral": "The boat carried fishermen at dawn.",
    "contradiction": "The boat stayed in the harbour all day.",
}


def typed(text):
    return records.typed(text)


def pasted(text):
    return {"p": len(text)}


def evidence(way=typed, **override):
    fields = {name: way(text) for name, text in SENTENCES.items()}
    fields.update(override)
    return json.dumps({"v": 1, "open": 60000, "away": 0, "awayMs": 0, "fields": fields})


@pytest.fixture
def writer(db, make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 12)
    return dataset, make_worker()


def session_of(dataset, worker, action, tasks=1):
    study = make_study(dataset, tasks_per_batch=tasks, typing_evidence_action=action)
    return StudySession.objects.create(study=study, worker=worker, external_session_id="s1")


def write(worker, session, raw, texts=SENTENCES):
    claim = present(writing_claims.claim_next_premise(worker, study_session=session))
    records.age_claim(claim.token)  # as old as typing three sentences takes
    return services.submit_hypotheses(worker, claim.token, typing_evidence=raw, **texts)


def test_each_hypothesis_gets_its_evidence_beside_it(writer):
    _, worker = writer
    result = write(worker, None, evidence(contradiction=pasted(SENTENCES["contradiction"])))
    rows = {row.field_name: row for row in WritingEvidence.objects.select_related("pair")}
    assert {row.pair for row in rows.values()} == set(result.pairs)
    assert rows["entailment"].has_evidence and rows["entailment"].flags == [] and not rows["entailment"].flagged
    assert rows["entailment"].keystrokes == len(SENTENCES["entailment"]) + 4
    assert rows["contradiction"].flags == ["pasted"] and rows["contradiction"].flagged
    assert rows["contradiction"].pasted_chars == len(SENTENCES["contradiction"])


@pytest.mark.parametrize("raw", [None, "", "garbage{", json.dumps({"v": 1, "fields": []})])
def test_missing_or_malformed_evidence_is_stored_flagged_as_no_typing_record(writer, raw):
    """A page without a record is a flag of its own (a bot leaves it out), its text kept."""
    _, worker = writer
    write(worker, None, raw)
    assert Pair.objects.count() == 3
    rows = list(WritingEvidence.objects.all())
    assert len(rows) == 3
    assert all(not row.has_evidence and row.flags == ["no-evidence"] and row.flagged for row in rows)


def test_a_study_that_refuses_pasted_text_refuses_the_field_and_saves_nothing(writer):
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.REFUSE_PASTE)
    with pytest.raises(ValidationError) as refused:
        write(worker, session, evidence(neutral=pasted(SENTENCES["neutral"])))
    assert set(refused.value.message_dict) == {"neutral"}
    assert "type this sentence yourself" in refused.value.message_dict["neutral"][0]
    assert Pair.objects.count() == 0 and WritingEvidence.objects.count() == 0


@pytest.mark.parametrize(
    "action", [TypingEvidenceAction.RECORD, TypingEvidenceAction.WARN, TypingEvidenceAction.HOLD_CODE]
)
def test_other_settings_save_pasted_text_as_evidence(writer, action):
    dataset, worker = writer
    session = session_of(dataset, worker, action, tasks=2)
    write(worker, session, evidence(pasted))
    assert Pair.objects.count() == 3 and WritingEvidence.objects.filter(flagged=True).count() == 3


def test_a_study_that_refuses_pasted_text_refuses_a_page_without_a_typing_record(writer):
    """Without a record nothing shows the sentences were typed; the message says the page
    needs script, every field keeps its text (nothing saved) and the participant can send again."""
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.REFUSE_PASTE)
    with pytest.raises(ValidationError) as refused:
        write(worker, session, None)
    assert set(refused.value.message_dict) == set(SENTENCES)
    assert all("needs JavaScript" in messages[0] for messages in refused.value.message_dict.values())
    assert Pair.objects.count() == 0 and WritingEvidence.objects.count() == 0


def test_a_study_that_holds_codes_holds_the_code_of_a_session_without_typing_records(writer):
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.HOLD_CODE, tasks=1)
    write(worker, session, None)
    session.refresh_from_db()
    assert session.is_complete and session.completion_code == ""
    assert session.code_held_reason.startswith("Sentences not typed by the writer: 3 of 3")


def prepared_on_three_premises(worker, session):
    for _ in range(3):
        write(worker, session, evidence(pasted))


def test_a_writer_who_pastes_nine_prepared_sentences_is_flagged_within_the_session(writer):
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.RECORD, tasks=3)
    prepared_on_three_premises(worker, session)
    rows = WritingEvidence.objects.filter(study_session=session)
    assert rows.count() == 9 and rows.filter(flagged=True).count() == 9
    assert sum("repeated" in row.flags for row in rows) == 6


def test_typed_repeats_alone_flag_the_session_too(writer):
    """Nine typed sentences, the same three on three premises: the repeats are the sign."""
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.HOLD_CODE, tasks=3)
    for _ in range(3):
        write(worker, session, evidence(typed))
    session.refresh_from_db()
    assert session.completion_code == "" and "6 of 9" in session.code_held_reason


def test_a_study_that_holds_codes_holds_the_code_of_a_pasting_session(writer):
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.HOLD_CODE, tasks=3)
    prepared_on_three_premises(worker, session)
    session.refresh_from_db()
    assert session.is_complete and session.completion_code == ""
    assert session.code_held_reason.startswith("Sentences not typed by the writer: 9 of 9")


def test_a_study_that_holds_codes_gives_the_code_to_a_typist(writer):
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.HOLD_CODE, tasks=1)
    write(worker, session, evidence(typed))
    session.refresh_from_db()
    assert session.completion_code and not session.code_held_reason


def test_a_study_that_only_records_gives_the_code_to_a_paster(writer):
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.RECORD, tasks=1)
    write(worker, session, evidence(pasted))
    session.refresh_from_db()
    assert session.completion_code and not session.code_held_reason
