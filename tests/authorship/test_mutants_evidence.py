"""Reading the typing record a browser posts, number by number: each short JSON key lands on its
own attribute, a missing or broken number is 0 (or None where "not sent" means something), every
number is cut to its bound, the interval statistics are read only with enough intervals to have
them, and a page that is not the script's record is no record at all."""

import json
import math
from collections.abc import Iterable
from typing import Any

import pytest

from authorship.evidence import (
    MAX_COUNT,
    MAX_CV,
    MAX_EVIDENCE_CHARS,
    MAX_MS,
    MAX_SKEW,
    FieldEvidence,
    PageEvidence,
    read_evidence,
    read_field,
)
from tests.present import present

# Every count key with a value of its own, so a key read into the wrong attribute shows.
DISTINCT_COUNTS = {
    "k": 101,
    "d": 102,
    "t": 103,
    "p": 104,
    "dr": 105,
    "u": 106,
    "s": 107,
    "nk": 108,
    "pre": 109,
    "ap": 110,
    "rp": 111,
    "n": 112,
}
COUNT_ATTRIBUTES = {
    "k": "keystrokes",
    "d": "deletions",
    "t": "typed",
    "p": "pasted",
    "dr": "dropped",
    "u": "untrusted",
    "s": "scripted",
    "nk": "unkeyed",
    "pre": "prefilled",
    "ap": "pasted_after_away",
    "rp": "refused_pastes",
    "n": "intervals",
}


def field(raw: Any) -> FieldEvidence:
    return present(read_field(raw))


def page(fields: Any = None, **extra: Any) -> str:
    return json.dumps({"v": 1, "fields": {} if fields is None else fields, **extra})


def read_page(raw: str, names: Iterable[str] = ()) -> PageEvidence:
    return present(read_evidence(raw, names))


# --- one field ------------------------------------------------------------------------------------


def test_each_count_key_is_read_into_its_own_attribute():
    found = field(DISTINCT_COUNTS)
    assert {key: getattr(found, attr) for key, attr in COUNT_ATTRIBUTES.items()} == DISTINCT_COUNTS


def test_a_field_that_sent_nothing_reads_as_all_zeros_and_no_timings():
    assert field({}) == FieldEvidence()
    found = field({})
    assert found.first_key_ms is None and found.typing_ms == 0
    assert (found.interval_mean_ms, found.interval_cv, found.interval_skew) == (None, None, None)


@pytest.mark.parametrize("raw", [None, [], "k", 5, True])
def test_a_field_that_is_not_an_object_is_not_read(raw):
    assert read_field(raw) is None


@pytest.mark.parametrize("broken", [-1, -0.5, "12", None, True, False, [3], {"n": 3}, math.inf, -math.inf])
def test_a_broken_count_reads_as_zero(broken):
    found = field(dict.fromkeys(COUNT_ATTRIBUTES, broken) | {"tt": broken})
    assert all(getattr(found, attr) == 0 for attr in COUNT_ATTRIBUTES.values())
    assert found.typing_ms == 0


def test_counts_are_cut_to_whole_numbers_and_to_their_bound():
    found = field({"k": 7.9, "d": 0.4, "t": MAX_COUNT, "p": MAX_COUNT + 1, "dr": 1e30, "tt": 1234.9})
    assert (found.keystrokes, found.deletions, found.typed, found.pasted, found.dropped) == (
        7,
        0,
        MAX_COUNT,
        MAX_COUNT,
        MAX_COUNT,
    )
    assert found.typing_ms == 1234
    assert type(found.keystrokes) is int and type(found.typing_ms) is int


def test_typing_time_is_cut_to_a_day():
    assert field({"tt": MAX_MS}).typing_ms == MAX_MS
    assert field({"tt": MAX_MS + 1}).typing_ms == MAX_MS
    assert field({"tt": 10 * MAX_MS}).typing_ms == MAX_MS
    assert field({"tt": MAX_MS - 1}).typing_ms == MAX_MS - 1


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        (0, 0),  # a key at the page's first millisecond is a first key, not "none"
        (0.6, 0),
        (1, 1),
        (1200, 1200),
        (1200.7, 1200),
        (MAX_MS, MAX_MS),
        (MAX_MS + 1, MAX_MS),
        (-1, None),
        (-0.1, None),
        (None, None),
        ("1200", None),
        (True, None),
        (math.inf, None),
    ],
)
def test_the_first_key_is_a_bounded_whole_time_or_none(sent, read):
    found = field({"fk": sent})
    assert found.first_key_ms == read
    assert read is None or type(found.first_key_ms) is int


def test_a_missing_first_key_is_none():
    assert field({"k": 3}).first_key_ms is None


def test_the_mean_interval_is_read_from_one_interval_and_kept_as_a_fraction():
    assert field({"n": 0, "m": 231.5}).interval_mean_ms is None
    assert field({"m": 231.5}).interval_mean_ms is None
    found = field({"n": 1, "m": 231})
    assert found.interval_mean_ms == 231.0 and type(found.interval_mean_ms) is float
    assert field({"n": 1, "m": 231.57}).interval_mean_ms == 231.57
    assert field({"n": 1, "m": 0}).interval_mean_ms == 0.0
    assert field({"n": 1, "m": MAX_MS + 5}).interval_mean_ms == float(MAX_MS)
    assert field({"n": 1, "m": -1}).interval_mean_ms is None
    assert field({"n": 1, "m": True}).interval_mean_ms is None


