"""The judgements of a typing record at their edges: which characters count as arrived, typed or
not typed; when a record has typing in it; the server's clock and its tolerance, for one field and
for the page's fields together; the pace and shape floors; the order of a field's flags; near-copies
of a writer's sentences; and the share of flagged hypotheses that flags a session. Pure functions of
hand-made evidence (no browser, no database)."""

import pytest

from authorship import judgements
from authorship.evidence import FieldEvidence, PageEvidence
from authorship.judgements import Flag


def record(intervals: int, mean_ms: float, typing_ms: int, **extra: int) -> FieldEvidence:
    """A field with `intervals` intervals of `mean_ms` on average, `typing_ms` of typing in all and
    one key more than intervals (unless `extra` says otherwise)."""
    fields = {"keystrokes": intervals + 1, **extra}
    return FieldEvidence(intervals=intervals, interval_mean_ms=mean_ms, typing_ms=typing_ms, **fields)


# --- most of the text ------------------------------------------------------------------------------


def test_most_of_the_text_is_more_than_half_of_a_text_that_has_characters():
    assert judgements.is_pasted(FieldEvidence(pasted=1), 1)
    assert judgements.is_pasted(FieldEvidence(pasted=6), 10)
    assert not judgements.is_pasted(FieldEvidence(pasted=5), 10)
    assert not judgements.is_pasted(FieldEvidence(pasted=1), 10)
    assert not judgements.is_pasted(FieldEvidence(pasted=1), 0)
    assert not judgements.is_pasted(FieldEvidence(), 0)


def test_pasted_and_dropped_characters_add_up_to_pasted_text():
    assert judgements.is_pasted(FieldEvidence(pasted=3, dropped=3), 10)
    assert not judgements.is_pasted(FieldEvidence(pasted=3, dropped=2), 10)


def test_text_pasted_after_coming_back_is_judged_on_more_than_half():
    assert judgements.is_pasted_after_away(FieldEvidence(pasted_after_away=6), 10)
    assert not judgements.is_pasted_after_away(FieldEvidence(pasted_after_away=5), 10)
    assert not judgements.is_pasted_after_away(FieldEvidence(pasted_after_away=3), 0)


# --- characters the record explains ---------------------------------------------------------------


def test_every_way_a_character_can_arrive_explains_it():
    evidence = FieldEvidence(typed=1, pasted=2, dropped=4, untrusted=8, scripted=16, unkeyed=32, prefilled=64)
    assert judgements.unexplained_chars(evidence, 200) == 200 - 127
    assert judgements.unexplained_chars(evidence, 127) == 0
    assert judgements.unexplained_chars(evidence, 100) == 0
    assert judgements.unexplained_chars(FieldEvidence(), 5) == 5
    assert judgements.unexplained_chars(FieldEvidence(), 0) == 0


def test_counts_the_record_keeps_apart_do_not_explain_characters():
    evidence = FieldEvidence(keystrokes=50, deletions=50, pasted_after_away=50, refused_pastes=50)
    assert judgements.unexplained_chars(evidence, 30) == 30


# --- a record with typing in it ------------------------------------------------------------------


def test_one_interval_with_its_time_is_a_typing_record():
    assert judgements.has_typing_record(record(1, 200.0, 200))


def test_a_millisecond_of_typing_is_a_typing_record():
    assert judgements.has_typing_record(record(1, 1.0, 1))


@pytest.mark.parametrize(
    "evidence",
    [
        record(0, 200.0, 200),  # no interval
        record(1, 0.05, 0),  # no typing time, the intervals' figures still adding up
        record(1, 200.0, -200),
        FieldEvidence(keystrokes=2, intervals=1, typing_ms=200),  # no mean
        record(1, 0.0, 1),  # a mean of nothing
    ],
)
def test_a_record_missing_intervals_a_typing_time_or_a_mean_has_no_typing(evidence):
    assert not judgements.has_typing_record(evidence)


def test_a_record_may_have_one_interval_per_pair_of_keys_and_no_more():
    assert judgements.has_typing_record(record(10, 200.0, 2000, keystrokes=11))
    assert judgements.has_typing_record(record(10, 200.0, 2000, keystrokes=12))
    assert not judgements.has_typing_record(record(10, 200.0, 2000, keystrokes=10))
    assert not judgements.has_typing_record(record(10, 200.0, 2000, keystrokes=0))


