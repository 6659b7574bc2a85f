"""Typing records judged against what the server saw: the claim's own lifetime
(served to submitted), keystrokes that cover the typed characters, a record with typing in it, text
typed on this page, and a page without any record. Each test names a record today's code took at
its word; all go through the one judgement of the writing submit and the adversarial try."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from adversarial.models import AdversarialTry
from authorship import evidence, judgements
from authorship.evidence import FieldEvidence
from authorship.judgements import Flag
from authorship.models import WritingEvidence
from collection import services, writing_claims
from corpus.models import Split
from crowd.models import StudySession, TypingEvidenceAction
from tests.adversarial.helpers import ContractModel, adversarial_study, hypothesis_for
from tests.adversarial.test_task import start
from tests.authorship import records
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

SENTENCES = {
    "entailment": "A boat left the harbour.",
    "neutral": "The boat carried fishermen at dawn.",
    "contradiction": "The boat stayed in the harbour all day.",
}
TEXT = "A man is playing a guitar on a stage tonight."  # 45 characters


def evidence_of(field: dict) -> FieldEvidence:
    return FieldEvidence(
        keystrokes=field.get("k", 0),
        deletions=field.get("d", 0),
        typed=field.get("t", 0),
        prefilled=field.get("pre", 0),
        first_key_ms=field.get("fk"),
        typing_ms=field.get("tt", 0),
        intervals=field.get("n", 0),
        interval_mean_ms=field.get("m"),
        interval_cv=field.get("cv"),
        interval_skew=field.get("sk"),
    )


# --- the judgement, on its own ------------------------------------------------------------------


def test_an_honest_record_inside_a_two_minute_claim_earns_no_flag():
    flags = judgements.page_field_flags(
        evidence.PageEvidence(fields={"h": evidence_of(records.typed(TEXT))}, open_ms=60_000),
        {"h": TEXT},
        claim_open_ms=120_000,
    )
    assert flags == {"h": []}


@pytest.mark.parametrize(
    ("what", "field", "open_ms"),
    [
        ("34 s of typing a second after the claim", records.typed(TEXT, first_key_ms=3000), 45_000),
        ("an hour of typing", {**records.typed(TEXT), "tt": 3_600_000, "m": round(3_600_000 / 46, 1)}, 3_700_000),
        ("a first key after ten minutes", records.typed(TEXT, first_key_ms=600_000), 0),
    ],
)
def test_times_longer_than_the_claim_has_been_open_are_flagged(what, field, open_ms):
    page = evidence.PageEvidence(fields={"h": evidence_of(field)}, open_ms=open_ms)
    flags = judgements.page_field_flags(page, {"h": TEXT}, claim_open_ms=1100)["h"]
    assert Flag.TIMES_OUTSIDE_CLAIM in flags, what


def test_a_sentence_sent_sooner_than_its_length_takes_to_type_is_flagged():
    """45 characters take at least 2.7 s at 60 ms a character, more than half a second and the 2 s
    tolerance; the record (no time claimed) does not matter."""
    field = {**records.typed(TEXT), "fk": 0, "tt": 46 * 20, "m": 20.0}
    page = evidence.PageEvidence(fields={"h": evidence_of(field)}, open_ms=0)
    assert Flag.TOO_FAST in judgements.page_field_flags(page, {"h": TEXT}, claim_open_ms=500)["h"]
    assert Flag.TOO_FAST not in judgements.page_field_flags(page, {"h": TEXT}, claim_open_ms=5000)["h"]


@pytest.mark.parametrize(
    ("what", "field"),
    [
        ("one keystroke for the whole sentence", {"k": 1, "t": len(TEXT), "fk": 900}),
        ("every figure zero", {"k": 0, "t": len(TEXT), "fk": 0, "tt": 0, "n": 0, "m": 0, "cv": 0}),
        ("keys but no intervals", {"k": len(TEXT), "t": len(TEXT), "n": 0}),
        ("intervals that do not add up to the typing time", {**records.typed(TEXT), "tt": 99_000}),
        ("more intervals than pairs of keys", {**records.typed(TEXT), "k": 10}),
        ("every character prefilled", {"pre": len(TEXT)}),
    ],
)
def test_records_no_typing_could_leave_are_not_typed(what, field):
    assert Flag.NOT_TYPED in judgements.field_flags(evidence_of(field), TEXT), what


# --- the writing submit -------------------------------------------------------------------------


@pytest.fixture
def writer(db, make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 6)
    return dataset, make_worker()


def forged_page():
    """The issue's bot: human-looking figures that add up, about 34 s of typing for the page."""
    return records.page({name: records.typed(text) for name, text in SENTENCES.items()}, open_ms=45_000)


