"""The strict reading of a model's answers and the filling of its prompts, at their edges: one JSON
object and nothing else (each refusal with its own reason), the label one of the task kind's words
exactly, the reason text only, squeezed to single spaces and cut at 300 characters; the writing
check's verdicts stored with underscores; the data notice after the researcher's system message
(or alone); and the crowd's text quoted as one JSON string, never filled twice."""

import json

import pytest

from corpus.labels import LABELS, TWO_WAY_LABELS
from model_annotators.models import TaskKind
from model_annotators.prompts import (
    DATA_NOTICE,
    REASON_CHARS,
    Parsed,
    fill,
    parse_answer,
    parse_verdict,
    quoted,
    with_data_notice,
    words_of,
)


def test_each_task_kind_is_answered_in_its_own_words():
    assert words_of(TaskKind.TWO_WAY) == TWO_WAY_LABELS
    assert words_of(TaskKind.VALIDATION) == LABELS
    assert words_of(TaskKind.MPE) == LABELS


# --- one JSON object and nothing else ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "the answer is not one JSON object"),
        ("   ", "the answer is not one JSON object"),
        ('{"label": "neutral"', "the answer is not one JSON object"),  # opened, never closed
        ('"label": "neutral"}', "the answer is not one JSON object"),  # closed, never opened
        ('{"label": "neutral"} {"label": "neutral"}', "the answer is not valid JSON"),
        ("{label: neutral}", "the answer is not valid JSON"),
    ],
)
def test_an_answer_that_is_not_one_json_object_says_why(text, why):
    assert parse_answer(text, TaskKind.VALIDATION) == Parsed(why=why)
    assert parse_verdict(text) == Parsed(why=why)


def test_an_answer_of_no_text_at_all_is_not_one_json_object():
    assert parse_answer(None, TaskKind.VALIDATION) == Parsed(why="the answer is not one JSON object")  # type: ignore[arg-type]


def test_a_label_not_of_the_task_kinds_words_is_refused_with_the_words():
    assert parse_answer('{"label": "Neutral"}', TaskKind.VALIDATION) == Parsed(
        why="the label 'Neutral' is not one of entailment, neutral, contradiction"
    )
    assert parse_answer('{"label": "neutral"}', TaskKind.TWO_WAY) == Parsed(
        why="the label 'neutral' is not one of entailed, not-entailed"
    )
    # A missing label, a number: named as they came, the name cut at 40 characters.
    assert parse_answer('{"reason": "r"}', TaskKind.VALIDATION).why.startswith("the label 'None' is not one of")
    assert parse_answer('{"label": 3}', TaskKind.VALIDATION).why.startswith("the label '3' is not one of")
    long_word = "x" * 60
    assert parse_answer(json.dumps({"label": long_word}), TaskKind.VALIDATION).why == (
        f"the label {'x' * 40!r} is not one of entailment, neutral, contradiction"
    )


def test_a_reason_that_is_not_text_is_refused():
    assert parse_answer('{"label": "neutral", "reason": 5}', TaskKind.VALIDATION) == Parsed(
        why="the reason is not text"
    )
    assert parse_verdict('{"verdict": "fits", "reason": ["a"]}') == Parsed(why="the reason is not text")


def test_a_label_without_a_reason_is_read_with_an_empty_reason():
    assert parse_answer('{"label": "contradiction"}', TaskKind.VALIDATION) == Parsed(label="contradiction")
    assert parse_verdict('{"verdict": "fits"}') == Parsed(label="fits")


def test_the_reason_is_squeezed_to_single_spaces_and_cut_at_300_characters():
    reason = "  Because\n the   premise\tsays so.  "
    assert parse_answer(json.dumps({"label": "entailment", "reason": reason}), TaskKind.MPE) == Parsed(
        label="entailment", reason="Because the premise says so."
    )
    long_reason = "a" * 400
    read = parse_answer(json.dumps({"label": "neutral", "reason": long_reason}), TaskKind.VALIDATION)
    assert read.reason == "a" * REASON_CHARS and REASON_CHARS == 300
    verdict = parse_verdict(json.dumps({"verdict": "nonsense", "reason": "b  c " + "d" * 400}))
    assert verdict.reason == ("b c " + "d" * 400)[:300]


def test_a_two_way_answer_is_stored_as_a_core_label():
    assert parse_answer('{"label": "entailed", "reason": "r"}', TaskKind.TWO_WAY) == Parsed(
        label="entailment", reason="r"
    )
    assert parse_answer('{"label": "not-entailed", "reason": "r"}', TaskKind.TWO_WAY) == Parsed(
        label="neutral", reason="r"
    )


# --- the writing check's verdict ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "stored"), [("fits", "fits"), ("does-not-fit", "does_not_fit"), ("nonsense", "nonsense")]
)
def test_each_verdict_is_stored_with_underscores(word, stored):
    assert parse_verdict(json.dumps({"verdict": word, "reason": "r"})) == Parsed(label=stored, reason="r")


def test_a_verdict_not_of_the_verdict_words_is_refused_with_the_words():
    assert parse_verdict('{"verdict": "does_not_fit"}') == Parsed(
        why="the verdict 'does_not_fit' is not one of fits, does-not-fit, nonsense"
    )
    assert parse_verdict('{"label": "fits"}') == Parsed(
        why="the verdict 'None' is not one of fits, does-not-fit, nonsense"
    )
    assert parse_verdict(json.dumps({"verdict": "y" * 50})).why == (
        f"the verdict {'y' * 40!r} is not one of fits, does-not-fit, nonsense"
    )
    assert parse_verdict("[1]") == Parsed(why="the answer is not one JSON object")
    assert parse_verdict('{"verdict": 1}').why.startswith("the verdict '1' is not one of")


# --- the prompt as sent ---------------------------------------------------------------------------


def test_the_data_notice_follows_the_researchers_system_message():
    assert with_data_notice("Label it.  \n") == f"Label it.\n\n{DATA_NOTICE}"
    assert with_data_notice("") == DATA_NOTICE
    assert with_data_notice(" \n ") == DATA_NOTICE


def test_the_crowds_text_is_one_json_string_its_quotes_and_breaks_escaped():
    assert quoted('She said "stop".\nThen left café') == '"She said \\"stop\\".\\nThen left café"'


def test_the_template_is_filled_once_with_the_quoted_text_and_the_plain_label():
    template = "P: {premise}\nH: {hypothesis}\nL: {label}\nkeep {other}"
    filled = fill(template, "A {hypothesis} here", 'Say "yes"', "entailment")

    assert filled == 'P: "A {hypothesis} here"\nH: "Say \\"yes\\""\nL: entailment\nkeep {other}'


def test_a_template_without_a_label_field_is_filled_without_one():
    assert fill("{premise} / {hypothesis} / {label}", "p", "h") == '"p" / "h" / '