def test_every_interval_is_under_the_pause_the_script_leaves_out():
    assert judgements.has_typing_record(record(3, 1999.0, 5997))
    assert not judgements.has_typing_record(record(3, 2000.0, 6000))
    assert not judgements.has_typing_record(record(3, 2500.0, 7500))


@pytest.mark.parametrize(
    ("typing_ms", "adds_up"),
    [
        (2000, True),
        (2003, True),  # 10 intervals: 0.1 ms of rounding each and 2 ms over a reload
        (2004, False),
        (1997, True),
        (1996, False),
        (4000, False),
    ],
)
def test_the_typing_time_is_the_intervals_sum_within_their_rounding(typing_ms, adds_up):
    assert judgements.has_typing_record(record(10, 200.0, typing_ms)) is adds_up


def test_characters_typed_with_no_typing_record_are_unkeyed():
    assert judgements.unkeyed_typed_chars(FieldEvidence(typed=5)) == 5
    assert judgements.unkeyed_typed_chars(FieldEvidence(typed=2)) == 2
    assert judgements.unkeyed_typed_chars(FieldEvidence(typed=1)) == 0
    assert judgements.unkeyed_typed_chars(FieldEvidence(typed=0)) == 0


def test_characters_typed_beyond_one_a_keystroke_are_unkeyed():
    assert judgements.unkeyed_typed_chars(record(10, 200.0, 2000, typed=14)) == 3
    assert judgements.unkeyed_typed_chars(record(10, 200.0, 2000, typed=11)) == 0
    assert judgements.unkeyed_typed_chars(record(10, 200.0, 2000, typed=5)) == 0


def test_not_typed_characters_add_up_every_way_text_arrives_without_a_keystroke():
    evidence = record(10, 200.0, 2000, typed=12, untrusted=1, scripted=2, unkeyed=4, prefilled=8)
    # 1 + 2 + 4, one typed character beyond the keystrokes, 8 prefilled and 16 nothing explains.
    assert judgements.not_typed_chars(evidence, 43) == 1 + 2 + 4 + 1 + 8 + 16
    assert judgements.not_typed_chars(evidence, 43, restorable_chars=5) == 1 + 2 + 4 + 1 + 3 + 16
    assert judgements.not_typed_chars(evidence, 43, restorable_chars=20) == 1 + 2 + 4 + 1 + 0 + 16
    assert judgements.not_typed_chars(evidence, 27) == 1 + 2 + 4 + 1 + 8


def test_a_typed_record_with_nothing_else_has_no_not_typed_characters():
    assert judgements.not_typed_chars(record(10, 200.0, 2000, typed=11), 11) == 0
    assert judgements.not_typed_chars(record(10, 200.0, 2000, typed=11), 11, restorable_chars=4) == 0


def test_prefilled_text_is_not_typed_unless_the_server_put_it_back():
    evidence = FieldEvidence(prefilled=2)
    assert judgements.is_not_typed(evidence, 2)
    assert not judgements.is_not_typed(evidence, 2, restorable_chars=2)
    assert not judgements.is_not_typed(evidence, 2, 1)
    assert judgements.field_flags(evidence, "ab") == [Flag.NOT_TYPED]
    assert judgements.field_flags(evidence, "ab", restorable_chars=2) == []


def test_not_typed_is_judged_on_more_than_half():
    assert judgements.is_not_typed(record(3, 200.0, 600, typed=4, untrusted=6), 10)
    assert not judgements.is_not_typed(record(4, 200.0, 800, typed=5, untrusted=5), 10)


# --- the server's clock ---------------------------------------------------------------------------


def test_the_clock_allows_two_percent_and_two_seconds_over_the_claims_lifetime():
    assert judgements.clock_allowance_ms(0) == 2000
    assert judgements.clock_allowance_ms(10_000) == 12_200
    assert judgements.clock_allowance_ms(100_000) == 104_000


# A task open 10 s by the server's clock allows a record 12.2 s.
ALLOWED = 12_200


@pytest.mark.parametrize(
    ("page_open_ms", "first_key_ms", "typing_ms", "outside"),
    [
        (ALLOWED, None, 0, False),
        (ALLOWED + 1, None, 0, True),
        (1000, ALLOWED, 0, False),
        (1000, ALLOWED + 1, 0, True),
        (1000, None, ALLOWED, False),  # no first key: the typing alone must fit
        (1000, None, ALLOWED + 1, True),
        (1000, 2200, 10_000, False),
        (1000, 2201, 10_000, True),
        (1000, 0, ALLOWED, False),
        (0, 0, 0, False),
    ],
)
def test_a_fields_times_must_fit_inside_the_claim_with_its_tolerance(page_open_ms, first_key_ms, typing_ms, outside):
    evidence = FieldEvidence(first_key_ms=first_key_ms, typing_ms=typing_ms)
    assert judgements.times_outside_claim(evidence, page_open_ms, 10_000) is outside