def submit(worker, session, raw, *, aged_seconds=0):
    claim = present(writing_claims.claim_next_premise(worker, study_session=session))
    if aged_seconds:
        records.age_claim(claim.token, aged_seconds)
    return services.submit_hypotheses(worker, claim.token, typing_evidence=raw, **SENTENCES)


def session_of(dataset, worker, action):
    study = make_study(dataset, tasks_per_batch=1, typing_evidence_action=action)
    return StudySession.objects.create(study=study, worker=worker, external_session_id="s1")


def test_a_forged_human_looking_record_sent_at_once_holds_the_code(writer):
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.HOLD_CODE)
    submit(worker, session, forged_page())
    rows = list(WritingEvidence.objects.filter(study_session=session))
    assert len(rows) == 3 and all(row.flagged for row in rows)
    assert all({"times-outside-claim", "too-fast"} <= set(row.flags) for row in rows)
    session.refresh_from_db()
    assert session.is_complete and session.completion_code == ""


def test_the_same_record_after_two_minutes_of_the_claim_gets_the_code(writer):
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.HOLD_CODE)
    submit(worker, session, forged_page(), aged_seconds=120)
    assert not WritingEvidence.objects.filter(flagged=True).exists()
    session.refresh_from_db()
    assert session.completion_code and not session.code_held_reason


def test_a_study_that_refuses_pasted_text_refuses_a_forged_record_sent_at_once_and_keeps_nothing(writer):
    dataset, worker = writer
    session = session_of(dataset, worker, TypingEvidenceAction.REFUSE_PASTE)
    with pytest.raises(ValidationError) as refused:
        submit(worker, session, forged_page())
    assert set(refused.value.message_dict) == set(SENTENCES)
    assert "sooner than it can be typed" in refused.value.message_dict["neutral"][0]
    assert not WritingEvidence.objects.exists()


# --- the adversarial try: the same judgement ----------------------------------------------------


@pytest.fixture
def model():
    server = ContractModel()
    yield server
    server.close()


def test_an_adversarial_try_with_an_hour_of_typing_a_second_after_the_claim_is_flagged(client, make_worker, model):
    study, _ = adversarial_study(target_endpoint=model.url, max_tries=4, split=Split.TRAIN)
    task, _ = start(client, make_worker(), study)
    text = hypothesis_for(task.target_label, fooled=False)
    field = {**records.typed(text), "tt": 3_600_000, "m": round(3_600_000 / (len(text) + 1), 1)}
    client.post(
        reverse("adversarial:try", args=[task.writing_claim.token]),
        {"hypothesis": text, "typing_evidence": records.page({"hypothesis": field}, open_ms=3_700_000)},
    )
    attempt = AdversarialTry.objects.select_related("writing_evidence").get()
    evidence = present(attempt.writing_evidence)
    assert "times-outside-claim" in evidence.flags and evidence.flagged


def test_an_adversarial_try_that_changes_the_last_try_put_back_is_not_flagged(client, make_worker, model):
    """The page puts the last try back in the field: changing a word of it is typing, not a paste."""
    study, _ = adversarial_study(target_endpoint=model.url, max_tries=4, split=Split.TRAIN)
    task, _ = start(client, make_worker(), study)
    records.age_claim(task.writing_claim.token)
    url = reverse("adversarial:try", args=[task.writing_claim.token])
    first = hypothesis_for(task.target_label, fooled=False)
    client.post(url, {"hypothesis": first, "typing_evidence": records.page({"hypothesis": records.typed(first)})})
    second = first.rstrip(".") + " today."
    changed = {**records.typed(" today"), "pre": len(first) - 1, "len": len(second)}
    client.post(url, {"hypothesis": second, "typing_evidence": records.page({"hypothesis": changed})})
    tries = AdversarialTry.objects.order_by("number").select_related("writing_evidence")
    assert [present(t.writing_evidence).flags for t in tries] == [[], []]


# --- the pages say they need script -------------------------------------------------------------


def test_the_writing_page_says_in_a_noscript_line_that_it_needs_javascript(client, writer):
    _, worker = writer
    client.force_login(worker.user)
    claim = present(writing_claims.claim_next_premise(worker))
    page = client.get(reverse("writing_task", args=[claim.token])).content.decode()
    assert "<noscript>" in page and "This page needs JavaScript" in page.split("<noscript>", 1)[1]
