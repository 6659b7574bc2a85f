"""One clock per page and a pace floor from measured human typing: the typing
all of a page's fields claim must fit, together, inside the time the server saw the task open; the
page's floor is the 99.9th-percentile typist's pace (Dhakal et al. 2018), not a quarter of the mean;
and the intervals' shape (skewness) tells a jittered even pace from a person's long-tailed one."""

import json
import math
import random

import pytest

from authorship import judgements
from authorship.evidence import FieldEvidence, PageEvidence, read_evidence
from authorship.judgements import Flag
from authorship.models import WritingEvidence
from collection import services, writing_claims
from crowd.models import StudySession, TypingEvidenceAction
from tests.authorship import records
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

SENTENCES = {
    "entailment": "A crowd is listening to a band in the square.",
    "neutral": "The band is playing for a wedding this evening.",
    "contradiction": "The square is empty and completely silent now.",
}
PAGE_CHARS = sum(map(len, SENTENCES.values()))


def field_of(record: dict) -> FieldEvidence:
    return present(read_evidence(records.page({"h": record}), ["h"])).fields["h"]


def page_of(fields: dict[str, dict], open_ms: int = 10_000) -> PageEvidence:
    return present(read_evidence(records.page(fields, open_ms=open_ms), list(fields)))


def each_claims(seconds: float, first_key_ms: int = 1000) -> dict[str, dict]:
    """Every field claims `seconds` of typing: figures that add up, a person's shape."""
    fields = {}
    for name, text in SENTENCES.items():
        mean = round(seconds * 1000 / (len(text) + 1), 1)
        fields[name] = records.typed(text, mean_ms=mean, first_key_ms=first_key_ms)
    return fields


# --- one clock for the page's fields together ------------------------------------------------


def test_fields_that_each_fit_but_together_claim_more_than_the_page_was_open_are_outside_the_claim():
    """The issue's forgery: three fields of 10 s each in a task open 15 s by the server's clock."""
    flags = judgements.page_field_flags(page_of(each_claims(10)), SENTENCES, claim_open_ms=15_000)
    assert all(Flag.TIMES_OUTSIDE_CLAIM in found for found in flags.values()), flags


def test_the_same_fields_in_a_task_open_long_enough_for_all_of_them_earn_no_flag():
    flags = judgements.page_field_flags(page_of(each_claims(10)), SENTENCES, claim_open_ms=35_000)
    assert flags == {name: [] for name in SENTENCES}


def test_the_page_typing_starts_at_its_first_key():
    """30 s of typing from a first key 20 s after the page opened does not fit 45 s."""
    fields = each_claims(10, first_key_ms=20_000)
    assert judgements.page_typing_outside_claim(list(page_of(fields).fields.values()), 45_000)
    assert not judgements.page_typing_outside_claim(list(page_of(fields).fields.values()), 55_000)


# --- the pace floor ---------------------------------------------------------------------------


def test_the_pace_floor_is_the_999th_percentile_typist_not_a_quarter_of_the_mean():
    """Dhakal et al. 2018: 51.56 words a minute, SD 20.20; the 99.9th percentile is 114 words a
    minute, 105 ms a character (a quarter of the 239 ms mean interval was 60 ms)."""
    assert 104 < judgements.FASTEST_MS_PER_CHAR < 106
    assert 94 < judgements.FASTEST_HUMAN_MEAN_MS < 96


def test_a_page_sent_at_60_ms_a_character_is_too_fast():
    """The issue's bot waited page characters x 60 ms: 140 characters, 8.4 s (plus the 2 s tolerance)."""
    waited = PAGE_CHARS * 60
    assert judgements.too_fast(PAGE_CHARS, waited)
    assert not judgements.too_fast(PAGE_CHARS, PAGE_CHARS * 110)


# --- the shape of the intervals ---------------------------------------------------------------


def skewness(gaps: list[float]) -> float:
    """As typing_evidence.js computes it (population moments)."""
    mean = sum(gaps) / len(gaps)
    second = sum((gap - mean) ** 2 for gap in gaps) / len(gaps)
    third = sum((gap - mean) ** 3 for gap in gaps) / len(gaps)
    return third / second**1.5


