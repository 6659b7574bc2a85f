"""Each judgement of authorship.judgements on its own, from hand-made evidence (no browser, no database)."""

import json

import pytest

from authorship import judgements
from authorship.evidence import MAX_COUNT, FieldEvidence, read_evidence
from authorship.judgements import Flag
from tests.present import present

TEXT = "A man is playing a guitar on a stage."  # 37 characters
TYPED = FieldEvidence(
    keystrokes=41, deletions=2, typed=39, intervals=40, interval_mean_ms=240.0, interval_cv=0.55, typing_ms=9600
)


def typed_fields(chars):
    """A consistent typing record of `chars` typed characters (keys, intervals, time)."""
    return {
        "keystrokes": chars + 1,
        "typed": chars,
        "intervals": chars,
        "interval_mean_ms": 240.0,
        "interval_cv": 0.5,
        "typing_ms": chars * 240,
    }


def test_a_typed_sentence_with_corrections_earns_no_flag():
    assert judgements.field_flags(TYPED, TEXT) == []


def test_most_of_the_text_pasted_is_pasted():
    evidence = FieldEvidence(pasted=len(TEXT))
    assert judgements.is_pasted(evidence, len(TEXT))
    assert judgements.field_flags(evidence, TEXT) == [Flag.PASTED]


def test_a_dropped_text_counts_as_pasted():
    assert judgements.is_pasted(FieldEvidence(dropped=30, typed=7), len(TEXT))


def test_a_pasted_word_in_a_typed_sentence_is_not_pasted():
    evidence = FieldEvidence(typed=31, pasted=6, keystrokes=31)
    assert not judgements.is_pasted(evidence, len(TEXT))


@pytest.mark.parametrize("way", ["untrusted", "scripted", "unkeyed"])
def test_text_no_keystroke_produced_is_not_typed(way):
    evidence = FieldEvidence(**{way: len(TEXT)})
    assert judgements.is_not_typed(evidence, len(TEXT))
    assert Flag.NOT_TYPED in judgements.field_flags(evidence, TEXT)


def test_text_the_record_does_not_explain_is_not_typed():
    """A forged or partial record (ten typed characters for a 37-character sentence)."""
    evidence = FieldEvidence(typed=10, keystrokes=10)
    assert judgements.unexplained_chars(evidence, len(TEXT)) == 27
    assert judgements.is_not_typed(evidence, len(TEXT))


def test_text_all_there_when_the_page_opened_is_not_typed():
    """Text all there when the page opened is flagged as not typed: a draft restored by the page keeps
    its own counts (typing_evidence.js), so prefilled text is text nobody typed here."""
    assert judgements.field_flags(FieldEvidence(prefilled=len(TEXT)), TEXT) == [Flag.NOT_TYPED]


def test_the_writers_own_text_the_server_put_back_is_not_flagged():
    """An adversarial task puts the last try back in the field: that much prefilled text is theirs."""
    evidence = FieldEvidence(prefilled=30, **typed_fields(7))
    assert judgements.field_flags(evidence, TEXT, restorable_chars=30) == []
    assert judgements.field_flags(evidence, TEXT) == [Flag.NOT_TYPED]


@pytest.mark.parametrize(
    ("mean", "cv", "machine"),
    [
        (240.0, 0.55, False),  # an average typist (Dhakal et al. 2018: ~239 ms)
        (120.0, 0.35, False),  # a fast typist
        (40.0, 0.5, True),  # faster than people sustain
        (100.0, 0.05, True),  # one key every 100 ms, evenly: a program's pace
        (100.0, 0.19, True),
        (100.0, 0.21, False),
    ],
)
def test_cadence_faster_or_more_even_than_people_is_a_machines(mean, cv, machine):
    evidence = FieldEvidence(typed=37, keystrokes=37, intervals=36, interval_mean_ms=mean, interval_cv=cv)
    assert judgements.has_machine_cadence(evidence) is machine


