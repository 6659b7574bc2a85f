"""Typing evidence on the real writing page in headless Chromium (static/js/typing_evidence.js):
a sentence typed with human delays and corrections is not flagged; the same text pasted, set by
script, dropped or typed at a machine's even pace is; each study setting acts as said."""

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from authorship.models import WritingEvidence
from collection.models import WritingClaim
from corpus.models import Dataset, Pair
from crowd.models import ClaimStatus, Study, StudySession, TypingEvidenceAction
from tests.authorship import records
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SENTENCES = {
    "entailment": "A boat left the harbour.",
    "neutral": "The boat carried fishermen.",
    "contradiction": "The boat never moved at all.",
}


def pause_the_clock(page):
    """Hold the page's clock (Playwright's clock, installed before the page loaded): keys then get
    the intervals the test gives them, however loaded the machine running the browser is."""
    if not getattr(page, "clock_paused", False):
        # In seconds: Playwright's Python API reads a number as seconds (milliseconds would jump the
        # page's clock some 50,000 years ahead, past every hold's end: static/js/hold.js).
        page.clock.pause_at((int(page.evaluate("Date.now()")) + 1000) / 1000)
        page.clock_paused = True  # held from here on, across the page's later loads too


def submit(page):
    """Send the page. Its clock is held and moved by the test, the server's is not: the open claims
    are made as old as the page says it was open (the server judges the record against them)."""
    for claim in WritingClaim.objects.filter(status=ClaimStatus.OPEN):
        records.age_claim(claim.token, seconds=600)
    page.click("#submit-hypotheses")


def type_with_intervals(page, selector, keys, intervals):
    page.locator(selector).focus()
    for key, interval in zip(keys, intervals, strict=True):
        page.clock.run_for(round(interval))
        page.keyboard.press(key) if key == "Backspace" else page.keyboard.type(key)


def type_like_a_person(page, selector, text, seed=0):
    """Key by key, intervals around Dhakal et al.'s 239 ms mean (lognormal: median 200 ms, CV about
    0.5), with a mistyped letter corrected by Backspace now and then."""
    rng = random.Random(seed)
    keys = []
    for index, char in enumerate(text):
        if index % 9 == 4 and char.isalpha():
            keys += ["x", "Backspace"]
        keys.append(char)
    pause_the_clock(page)
    type_with_intervals(page, selector, keys, [200 * rng.lognormvariate(0, 0.5) for _ in keys])


def machine_type(page, selector, text):
    """A program's even pace: one key every 100 ms."""
    pause_the_clock(page)
    type_with_intervals(page, selector, list(text), [100] * len(text))


def paste(page, selector, text):
    page.evaluate("text => navigator.clipboard.writeText(text)", text)
    page.locator(selector).focus()
    page.keyboard.press("Control+V")


def set_by_script(page, selector, text):
    page.locator(selector).evaluate("(field, text) => { field.value = text; }", text)


def drop(page, selector, text):
    box = page.locator(selector).bounding_box()
    client = page.context.new_cdp_session(page)
    data = {"items": [{"mimeType": "text/plain", "data": text}], "dragOperationsMask": 1}
    for kind in ("dragEnter", "dragOver", "drop"):
        client.send("Input.dispatchDragEvent", {"type": kind, "x": box["x"] + 10, "y": box["y"] + 10, "data": data})
    client.detach()


@dataclass
class PageOpener:
    """Opens the writing page (`writing_page(study)`: of a study, or the default collection's);
    `dataset` is the data set it serves."""

    open: Callable[..., Any]
    dataset: Dataset

    def __call__(self, study: Study | None = None) -> Any:
        return self.open(study)


@pytest.fixture
def writing_page(chromium_browser, live_server, make_worker):
    dataset, genre = writing_setup(slug="browser-typing")
    add_premises(dataset, genre, 3)
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.clock.install()

    def open_page(study=None):
        if study is None:
            make_worker(username="typist", password="typist-pass-1")
            page.goto(f"{live_server.url}/accounts/login/")
            page.fill("input[name=username]", "typist")
            page.fill("input[name=password]", "typist-pass-1")
            page.click("button[type=submit]")
            page.get_by_role("link", name="Next writing task").click()
        else:
            page.goto(
                f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e"
                "&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=typing-session-1"
            )
        page.wait_for_url(re.compile(r"/write/[0-9a-f-]+/$"))
        return page

    yield PageOpener(open_page, dataset)
    context.close()