def test_the_page_typing_starts_at_its_earliest_first_key_and_adds_every_fields_typing():
    early = FieldEvidence(first_key_ms=1000, typing_ms=5000)
    late = FieldEvidence(first_key_ms=3000, typing_ms=6200)
    assert not judgements.page_typing_outside_claim([early, late], 10_000)  # 1000 + 11,200
    assert not judgements.page_typing_outside_claim([late, early], 10_000)
    longer = FieldEvidence(first_key_ms=3000, typing_ms=6201)
    assert judgements.page_typing_outside_claim([early, longer], 10_000)
    assert judgements.page_typing_outside_claim([longer, early], 10_000)


def test_fields_with_no_typing_neither_start_nor_add_to_the_pages_typing():
    typed = FieldEvidence(first_key_ms=1001, typing_ms=11_200)
    assert judgements.page_typing_outside_claim([typed], 10_000)
    untyped = FieldEvidence(first_key_ms=0, typing_ms=0)
    assert judgements.page_typing_outside_claim([untyped, typed], 10_000)
    assert not judgements.page_typing_outside_claim([untyped], 0)
    assert not judgements.page_typing_outside_claim([], 0)


def test_a_millisecond_of_typing_counts_on_the_pages_clock():
    fits = FieldEvidence(first_key_ms=1000, typing_ms=11_200)
    one_ms = FieldEvidence(first_key_ms=5000, typing_ms=1)
    assert not judgements.page_typing_outside_claim([fits], 10_000)
    assert judgements.page_typing_outside_claim([fits, one_ms], 10_000)


def test_a_field_without_a_first_key_starts_the_page_at_its_opening():
    assert not judgements.page_typing_outside_claim([FieldEvidence(typing_ms=ALLOWED)], 10_000)
    assert judgements.page_typing_outside_claim([FieldEvidence(typing_ms=ALLOWED + 1)], 10_000)


def test_a_page_is_too_fast_below_the_fastest_typists_pace():
    # 100 characters take the 99.9th-percentile typist 10,528 ms: a task open 8,362 ms allows 10,529.
    assert judgements.too_fast(100, 8361)
    assert not judgements.too_fast(100, 8362)
    assert not judgements.too_fast(0, 0)
    assert not judgements.too_fast(18, 0)  # 1,895 ms: the two seconds' tolerance alone allows them
    assert judgements.too_fast(19, 0)


# --- cadence and shape ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("intervals", "mean_ms", "cv", "machine"),
    [
        (10, 94.7, None, True),  # faster than the 99.99th-percentile typist's 94.72 ms
        (10, 94.8, None, False),
        (10, judgements.FASTEST_HUMAN_MEAN_MS, None, False),  # at the floor is a person's pace
        (9, 50.0, 0.01, False),  # too few intervals to judge
        (10, 200.0, 0.19, True),
        (10, 200.0, 0.2, False),
        (10, 200.0, None, False),
        (10, 200.0, 0.5, False),
    ],
)
def test_cadence_is_a_machines_from_ten_intervals_faster_or_more_even_than_people(intervals, mean_ms, cv, machine):
    evidence = FieldEvidence(intervals=intervals, interval_mean_ms=mean_ms, interval_cv=cv)
    assert judgements.has_machine_cadence(evidence) is machine


def test_cadence_is_not_judged_without_a_mean():
    assert not judgements.has_machine_cadence(FieldEvidence(intervals=40, interval_cv=0.01))


def symmetric(intervals: int, skew: float | None = 0.0) -> FieldEvidence:
    return FieldEvidence(intervals=intervals, interval_mean_ms=200.0, interval_cv=0.5, interval_skew=skew)


def test_the_shape_is_judged_from_sixty_intervals_of_fields_with_three_or_more():
    assert judgements.has_machine_shape([symmetric(60)])
    assert not judgements.has_machine_shape([symmetric(59)])
    assert judgements.has_machine_shape([symmetric(57), symmetric(3)])
    assert not judgements.has_machine_shape([symmetric(58), symmetric(2)])
    assert not judgements.has_machine_shape([])