def test_cadence_is_not_judged_on_a_few_keys():
    evidence = FieldEvidence(typed=5, intervals=4, interval_mean_ms=20.0, interval_cv=0.01)
    assert not judgements.has_machine_cadence(evidence)


def test_text_pasted_right_after_coming_back_from_another_tab_is_pasted_after_away():
    evidence = FieldEvidence(pasted=len(TEXT), pasted_after_away=len(TEXT))
    assert judgements.is_pasted_after_away(evidence, len(TEXT))
    assert judgements.field_flags(evidence, TEXT) == [Flag.PASTED, Flag.PASTED_AFTER_AWAY]
    assert not judgements.is_pasted_after_away(FieldEvidence(pasted=len(TEXT)), len(TEXT))


def test_no_typing_record_is_its_own_flag_which_holds_and_refusals_act_on():
    assert judgements.field_flags(None, TEXT) == [Flag.NO_EVIDENCE]
    assert Flag.NO_EVIDENCE in judgements.AUTHORSHIP_FLAGS and Flag.NO_EVIDENCE in judgements.REFUSED_FLAGS
    assert judgements.field_flags(None, "") == []


def test_a_near_copy_on_another_premise_is_repeated_but_not_on_the_same_premise():
    earlier = [(1, "A man is playing a guitar."), (2, "The dog sleeps.")]
    new = [(3, "a man is playing a guitar!"), (2, "The dog sleeps."), (4, "A woman reads a book.")]
    assert judgements.repeated_sentences(earlier, new) == [True, False, False]


def test_nine_prepared_sentences_on_three_premises_repeat_within_the_session():
    prepared = ["Someone is outside.", "A person waits for a friend.", "Nobody is there."]
    new = [(premise, text) for premise in (1, 2, 3) for text in prepared]
    assert judgements.repeated_sentences([], new) == [False] * 3 + [True] * 6


def test_a_session_is_flagged_from_a_third_of_its_hypotheses():
    assert not judgements.session_is_flagged(0, 9)
    assert not judgements.session_is_flagged(2, 9)
    assert judgements.session_is_flagged(3, 9)
    assert judgements.session_is_flagged(1, 3)


# --- reading the posted evidence: tolerant, bounded ------------------------------------------


def page(fields, **extra):
    return json.dumps({"v": 1, "open": 5000, "away": 1, "awayMs": 800, "fields": fields, **extra})


def test_the_posted_evidence_is_read_per_field():
    raw = page({"entailment": {"k": 40, "d": 2, "t": 37, "fk": 1200, "tt": 9000, "n": 39, "m": 231.5, "cv": 0.61}})
    evidence = present(read_evidence(raw, ["entailment", "neutral"]))
    assert evidence.away_count == 1 and evidence.away_ms == 800
    assert set(evidence.fields) == {"entailment"}
    found = evidence.fields["entailment"]
    assert (found.keystrokes, found.deletions, found.typed, found.first_key_ms) == (40, 2, 37, 1200)
    assert (found.interval_mean_ms, found.interval_cv) == (231.5, 0.61)


@pytest.mark.parametrize(
    "raw",
    [None, "", "not json", "[1, 2]", json.dumps({"v": 2, "fields": {}}), json.dumps({"v": 1}), "{" * 5000, "x" * 9000],
)
def test_missing_or_malformed_evidence_is_no_evidence(raw):
    assert read_evidence(raw, ["entailment"]) is None


def test_every_number_is_checked_and_bounded():
    raw = page(
        {
            "entailment": {"k": -5, "d": "many", "t": 1e30, "p": True, "fk": None, "m": float("nan"), "n": 3, "cv": -1},
            "neutral": "not an object",
        }
    ).replace("NaN", "1e999")
    found = present(read_evidence(raw, ["entailment", "neutral"])).fields
    assert set(found) == {"entailment"}
    entailment = found["entailment"]
    assert (entailment.keystrokes, entailment.deletions, entailment.pasted) == (0, 0, 0)
    assert entailment.typed == MAX_COUNT
    assert entailment.first_key_ms is None and entailment.interval_mean_ms is None and entailment.interval_cv is None