def fill_the_others(page, ways):
    for name, text in SENTENCES.items():
        if name not in ways:
            page.locator(f"#id_{name}").fill(text)


def evidence_of(field_name):
    return WritingEvidence.objects.get(pair__hypothesis=SENTENCES[field_name])


def test_the_page_tells_the_participant_that_typing_is_measured(writing_page):
    page = writing_page()
    assert "how you type" in page.inner_text("#typing-notice")
    assert "never what you type" in page.inner_text("#typing-notice")


def test_a_sentence_typed_with_human_delays_and_corrections_is_not_flagged(writing_page):
    page = writing_page()
    type_like_a_person(page, "#id_entailment", SENTENCES["entailment"], seed=1)
    fill_the_others(page, {"entailment"})
    submit(page)
    page.locator(".message.success").wait_for()
    typed = evidence_of("entailment")
    assert typed.has_evidence and typed.flags == [] and not typed.flagged
    assert typed.deletions >= 1 and typed.keystrokes > len(SENTENCES["entailment"])
    assert 100 < typed.interval_mean_ms < 600 and typed.interval_cv > 0.2
    # What the page sent holds numbers only, never the text.
    assert WritingEvidence.objects.filter(flagged=True).count() == 2  # the two filled in by Playwright's fill


@pytest.mark.parametrize(
    ("way", "flag"),
    [
        (paste, "pasted"),
        (set_by_script, "not-typed"),
        (drop, "pasted"),
        (machine_type, "machine-cadence"),
    ],
)
def test_the_same_sentence_pasted_scripted_dropped_or_machine_typed_is_flagged(writing_page, way, flag):
    page = writing_page()
    way(page, "#id_entailment", SENTENCES["entailment"])
    fill_the_others(page, {"entailment"})
    submit(page)
    page.locator(".message.success").wait_for()
    found = evidence_of("entailment")
    assert found.flagged and flag in found.flags


def study_of(dataset, action, tasks=1):
    return make_study(dataset, slug=f"typing-{action}", tasks_per_batch=tasks, typing_evidence_action=action)


def test_a_study_that_warns_tells_the_participant_at_once(writing_page):
    page = writing_page(study_of(writing_page.dataset, TypingEvidenceAction.WARN))
    paste(page, "#id_entailment", SENTENCES["entailment"])
    warning = page.locator("#id_entailment-typing-warning")
    warning.wait_for()  # before any submit
    assert "Please type your own sentences" in warning.inner_text()
    assert page.locator("#id_neutral-typing-warning").count() == 0


def test_a_study_that_only_records_says_nothing_and_gives_the_code(writing_page):
    page = writing_page(study_of(writing_page.dataset, TypingEvidenceAction.RECORD))
    for name, text in SENTENCES.items():
        paste(page, f"#id_{name}", text)
    assert page.locator(".typing-warning").count() == 0
    submit(page)
    page.wait_for_selector("#completion-code")
    assert WritingEvidence.objects.filter(flagged=True).count() == 3


def test_a_study_that_refuses_pasted_text_refuses_it_and_keeps_the_typed_sentences(writing_page):
    page = writing_page(study_of(writing_page.dataset, TypingEvidenceAction.REFUSE_PASTE))
    paste(page, "#id_contradiction", SENTENCES["contradiction"])
    assert page.locator("#id_contradiction").input_value() == ""  # the paste is stopped in the page
    assert "Pasting is turned off" in page.inner_text("#id_contradiction-typing-warning")
    type_like_a_person(page, "#id_entailment", SENTENCES["entailment"], seed=2)
    type_like_a_person(page, "#id_neutral", SENTENCES["neutral"], seed=3)
    set_by_script(page, "#id_contradiction", SENTENCES["contradiction"])  # and a script is refused by the server
    submit(page)
    errors = page.locator("#contradiction-errors")
    errors.wait_for()
    assert "type this sentence yourself" in errors.inner_text()
    assert page.locator("#entailment-errors").count() == 0
    assert page.locator("#id_entailment").input_value() == SENTENCES["entailment"]
    assert page.locator("#id_neutral").input_value() == SENTENCES["neutral"]
    assert Pair.objects.count() == 0
    # Typed now, the refused sentence goes through with what the first page counted for the others.
    page.locator("#id_contradiction").fill("")
    type_like_a_person(page, "#id_contradiction", SENTENCES["contradiction"], seed=4)
    submit(page)
    page.wait_for_selector("#completion-code")
    assert Pair.objects.count() == 3
    assert not WritingEvidence.objects.filter(flagged=True).exists()


