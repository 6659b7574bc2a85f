"""The authorship writes (authorship.services) at their edges: a claim's clock is the milliseconds
between serving and arrival, never negative; a page without a record, one that arrived too soon and
one with pasted text are each refused with their own message, only in a study that refuses pasted
text and only in the fields that earned it; each figure of a field's record is stored in its
column (pasted and dropped together, the three kinds of untrusted input together, the page's time
away beside every field); repeats are looked for in this study session, or outside a study among
the writer's thirty latest hypotheses; an adversarial try's restored text is not held against it
and a try that became a pair hands its record to the pair; and a session's code is held with the
counts that held it, only where its study holds codes and its share of flagged hypotheses is
reached."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db.models import Sum

from authorship import selectors, services
from authorship.judgements import Flag
from authorship.models import TypingTally, WritingEvidence, WrittenSentence
from corpus.models import Label, Pair, Worker
from crowd import hold_kinds
from crowd.models import Study, StudySession, TypingEvidenceAction
from tests import factories
from tests.authorship import records
from tests.collection.writing_helpers import make_study, writing_setup

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TEXT = "The boat carried fishermen at dawn."


def session_of(action: str, worker: Worker, slug: str = "study-one") -> StudySession:
    dataset, _genre = writing_setup()
    study: Study = make_study(dataset, slug=slug, typing_evidence_action=action)
    return StudySession.objects.create(study=study, worker=worker, external_session_id=slug)


def pairs_of(worker: Worker, texts: list[str]) -> list[Pair]:
    dataset = factories.dataset("services-edges")
    return [
        factories.pair(dataset, factories.premise(dataset), [Label.NEUTRAL], hypothesis=text, author=worker)
        for text in texts
    ]


def test_the_claims_clock_counts_milliseconds_from_serving_to_arrival() -> None:
    clock = services.ClaimClock(served_at=NOW, submitted_at=NOW + timedelta(seconds=1, microseconds=2500))
    assert clock.open_ms == 1002
    assert services.ClaimClock(served_at=NOW, submitted_at=NOW).open_ms == 0
    assert services.ClaimClock(served_at=NOW, submitted_at=NOW - timedelta(seconds=5)).open_ms == 0


def test_outside_a_study_the_typing_is_recorded() -> None:
    assert services.study_action(None) == TypingEvidenceAction.RECORD


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], None),
        ([Flag.MACHINE_CADENCE, Flag.REPEATED, Flag.COPY], None),
        ([Flag.NO_EVIDENCE], services.NO_RECORD_MESSAGE),
        ([Flag.NO_EVIDENCE, Flag.PASTED, Flag.TOO_FAST], services.NO_RECORD_MESSAGE),
        ([Flag.TOO_FAST], services.CLOCK_MESSAGE),
        ([Flag.TIMES_OUTSIDE_CLAIM], services.CLOCK_MESSAGE),
        ([Flag.TIMES_OUTSIDE_CLAIM, Flag.TOO_FAST, Flag.MACHINE_CADENCE], services.CLOCK_MESSAGE),
        ([Flag.TOO_FAST, Flag.PASTED], services.REFUSED_MESSAGE),
        ([Flag.NOT_TYPED], services.REFUSED_MESSAGE),
        ([Flag.PASTED_AFTER_AWAY], services.REFUSED_MESSAGE),
    ],
)
def test_each_refused_flag_gets_its_own_message(flags: list[Flag], message: str | None) -> None:
    assert services._refusal(flags) == message


def test_a_refusing_study_refuses_only_the_fields_that_earned_it(make_worker: Any) -> None:
    session = session_of(TypingEvidenceAction.REFUSE_PASTE, make_worker())
    raw = records.page({"typed": records.typed(TEXT), "pasted": {"p": len(TEXT)}})
    texts = {"typed": TEXT, "pasted": TEXT, "missing": TEXT, "empty": ""}
    assert services.refused_fields(session, raw, texts) == {
        "pasted": services.REFUSED_MESSAGE,
        "missing": services.NO_RECORD_MESSAGE,
    }
    assert services.refused_fields(session, None, {"typed": TEXT}) == {"typed": services.NO_RECORD_MESSAGE}


@pytest.mark.parametrize("action", [TypingEvidenceAction.RECORD, TypingEvidenceAction.HOLD_CODE])
def test_other_studies_refuse_nothing(make_worker: Any, action: str) -> None:
    session = session_of(action, make_worker())
    assert services.refused_fields(session, None, {"pasted": TEXT}) == {}
    assert services.refused_fields(None, None, {"pasted": TEXT}) == {}


def test_a_page_that_arrived_sooner_than_it_can_be_typed_is_refused_by_the_clock(make_worker: Any) -> None:
    session = session_of(TypingEvidenceAction.REFUSE_PASTE, make_worker())
    raw = records.page({"typed": records.typed(TEXT, first_key_ms=100)}, open_ms=2_000)
    soon = services.ClaimClock(served_at=NOW, submitted_at=NOW + timedelta(seconds=2))
    assert services.refused_fields(session, raw, {"typed": TEXT}, clock=soon) == {"typed": services.CLOCK_MESSAGE}
    # Without a claim there is no clock to be early by.
    assert services.refused_fields(session, raw, {"typed": TEXT}) == {}


def test_text_the_server_put_back_is_not_refused(make_worker: Any) -> None:
    session = session_of(TypingEvidenceAction.REFUSE_PASTE, make_worker())
    raw = records.page({"try": {**records.typed(TEXT[:5]), "pre": len(TEXT) - 5}})
    assert services.refused_fields(session, raw, {"try": TEXT}) == {"try": services.REFUSED_MESSAGE}
    assert services.refused_fields(session, raw, {"try": TEXT}, restorable_chars={"try": len(TEXT) - 5}) == {}


def every_figure() -> dict[str, Any]:
    """A field record whose figures all differ, so each lands in its own column or sum."""
    return {
        "k": 41,
        "d": 3,
        "t": 30,
        "p": 2,
        "dr": 1,
        "u": 4,
        "s": 5,
        "nk": 6,
        "pre": 7,
        "ap": 8,
        "fk": 900,
        "n": 31,
        "m": 210.5,
        "cv": 0.45,
        "sk": 1.5,
        "tt": 6500,
    }


def test_each_figure_of_a_try_is_stored_in_its_column(make_worker: Any) -> None:
    worker = make_worker()
    session = session_of(TypingEvidenceAction.RECORD, worker)
    raw = json.dumps({"v": 1, "open": 60_000, "away": 2, "awayMs": 4500, "fields": {"hypothesis": every_figure()}})
    row = services.record_try_evidence(worker, session, raw, "hypothesis", TEXT, restorable_chars=7)
    row.refresh_from_db()
    assert (row.worker, row.study_session, row.field_name, row.text_chars, row.pair) == (
        worker,
        session,
        "hypothesis",
        len(TEXT),
        None,
    )
    assert row.has_evidence
    assert (row.keystrokes, row.deletions, row.typed_chars) == (41, 3, 30)
    assert (row.pasted_chars, row.untrusted_chars, row.prefilled_chars, row.pasted_after_away_chars) == (3, 15, 7, 8)
    assert (row.away_count, row.away_ms) == (2, 4500)
    assert (row.first_key_ms, row.typing_ms, row.intervals) == (900, 6500, 31)
    assert (row.interval_mean_ms, row.interval_cv) == (210.5, 0.45)
    assert TypingTally.objects.filter(study=session.study, worker=worker).aggregate(n=Sum("n"))["n"] == 1


def test_a_try_without_a_record_is_stored_flagged_and_its_field_name_cut(make_worker: Any) -> None:
    worker = make_worker()
    row = services.record_try_evidence(worker, None, None, "f" * 50, TEXT)
    row.refresh_from_db()
    assert row.field_name == "f" * 40
    assert not row.has_evidence and row.keystrokes == 0 and row.first_key_ms is None
    assert row.flags == [str(Flag.NO_EVIDENCE)] and row.flagged
    assert (row.away_count, row.away_ms) == (0, 0)
    assert TypingTally.objects.filter(study=None, worker=worker).aggregate(n=Sum("n"))["n"] == 1


def test_a_tries_restored_text_is_not_held_against_it(make_worker: Any) -> None:
    worker = make_worker()
    raw = records.page({"hypothesis": {**records.typed(TEXT[:5]), "pre": len(TEXT) - 5}})
    restored = services.record_try_evidence(worker, None, raw, "hypothesis", TEXT, restorable_chars=len(TEXT) - 5)
    assert restored.flags == [] and not restored.flagged
    not_restored = services.record_try_evidence(worker, None, raw, "hypothesis", TEXT)
    assert Flag.NOT_TYPED in not_restored.flags and not_restored.flagged


def test_a_try_gives_no_allowance_for_restored_text_unless_told(make_worker: Any) -> None:
    # Six of ten characters were in the field already: just past half, so one character of
    # allowance would be enough to pass it.
    text = "A dog runs"
    raw = records.page({"hypothesis": {**records.typed(text[:4]), "pre": 6}})
    row = services.record_try_evidence(make_worker(), None, raw, "hypothesis", text)
    assert row.flags == [str(Flag.NOT_TYPED)] and row.flagged


def test_a_try_judged_against_its_clock_is_flagged_too_fast(make_worker: Any) -> None:
    worker = make_worker()
    raw = records.page({"hypothesis": records.typed(TEXT, first_key_ms=100)}, open_ms=1_000)
    soon = services.ClaimClock(served_at=NOW, submitted_at=NOW + timedelta(seconds=1))
    row = services.record_try_evidence(worker, None, raw, "hypothesis", TEXT, clock=soon)
    assert str(Flag.TOO_FAST) in row.flags and row.flagged
    assert str(Flag.TOO_FAST) not in services.record_try_evidence(worker, None, raw, "hypothesis", TEXT).flags


def test_a_try_that_became_a_pair_hands_its_record_to_the_pair(make_worker: Any) -> None:
    worker = make_worker()
    row = services.record_try_evidence(worker, None, None, "hypothesis", TEXT)
    (pair,) = pairs_of(worker, [TEXT])
    services.evidence_of_pair(None, pair)
    assert not WritingEvidence.objects.filter(pair=pair).exists()
    services.evidence_of_pair(row.pk, pair)
    assert WritingEvidence.objects.get(pair=pair).pk == row.pk


def test_each_written_pair_gets_its_record_the_pages_time_away_and_its_flags(make_worker: Any) -> None:
    worker = make_worker()
    session = session_of(TypingEvidenceAction.RECORD, worker)
    typed_pair, pasted_pair = pairs_of(worker, [TEXT, "A woman is reading a newspaper on a train."])
    raw = json.dumps(
        {
            "v": 1,
            "open": 60_000,
            "away": 3,
            "awayMs": 1200,
            "fields": {"neutral": records.typed(TEXT), "entailment": {"p": len(pasted_pair.hypothesis)}},
        }
    )
    rows = services.record_writing_evidence(
        worker, session, raw, [("neutral", typed_pair), ("entailment", pasted_pair)]
    )
    by_pair = {row.pair_id: row for row in WritingEvidence.objects.filter(study_session=session)}
    assert [row.pair_id for row in rows] == [typed_pair.pk, pasted_pair.pk]
    assert by_pair[typed_pair.pk].field_name == "neutral" and by_pair[typed_pair.pk].flags == []
    assert by_pair[pasted_pair.pk].flags == [str(Flag.PASTED)] and by_pair[pasted_pair.pk].flagged
    assert {(row.away_count, row.away_ms) for row in by_pair.values()} == {(3, 1200)}
    assert TypingTally.objects.filter(study=session.study, worker=worker).aggregate(n=Sum("n"))["n"] == 2


def test_written_pairs_judged_against_their_clock_are_flagged_too_fast(make_worker: Any) -> None:
    worker = make_worker()
    (pair,) = pairs_of(worker, [TEXT])
    raw = records.page({"neutral": records.typed(TEXT, first_key_ms=100)}, open_ms=1_000)
    soon = services.ClaimClock(served_at=NOW, submitted_at=NOW + timedelta(seconds=1))
    (row,) = services.record_writing_evidence(worker, None, raw, [("neutral", pair)], clock=soon)
    assert str(Flag.TOO_FAST) in row.flags


def test_a_copy_of_another_writers_sentence_is_flagged_as_a_copy(make_worker: Any) -> None:
    first, second = make_worker(), make_worker()
    text = "The old fisherman mends a torn net beside the harbour wall at dawn."
    (earlier,) = pairs_of(first, [text])
    services.record_writing_evidence(
        first, None, records.page({"neutral": records.typed(text)}), [("neutral", earlier)]
    )
    (later,) = pairs_of(second, [text])
    (row,) = services.record_writing_evidence(
        second, None, records.page({"neutral": records.typed(text)}), [("neutral", later)]
    )
    assert row.flags == [str(Flag.COPY)] and row.flagged


def test_a_repeat_is_looked_for_in_this_study_session_only(make_worker: Any) -> None:
    worker = make_worker()
    one = session_of(TypingEvidenceAction.RECORD, worker, slug="one")
    other = StudySession.objects.create(study=one.study, worker=worker, external_session_id="other")
    text = "A dog is sleeping under the kitchen table."
    first, second, third = pairs_of(worker, [text, text, text])
    services.record_writing_evidence(worker, one, records.page({"n": records.typed(text)}), [("n", first)])
    (in_other,) = services.record_writing_evidence(
        worker, other, records.page({"n": records.typed(text)}), [("n", second)]
    )
    assert str(Flag.REPEATED) not in in_other.flags
    (in_one,) = services.record_writing_evidence(worker, one, records.page({"n": records.typed(text)}), [("n", third)])
    assert str(Flag.REPEATED) in in_one.flags


def test_outside_a_study_repeats_are_looked_for_among_the_thirty_latest_hypotheses(make_worker: Any) -> None:
    worker = make_worker()
    text = "A dog is sleeping under the kitchen table."
    oldest, *later = pairs_of(worker, [text] + [f"A person number {n} rides a horse." for n in range(30)])
    WritingEvidence.objects.bulk_create(
        [WritingEvidence(worker=worker, pair=pair, field_name="n") for pair in [oldest, *later]]
    )
    assert selectors.EARLIER_HYPOTHESES_OUTSIDE_A_STUDY == 30
    (again,) = pairs_of(worker, [text])
    (row,) = services.record_writing_evidence(worker, None, records.page({"n": records.typed(text)}), [("n", again)])
    assert str(Flag.REPEATED) not in row.flags
    # One of the thirty latest: found.
    WritingEvidence.objects.filter(pair=later[0]).delete()
    (once_more,) = pairs_of(worker, [text])
    (row,) = services.record_writing_evidence(
        worker, None, records.page({"n": records.typed(text)}), [("n", once_more)]
    )
    assert str(Flag.REPEATED) in row.flags


def flagged_rows(session: StudySession, flagged: int, typed: int) -> None:
    WritingEvidence.objects.bulk_create(
        [
            WritingEvidence(worker=session.worker, study_session=session, field_name="n", flagged=True)
            for _ in range(flagged)
        ]
        + [WritingEvidence(worker=session.worker, study_session=session, field_name="n") for _ in range(typed)]
    )


def test_a_holding_study_holds_a_code_with_the_counts_that_held_it(make_worker: Any) -> None:
    session = session_of(TypingEvidenceAction.HOLD_CODE, make_worker())
    flagged_rows(session, 2, 4)
    assert services.hold_code_of_typist(session) == (
        "Sentences not typed by the writer: 2 of 6 flagged (pasted, scripted, repeated, copied, "
        "without a typing record, or faster than the task's own time allows)."
    )


def test_a_share_under_a_third_holds_nothing(make_worker: Any) -> None:
    session = session_of(TypingEvidenceAction.HOLD_CODE, make_worker())
    flagged_rows(session, 2, 5)
    assert services.hold_code_of_typist(session) is None
    # Another session's flagged records do not count for this one.
    other = StudySession.objects.create(study=session.study, worker=session.worker, external_session_id="other")
    flagged_rows(other, 5, 0)
    assert services.hold_code_of_typist(session) is None


def test_a_study_that_only_records_holds_no_code(make_worker: Any) -> None:
    session = session_of(TypingEvidenceAction.RECORD, make_worker())
    flagged_rows(session, 3, 0)
    assert services.hold_code_of_typist(session) is None


@pytest.fixture
def registered_kinds() -> Iterator[None]:
    """The hold kinds as the apps registered them, put back after the test."""
    kept = dict(hold_kinds._kinds)
    yield
    hold_kinds._kinds.clear()
    hold_kinds._kinds.update(kept)


def test_the_typist_hold_kind_is_registered_with_its_check(registered_kinds: None) -> None:
    services.register_typist_hold_kind()
    kind = hold_kinds.kind("typist")
    assert (kind.name, kind.label, kind.check) == (
        services.TYPIST,
        "sentences not typed by the writer",
        services.hold_code_of_typist,
    )


def test_a_writers_repeat_in_this_session_is_a_repeat_not_a_copy(make_worker: Any) -> None:
    # The writer's own sentences of this session are `repeated`'s to find: the copy search leaves
    # them out, and each sentence is stored with its session so that the next page leaves it out too.
    worker = make_worker()
    session = session_of(TypingEvidenceAction.RECORD, worker)
    text = "The old fisherman mends a torn net beside the harbour wall at dawn."
    first, second = pairs_of(worker, [text, text])
    services.record_writing_evidence(worker, session, records.page({"n": records.typed(text)}), [("n", first)])
    assert WrittenSentence.objects.get(pair=first).study_session == session
    (again,) = services.record_writing_evidence(
        worker, session, records.page({"n": records.typed(text)}), [("n", second)]
    )
    assert again.flags == [str(Flag.REPEATED)]
    assert WrittenSentence.objects.get(pair=second).copy_of_id is None


def test_a_try_that_is_not_yet_a_pair_is_no_earlier_hypothesis(make_worker: Any) -> None:
    # A try's record has no pair (and so no sentence): in a session it is not compared with the
    # new sentences, and outside a study it takes none of the thirty latest places.
    worker = make_worker()
    session = session_of(TypingEvidenceAction.RECORD, worker)
    text = "A dog is sleeping under the kitchen table."
    services.record_try_evidence(worker, session, records.page({"h": records.typed(text)}), "h", text)
    (pair,) = pairs_of(worker, [text])
    (row,) = services.record_writing_evidence(worker, session, records.page({"n": records.typed(text)}), [("n", pair)])
    assert row.flags == []

    outside, own = make_worker(), "A man in a red coat waits for the late train."
    (oldest,) = pairs_of(outside, [own])
    WritingEvidence.objects.create(worker=outside, pair=oldest, field_name="n")
    WritingEvidence.objects.bulk_create(
        [WritingEvidence(worker=outside, field_name="h") for _ in range(selectors.EARLIER_HYPOTHESES_OUTSIDE_A_STUDY)]
    )
    (again,) = pairs_of(outside, [own])
    (row,) = services.record_writing_evidence(outside, None, records.page({"n": records.typed(own)}), [("n", again)])
    assert row.flags == [str(Flag.REPEATED)]


def test_registering_the_typist_kind_again_replaces_it_and_adds_no_other_check(registered_kinds: None) -> None:
    services.register_typist_hold_kind()
    asking_the_typist_check = [kind.name for kind in hold_kinds.checks() if kind.check == services.hold_code_of_typist]
    assert asking_the_typist_check == [services.TYPIST]
