"""A hypothesis must read as a sentence: shuffled common words ("Banana water
purple under city simply chair.") passed every writing rule, reached the adversarial model 18 of
18 times and earned codes. The writing rules now parse the hypothesis (collection/sentence_shape.py)
and refuse word salad with a message naming what is missing; real hypotheses still pass."""

import json

import pytest

from collection.sentence_shape import shape_problem, shapes
from collection.services import hypothesis_errors
from collection.writing_rules import TaskRules, hypothesis_problem
from corpus.models import Label
from tests.conftest import shared_file

PREMISE = "A young man in a red jacket rides a bicycle down a busy street."
GOOD = {
    Label.ENTAILMENT: "A person is riding a bike outdoors.",
    Label.NEUTRAL: "The man is late for his first day at work.",
    Label.CONTRADICTION: "The man is asleep in his bed at home.",
}
# The attack's own sentence and salads of the same common words (bench/attacks/word_salad.py).
SALAD = [
    "Banana water purple under city simply chair.",
    "Blue city chair over yellow water beside.",
    "Man street purple simply under beside dog.",
    "Big water simply small over banana.",
    "Table city house small dog beside.",
]
# Caption-like hypotheses without a finite verb, as SNLI has many: they stay accepted.
FRAGMENTS = ["A man outside.", "Two dogs running.", "A person in a suit", "People praying inside a church."]


@pytest.mark.parametrize("text", SALAD)
def test_word_salad_is_refused_naming_what_is_missing(text):
    message = hypothesis_problem(PREMISE, text, TaskRules())
    assert message is not None and message.startswith("This does not read as an English sentence: ")
    assert "it has no verb" in message and message.endswith("'A man is riding a bike down the street.'")


def test_the_writing_task_refuses_word_salad_in_its_box_and_keeps_the_others():
    errors = hypothesis_errors(PREMISE, {**GOOD, Label.NEUTRAL: SALAD[0]})
    assert list(errors) == ["neutral"] and "does not read as an English sentence" in errors["neutral"]


@pytest.mark.parametrize("text", FRAGMENTS + list(GOOD.values()))
def test_sentences_and_verbless_captions_are_accepted(text):
    assert shape_problem(text) is None
    assert hypothesis_problem(PREMISE, text, TaskRules()) is None


def test_at_most_half_a_percent_of_snli_dev_hypotheses_are_refused():
    """Every fifth SNLI dev hypothesis (2,000; bench/sentence_check.py parses all 10,000: 0.30%)."""
    lines = shared_file("snli_1.0_dev.jsonl").read_text(encoding="utf-8").splitlines()[::5]
    texts = [json.loads(line)["sentence2"] for line in lines]
    refused = [text for text, shape in zip(texts, shapes(texts), strict=True) if not shape.reads_as_sentence]
    assert len(refused) <= 0.005 * len(texts), refused


def test_at_most_half_a_percent_of_mpe_dev_hypotheses_are_refused():
    rows = shared_file("mpe/mpe_dev.txt").read_text(encoding="utf-8").splitlines()[1:]
    texts = [row.split("\t")[5] for row in rows]
    refused = [text for text, shape in zip(texts, shapes(texts), strict=True) if not shape.reads_as_sentence]
    assert len(refused) <= 0.005 * len(texts), refused