def test_a_study_that_holds_codes_holds_the_code_of_pasted_sentences(writing_page):
    page = writing_page(study_of(writing_page.dataset, TypingEvidenceAction.HOLD_CODE))
    for name, text in SENTENCES.items():
        paste(page, f"#id_{name}", text)
    submit(page)
    page.wait_for_selector("#completion-held")
    session = StudySession.objects.get()
    assert session.completion_code == "" and "3 of 3" in session.code_held_reason


def test_a_study_that_holds_codes_gives_the_code_to_a_typist(writing_page):
    page = writing_page(study_of(writing_page.dataset, TypingEvidenceAction.HOLD_CODE))
    for seed, (name, text) in enumerate(SENTENCES.items()):
        type_like_a_person(page, f"#id_{name}", text, seed=seed)
    submit(page)
    page.wait_for_selector("#completion-code")
    assert StudySession.objects.get().completion_code


def test_a_pasted_sentence_restored_after_a_reload_is_still_pasted(writing_page):
    page = writing_page()
    paste(page, "#id_entailment", SENTENCES["entailment"])
    page.reload()
    page.locator("[data-draft-note]").wait_for()  # worker.js put the draft back
    assert page.locator("#id_entailment").input_value() == SENTENCES["entailment"]
    fill_the_others(page, {"entailment"})
    submit(page)
    page.locator(".message.success").wait_for()
    found = evidence_of("entailment")
    assert "pasted" in found.flags and found.prefilled_chars == 0


def population_skewness(gaps):
    mean = sum(gaps) / len(gaps)
    second = sum((gap - mean) ** 2 for gap in gaps) / len(gaps)
    return sum((gap - mean) ** 3 for gap in gaps) / len(gaps) / second**1.5


def test_the_page_sends_the_skewness_of_its_intervals(writing_page):
    """typing_evidence.js's running sums give the skewness of the intervals the keys had."""
    page = writing_page()
    pause_the_clock(page)
    text = SENTENCES["entailment"]
    rng = random.Random(4)
    gaps = [round(200 * rng.lognormvariate(0, 0.6)) for _ in text]
    gaps = [max(20, min(gap, 1900)) for gap in gaps]
    type_with_intervals(page, "#id_entailment", list(text), gaps)
    page.locator("#id_entailment").evaluate(
        "field => field.form.dispatchEvent(new Event('submit', {cancelable: true}))"
    )
    sent = json.loads(page.locator("input[name=typing_evidence]").input_value())["fields"]["entailment"]
    assert sent["sk"] == pytest.approx(population_skewness(gaps[1:]), abs=0.002)


def test_three_sentences_typed_at_an_even_pace_with_a_uniform_jitter_are_a_machines(writing_page):
    """The issue's Playwright bot: each gap 240 ms +-60% (a CV of 0.35, as wide as a person's)."""
    page = writing_page()
    pause_the_clock(page)
    rng = random.Random(7)
    for name, text in SENTENCES.items():
        type_with_intervals(page, f"#id_{name}", list(text), [240 * (1 + rng.uniform(-0.6, 0.6)) for _ in text])
    submit(page)
    page.locator(".message.success").wait_for()
    assert all("machine-cadence" in evidence_of(name).flags for name in SENTENCES)


def test_three_sentences_typed_like_a_person_are_not(writing_page):
    page = writing_page()
    for seed, name in enumerate(SENTENCES):
        type_like_a_person(page, f"#id_{name}", SENTENCES[name], seed=seed)
    submit(page)
    page.locator(".message.success").wait_for()
    assert all(evidence_of(name).flags == [] for name in SENTENCES)