def record_of(text: str, gaps: list[float]) -> dict:
    mean = sum(gaps) / len(gaps)
    spread = math.sqrt(sum((gap - mean) ** 2 for gap in gaps) / (len(gaps) - 1))
    return {
        "k": len(gaps) + 1,
        "t": len(text),
        "fk": 1500,
        "n": len(gaps),
        "m": round(mean, 1),
        "cv": round(spread / mean, 3),
        "sk": round(skewness(gaps), 3),
        "tt": round(len(gaps) * round(mean, 1)),
        "len": len(text),
    }


def jittered(base_ms: float, jitter: float):
    return lambda count, rng: [base_ms * (1 + rng.uniform(-jitter, jitter)) for _ in range(count)]


def lognormal(mean_ms: float, cv: float):
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean_ms) - sigma * sigma / 2
    return lambda count, rng: [rng.lognormvariate(mu, sigma) for _ in range(count)]


def page_flags(draw, seed: int) -> dict[str, list[Flag]]:
    rng = random.Random(seed)
    fields = {name: record_of(text, draw(len(text) - 1, rng)) for name, text in SENTENCES.items()}
    return judgements.page_field_flags(page_of(fields, open_ms=60_000), SENTENCES, claim_open_ms=120_000)


@pytest.mark.parametrize(("base_ms", "seed"), [(240.0, 1), (240.0, 2), (100.0, 3)])
def test_an_even_pace_with_a_uniform_jitter_is_a_machines_cadence(base_ms, seed):
    """The issue's Playwright bots: 240 ms or 100 ms +-60%; a CV of 0.35, as wide as a person's."""
    flags = page_flags(jittered(base_ms, 0.6), seed)
    assert all(Flag.MACHINE_CADENCE in found for found in flags.values()), flags


@pytest.mark.parametrize(("mean_ms", "cv", "seed"), [(150.0, 0.35, 1), (240.0, 0.5, 2), (300.0, 0.7, 3)])
def test_a_persons_long_tailed_intervals_are_not(mean_ms, cv, seed):
    assert page_flags(lognormal(mean_ms, cv), seed) == {name: [] for name in SENTENCES}


def test_a_record_that_leaves_the_shape_out_counts_as_symmetric():
    fields = {
        name: {key: value for key, value in record.items() if key != "sk"} for name, record in each_claims(10).items()
    }
    flags = judgements.page_field_flags(page_of(fields), SENTENCES, claim_open_ms=120_000)
    assert all(Flag.MACHINE_CADENCE in found for found in flags.values()), flags


def test_the_shape_is_not_judged_on_a_short_page():
    """One short sentence (under 60 intervals) says too little about the shape to flag."""
    text = SENTENCES["entailment"]
    evidence = page_of({"h": record_of(text, jittered(240.0, 0.6)(len(text) - 1, random.Random(0)))})
    assert judgements.page_field_flags(evidence, {"h": text}, claim_open_ms=120_000) == {"h": []}


def test_the_skewness_is_read_signed_and_bounded():
    assert field_of({**records.typed("abcdef"), "sk": -0.42}).interval_skew == -0.42
    assert field_of({**records.typed("abcdef"), "sk": 1e9}).interval_skew == 1000.0
    assert field_of({**records.typed("abcdef"), "sk": "wide"}).interval_skew is None
    assert field_of({"k": 3, "n": 2, "m": 200, "tt": 400, "sk": 2.0}).interval_skew is None  # two intervals: no shape


# --- through the writing submit -----------------------------------------------------------------


@pytest.fixture
def writer(db, make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    return dataset, make_worker()


def test_a_paced_forgery_whose_fields_share_the_seconds_has_its_code_held(writer):
    dataset, worker = writer
    study = make_study(dataset, tasks_per_batch=1, typing_evidence_action=TypingEvidenceAction.HOLD_CODE)
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="s1")
    claim = present(writing_claims.claim_next_premise(worker, study_session=session))
    # The bot waited the page's characters at 110 ms (past the pace floor), then claimed 10 s a field.
    records.age_claim(claim.token, seconds=PAGE_CHARS * 0.110)
    raw = json.dumps({"v": 1, "open": 14_000, "away": 0, "awayMs": 0, "fields": each_claims(10)})
    services.submit_hypotheses(worker, claim.token, typing_evidence=raw, **SENTENCES)
    rows = list(WritingEvidence.objects.filter(study_session=session))
    assert len(rows) == 3 and all("times-outside-claim" in row.flags for row in rows)
    session.refresh_from_db()
    assert session.is_complete and session.completion_code == "" and session.code_held_reason