def test_a_page_skewed_less_than_a_tenth_is_a_machines_shape():
    assert judgements.has_machine_shape([symmetric(80, 0.09)])
    assert not judgements.has_machine_shape([symmetric(80, 0.1)])
    assert judgements.has_machine_shape([symmetric(80, -2.0)])
    assert not judgements.has_machine_shape([symmetric(80, 1.5)])


def test_the_shape_weights_each_fields_skewness_by_its_intervals():
    # (90 x 0 + 10 x 0.9) / 100 = 0.09: symmetric; the fields' plain mean (0.45) is not.
    assert judgements.has_machine_shape([symmetric(90, 0.0), symmetric(10, 0.9)])
    # (10 x 0 + 90 x 0.9) / 100 = 0.81.
    assert not judgements.has_machine_shape([symmetric(10, 0.0), symmetric(90, 0.9)])
    # (60 x 0.2 + 40 x -0.2) / 100 = 0.04.
    assert judgements.has_machine_shape([symmetric(60, 0.2), symmetric(40, -0.2)])
    # (70 x 0.2 + 30 x -0.1) / 100 = 0.11.
    assert not judgements.has_machine_shape([symmetric(70, 0.2), symmetric(30, -0.1)])


def test_a_field_too_short_to_judge_leaves_the_pages_shape_alone():
    assert judgements.has_machine_shape([symmetric(60, 0.05), symmetric(2, 50.0)])


def test_a_field_without_a_skewness_counts_as_symmetric():
    assert judgements.has_machine_shape([symmetric(60, None)])
    assert judgements.has_machine_shape([symmetric(50, 0.1), symmetric(50, None)])


# --- one field's flags ----------------------------------------------------------------------------


def test_a_fields_flags_come_in_their_order():
    evidence = FieldEvidence(
        pasted=10, untrusted=10, pasted_after_away=10, intervals=20, interval_mean_ms=50.0, interval_cv=0.5
    )
    assert judgements.field_flags(evidence, "x" * 10) == [
        Flag.PASTED,
        Flag.NOT_TYPED,
        Flag.MACHINE_CADENCE,
        Flag.PASTED_AFTER_AWAY,
    ]


def test_an_empty_field_earns_no_flag_whatever_its_record():
    assert judgements.field_flags(FieldEvidence(pasted=10, untrusted=10), "") == []
    assert judgements.field_flags(None, "") == []


def test_a_one_character_field_is_judged():
    assert judgements.field_flags(FieldEvidence(pasted=1), "x") == [Flag.PASTED]
    assert judgements.field_flags(FieldEvidence(untrusted=1), "x") == [Flag.NOT_TYPED]
    assert judgements.field_flags(None, "x") == [Flag.NO_EVIDENCE]


# --- a page's flags ---------------------------------------------------------------------------------

TYPED_TEXT = "x" * 11


def typed(intervals: int = 10, *, skew: float = 1.5, first_key_ms: int = 1000) -> FieldEvidence:
    """Eleven characters typed at a person's pace, with `intervals` intervals of 200 ms."""
    return FieldEvidence(
        keystrokes=intervals + 1,
        typed=11,
        first_key_ms=first_key_ms,
        typing_ms=intervals * 200,
        intervals=intervals,
        interval_mean_ms=200.0,
        interval_cv=0.5,
        interval_skew=skew,
    )


def test_a_typed_page_earns_no_flag_with_or_without_a_clock():
    evidence = PageEvidence(fields={"a": typed(), "b": typed()}, open_ms=5000)
    texts = {"a": TYPED_TEXT, "b": TYPED_TEXT}
    assert judgements.page_field_flags(evidence, texts) == {"a": [], "b": []}
    assert judgements.page_field_flags(evidence, texts, claim_open_ms=60_000) == {"a": [], "b": []}


def test_a_page_without_a_record_is_no_evidence_in_every_written_field():
    texts = {"a": "x" * 19, "b": ""}  # 19 characters take 2,000.4 ms at the fastest typist's pace
    assert judgements.page_field_flags(None, texts) == {"a": [Flag.NO_EVIDENCE], "b": []}
    assert judgements.page_field_flags(None, texts, claim_open_ms=60_000) == {"a": [Flag.NO_EVIDENCE], "b": []}
    assert judgements.page_field_flags(None, texts, claim_open_ms=0) == {
        "a": [Flag.NO_EVIDENCE, Flag.TOO_FAST],
        "b": [],
    }