def test_the_spread_is_read_from_two_intervals_and_cut_to_its_bound():
    assert field({"n": 1, "m": 200, "cv": 0.5}).interval_cv is None
    assert field({"n": 2, "m": 200, "cv": 0.5}).interval_cv == 0.5
    assert field({"n": 3, "m": 200, "cv": 0.5}).interval_cv == 0.5
    assert field({"n": 2, "cv": 0}).interval_cv == 0.0
    assert field({"n": 2, "cv": MAX_CV}).interval_cv == MAX_CV
    assert field({"n": 2, "cv": MAX_CV + 0.5}).interval_cv == MAX_CV
    assert field({"n": 2, "cv": 1e9}).interval_cv == MAX_CV
    assert field({"n": 2, "cv": -0.1}).interval_cv is None
    assert field({"n": 2}).interval_cv is None


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        (1.5, 1.5),
        (-1.5, -1.5),
        (0, 0.0),
        (MAX_SKEW, MAX_SKEW),
        (MAX_SKEW + 1, MAX_SKEW),
        (1e12, MAX_SKEW),
        (-MAX_SKEW, -MAX_SKEW),
        (-MAX_SKEW - 1, -MAX_SKEW),
        (-1e12, -MAX_SKEW),
        (None, None),
        ("1.5", None),
        (True, None),
        (False, None),
        (math.inf, None),
        (-math.inf, None),
        (math.nan, None),
    ],
)
def test_the_skewness_is_signed_and_cut_to_its_bound_either_way(sent, read):
    found = field({"n": 3, "sk": sent})
    assert found.interval_skew == read
    assert read is None or type(found.interval_skew) is float


def test_the_skewness_is_read_from_three_intervals():
    assert field({"n": 2, "sk": 1.5}).interval_skew is None
    assert field({"n": 3, "sk": 1.5}).interval_skew == 1.5
    assert field({"n": 40, "sk": -0.2}).interval_skew == -0.2


def test_a_not_a_number_is_no_number():
    # json.dumps writes NaN and Infinity, which json.loads reads back as floats.
    found = field(json.loads(json.dumps({"k": math.nan, "fk": math.nan, "n": 5, "m": math.nan, "cv": math.inf})))
    assert found.keystrokes == 0 and found.first_key_ms is None
    assert found.interval_mean_ms is None and found.interval_cv is None


# --- the page -------------------------------------------------------------------------------------


def test_the_page_reads_its_open_time_and_time_away():
    found = read_page(page(open=5000, away=3, awayMs=800))
    assert (found.open_ms, found.away_count, found.away_ms) == (5000, 3, 800)
    assert found.fields == {}


def test_a_page_that_sent_no_times_reads_zero_for_each():
    found = read_page(page())
    assert (found.open_ms, found.away_count, found.away_ms) == (0, 0, 0)


@pytest.mark.parametrize("broken", [-5, "5000", None, True, [1], math.inf])
def test_broken_page_times_read_as_zero(broken):
    found = read_page(page(open=broken, away=broken, awayMs=broken))
    assert (found.open_ms, found.away_count, found.away_ms) == (0, 0, 0)


def test_page_times_are_whole_and_cut_to_their_bounds():
    found = read_page(page(open=5000.9, away=2.7, awayMs=799.9))
    assert (found.open_ms, found.away_count, found.away_ms) == (5000, 2, 799)
    huge = read_page(page(open=10 * MAX_MS, away=10 * MAX_MS, awayMs=10 * MAX_MS))
    assert (huge.open_ms, huge.away_count, huge.away_ms) == (MAX_MS, MAX_COUNT, MAX_MS)


def test_only_the_named_fields_that_sent_an_object_are_read():
    raw = page({"entailment": {"t": 30}, "neutral": "typed", "other": {"t": 9}})
    found = read_page(raw, ["entailment", "neutral", "contradiction"])
    assert set(found.fields) == {"entailment"}
    assert found.fields["entailment"].typed == 30
    assert read_page(raw, []).fields == {}
    assert set(read_page(raw, ["other"]).fields) == {"other"}


def test_the_field_names_may_be_any_iterable_read_once():
    raw = page({"entailment": {"t": 30}, "neutral": {"t": 20}})
    found = read_page(raw, iter(["neutral", "entailment"]))
    assert {name: evidence.typed for name, evidence in found.fields.items()} == {"neutral": 20, "entailment": 30}


def test_a_record_at_its_size_limit_is_read_and_one_character_over_is_not():
    record = page({"h": {"t": 5}})
    padded = record[:-1] + " " * (MAX_EVIDENCE_CHARS - len(record)) + "}"
    assert len(padded) == MAX_EVIDENCE_CHARS
    assert read_page(padded, ["h"]).fields["h"].typed == 5
    assert read_evidence(padded[:-1] + " }", ["h"]) is None


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        b'{"v": 1, "fields": {}}',
        {"v": 1, "fields": {}},
        "not json",
        "[" * 3000 + "]" * 3000,  # nested past the parser's depth
        json.dumps([1, 2]),
        json.dumps("text"),
        json.dumps({"fields": {}}),
        json.dumps({"v": 2, "fields": {}}),
        json.dumps({"v": "1", "fields": {}}),
        json.dumps({"v": 0, "fields": {}}),
        json.dumps({"v": 1}),
        json.dumps({"v": 1, "fields": None}),
        json.dumps({"v": 1, "fields": [{"t": 5}]}),
        json.dumps({"v": 1, "fields": "h"}),
    ],
)
def test_anything_but_the_scripts_record_is_no_record(raw):
    assert read_evidence(raw, ["h"]) is None


def test_a_version_one_record_with_a_fields_object_is_read():
    found = read_evidence(json.dumps({"v": 1, "fields": {}}), ["h"])
    assert found == PageEvidence(fields={})