def test_a_field_the_record_left_out_is_no_evidence():
    evidence = PageEvidence(fields={"a": typed()}, open_ms=5000)
    texts = {"a": TYPED_TEXT, "b": TYPED_TEXT}
    assert judgements.page_field_flags(evidence, texts, claim_open_ms=60_000) == {"a": [], "b": [Flag.NO_EVIDENCE]}


def test_text_the_server_put_back_is_per_field():
    evidence = PageEvidence(fields={"a": FieldEvidence(prefilled=2), "b": FieldEvidence(prefilled=2)})
    texts = {"a": "ab", "b": "ab"}
    assert judgements.page_field_flags(evidence, texts, restorable_chars={"a": 2}) == {
        "a": [],
        "b": [Flag.NOT_TYPED],
    }
    assert judgements.page_field_flags(evidence, texts) == {"a": [Flag.NOT_TYPED], "b": [Flag.NOT_TYPED]}


def test_a_symmetric_page_flags_the_cadence_of_each_written_field_of_ten_intervals_or_more():
    fast = FieldEvidence(
        keystrokes=41, typed=11, typing_ms=2000, intervals=40, interval_mean_ms=50.0, interval_cv=0.5, interval_skew=0
    )
    evidence = PageEvidence(
        fields={"long": typed(10, skew=0.0), "fast": fast, "short": typed(9, skew=0.0), "empty": typed(10, skew=0.0)},
        open_ms=5000,
    )
    texts = {"long": TYPED_TEXT, "fast": TYPED_TEXT, "short": TYPED_TEXT, "empty": "", "missing": TYPED_TEXT}
    assert judgements.page_field_flags(evidence, texts) == {
        "long": [Flag.MACHINE_CADENCE],
        "fast": [Flag.MACHINE_CADENCE],  # once, though both its pace and the page's shape say so
        "short": [],
        "empty": [],
        "missing": [Flag.NO_EVIDENCE],
    }


def test_the_shape_is_judged_only_over_the_fields_of_the_page_being_judged():
    # The record's other field would make the page symmetric; it is not one of this page's texts.
    evidence = PageEvidence(fields={"a": typed(10, skew=0.0), "other": typed(60, skew=0.0)})
    assert judgements.page_field_flags(evidence, {"a": TYPED_TEXT}) == {"a": []}


def test_a_long_tailed_page_flags_no_cadence():
    evidence = PageEvidence(fields={"a": typed(40), "b": typed(40)})
    assert judgements.page_field_flags(evidence, {"a": TYPED_TEXT, "b": TYPED_TEXT}) == {"a": [], "b": []}


def test_a_page_open_longer_than_the_claim_flags_each_recorded_field_outside_it():
    evidence = PageEvidence(fields={"a": typed()}, open_ms=ALLOWED + 1)
    texts = {"a": TYPED_TEXT, "b": TYPED_TEXT, "c": ""}
    assert judgements.page_field_flags(evidence, texts, claim_open_ms=10_000) == {
        "a": [Flag.TIMES_OUTSIDE_CLAIM],
        "b": [Flag.NO_EVIDENCE],
        "c": [],
    }
    fits = PageEvidence(fields={"a": typed()}, open_ms=ALLOWED)
    assert judgements.page_field_flags(fits, texts, claim_open_ms=10_000) == {"a": [], "b": [Flag.NO_EVIDENCE], "c": []}


def test_a_field_whose_own_times_fit_is_outside_the_claim_when_the_pages_together_do_not():
    evidence = PageEvidence(
        fields={"a": typed(first_key_ms=1000), "b": typed(first_key_ms=1000), "c": typed(first_key_ms=9000)},
        open_ms=1000,
    )
    texts = {"a": TYPED_TEXT, "b": TYPED_TEXT, "c": TYPED_TEXT, "d": TYPED_TEXT, "e": ""}
    # 1000 + 3 x 2000 ms of typing in a task open 5 s (7.1 s allowed): each field fits on its own.
    assert judgements.page_field_flags(evidence, texts, claim_open_ms=5000) == {
        "a": [],
        "b": [],
        "c": [Flag.TIMES_OUTSIDE_CLAIM],
        "d": [Flag.NO_EVIDENCE],
        "e": [],
    }
    assert judgements.page_field_flags(evidence, texts, claim_open_ms=4000) == {
        "a": [Flag.TIMES_OUTSIDE_CLAIM],
        "b": [Flag.TIMES_OUTSIDE_CLAIM],
        "c": [Flag.TIMES_OUTSIDE_CLAIM],
        "d": [Flag.NO_EVIDENCE],
        "e": [],
    }
    assert judgements.page_field_flags(evidence, texts) == {"a": [], "b": [], "c": [], "d": [Flag.NO_EVIDENCE], "e": []}


def test_a_page_written_faster_than_people_type_flags_every_written_field_too_fast():
    # Eleven keys with one 200 ms interval timed: a record that fits in the task's time.
    quick = FieldEvidence(keystrokes=11, typed=11, first_key_ms=100, typing_ms=200, intervals=1, interval_mean_ms=200.0)
    evidence = PageEvidence(fields={"a": quick, "b": quick}, open_ms=1000)
    texts = {"a": TYPED_TEXT, "b": TYPED_TEXT, "c": ""}
    # 22 characters take 2,317 ms at the fastest typist's pace: a task open 300 ms allows 2,306.
    assert judgements.page_field_flags(evidence, texts, claim_open_ms=300) == {
        "a": [Flag.TOO_FAST],
        "b": [Flag.TOO_FAST],
        "c": [],
    }
    assert judgements.page_field_flags(evidence, texts, claim_open_ms=320) == {"a": [], "b": [], "c": []}
    assert judgements.page_field_flags(evidence, texts) == {"a": [], "b": [], "c": []}


def test_the_clocks_flags_come_after_the_fields_own_in_their_order():
    evidence = PageEvidence(fields={"a": typed()}, open_ms=ALLOWED + 1)
    # 200 characters, 11 of them typed, take 21 s: more than a task open 10 s allows.
    assert judgements.page_field_flags(evidence, {"a": "x" * 200}, claim_open_ms=10_000) == {
        "a": [Flag.NOT_TYPED, Flag.TIMES_OUTSIDE_CLAIM, Flag.TOO_FAST]
    }


# --- repeated sentences ---------------------------------------------------------------------------


def test_a_sentence_is_normalised_to_its_casefolded_compatible_words():
    assert judgements.normalised_sentence("Ｔｈｅ  DOG—sleeps! Straße ﬁne.") == "the dog sleeps strasse fine"
    assert judgements.normalised_sentence("  ...  ") == ""


def test_sentences_with_no_words_are_never_near_copies():
    assert not judgements.is_near_copy("!!!", "!!!")
    assert not judgements.is_near_copy("", "")
    assert not judgements.is_near_copy("", "A dog.")
    assert not judgements.is_near_copy("A dog.", "?")


def test_a_near_copy_is_nine_tenths_alike_or_more():
    assert judgements.is_near_copy("aaaaaaaaaa", "aaaaaaaaab")  # 18 of 20 characters match
    assert not judgements.is_near_copy("aaaaaaaaaa", "aaaaaaaabb")
    assert judgements.is_near_copy("The DOG sleeps.", "the dog sleeps")
    assert not judgements.is_near_copy("The dog sleeps.", "A cat runs home.")


def test_long_near_copies_are_compared_character_by_character():
    """Past 200 characters difflib's heuristic treats common characters as junk; the comparison keeps them."""
    body = " ".join(["ha"] * 100)
    assert judgements.is_near_copy("yes " + body, "no " + body)


def test_repeats_are_of_another_premises_sentences_earlier_or_new():
    earlier = [(1, "A dog sleeps.")]
    new = [(1, "A dog sleeps!"), (2, "A cat runs."), (3, "a cat runs"), (2, "A dog sleeps"), (4, "Birds sing.")]
    assert judgements.repeated_sentences(earlier, new) == [False, False, True, True, False]
    assert judgements.repeated_sentences([], []) == []
    assert judgements.repeated_sentences(earlier, [(1, "A dog sleeps.")]) == [False]


def test_the_earlier_sentences_are_not_changed():
    earlier = [(1, "A dog sleeps.")]
    judgements.repeated_sentences(earlier, [(2, "A cat runs.")])
    assert earlier == [(1, "A dog sleeps.")]


# --- a session --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flagged", "hypotheses", "session_flagged"),
    [
        (0, 0, False),
        (0, 9, False),
        (1, 0, True),
        (1, 3, True),
        (1, 4, False),
        (2, 6, True),  # exactly a third
        (1, 9, False),
        (3, 9, True),
        (9, 9, True),
    ],
)
def test_a_session_is_flagged_from_a_third_of_its_hypotheses_and_one_at_least(flagged, hypotheses, session_flagged):
    assert judgements.session_is_flagged(flagged, hypotheses) is session_flagged
