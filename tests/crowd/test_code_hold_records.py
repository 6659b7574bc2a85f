"""Completion-code holds as records (crowd.models.CodeHold): every registered check is asked and every
reason kept, `crowd.holds.hold` is the one writer, a lifted kind goes alone, and the money rules read
the records."""

import pytest
from django.utils import timezone

from crowd import hold_kinds
from crowd.holds import (
    UNVOUCHED,
    decide_code_holds,
    hold,
    money_may_go,
    release_vouched_hold,
)
from crowd.models import CodeHold, CodeHoldDecision, StudySession
from crowd.services import record_task_done
from tests.migration_steps import migrated_back
from tests.quality.test_catch_trials import make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_checks(monkeypatch):
    """Two kinds whose checks both answer, registered for the test only."""
    for name in ("first_check", "second_check"):

        def check(session: StudySession, name: str = name) -> str:
            return f"Held by the {name}."

        found = hold_kinds.HoldKind(name, name, check=check)
        monkeypatch.setitem(hold_kinds._kinds, name, found)


def completing_session(make_worker, name="p") -> StudySession:
    study = make_study(make_dataset())
    study.tasks_per_batch = 1
    study.save(update_fields=["tasks_per_batch"])
    return session_for(study, make_worker(), name)


def payable(session: StudySession) -> bool:
    return StudySession.objects.filter(money_may_go(), pk=session.pk).exists()


def test_every_registered_check_is_asked_and_every_reason_is_kept(two_checks, make_worker):
    session = completing_session(make_worker)
    record_task_done(session)
    session.refresh_from_db()
    kept = list(session.code_holds.values_list("kind", "text", "decision"))
    assert kept == [
        ("first_check", "Held by the first_check.", ""),
        ("second_check", "Held by the second_check.", ""),
    ]
    assert session.code_held_reason == "Held by the first_check.; Held by the second_check."
    assert session.completion_code == "" and not payable(session)

    assert decide_code_holds([session.pk], CodeHoldDecision.RELEASED) == 1
    session.refresh_from_db()
    assert set(session.code_holds.values_list("decision", flat=True)) == {CodeHoldDecision.RELEASED}
    assert session.completion_code == session.expected_completion_code() and payable(session)


def test_an_unregistered_kind_is_refused_and_a_reason_is_recorded_once(make_worker):
    session = completing_session(make_worker)
    with pytest.raises(ValueError, match="No hold kind"):
        hold(session, "no_such_kind", "A typo.")
    assert hold(session, UNVOUCHED, "Not vouched for by the market yet.") is not None
    assert hold(session, UNVOUCHED, "Not vouched for by the market yet.") is None
    assert CodeHold.objects.filter(session=session).count() == 1


def test_the_market_vouching_lifts_its_own_hold_and_leaves_the_code_to_the_others(two_checks, make_worker):
    session = completing_session(make_worker)
    StudySession.objects.filter(pk=session.pk).update(completed_at=timezone.now())
    session.refresh_from_db()
    hold(session, "first_check", "Held by the first_check.")
    hold(session, UNVOUCHED, "Not vouched for by the market yet.")

    assert not release_vouched_hold(session)  # lifted, but another reason keeps the code
    session.refresh_from_db()
    assert list(session.code_holds.values_list("kind", flat=True)) == ["first_check"]
    assert session.code_held_reason == "Held by the first_check." and session.completion_code == ""
    assert not payable(session)


def test_a_refused_hold_keeps_the_money_back_when_a_later_one_is_released(make_worker):
    session = completing_session(make_worker)
    StudySession.objects.filter(pk=session.pk).update(completed_at=timezone.now())
    session.refresh_from_db()
    hold(session, UNVOUCHED, "Not vouched for by the market.")
    assert decide_code_holds([session.pk], CodeHoldDecision.REFUSED) == 1
    assert decide_code_holds([session.pk], CodeHoldDecision.RELEASED) == 0  # nothing waits
    hold(session, UNVOUCHED, "Not vouched for by the market, again.")
    assert decide_code_holds([session.pk], CodeHoldDecision.RELEASED) == 1
    session.refresh_from_db()
    assert session.completion_code == "" and not payable(session)


def test_the_migration_makes_a_record_of_each_held_reason_with_its_kind_and_decision(make_worker, researcher):
    first = completing_session(make_worker, "m0")
    sessions = [first] + [session_for(first.study, make_worker(), f"m{number}") for number in range(1, 4)]
    before, after = [("crowd", "0032_code_holds")], [("crowd", "0034_code_hold_decisions_on_holds")]
    with migrated_back(before, after) as old:
        write_held_reasons(old.get_model("crowd", "StudySession"), sessions, researcher)

    made = {
        row.session_id: (row.kind, row.text[:10], row.decision, row.decided_by_id)
        for row in CodeHold.objects.filter(session__in=sessions)
    }
    assert made == {
        sessions[0].pk: (UNVOUCHED, "Not vouche", CodeHoldDecision.RELEASED, researcher.pk),
        sessions[1].pk: ("deferred", "Deferred t", "", None),
        sessions[2].pk: (hold_kinds.OTHER, "Why not", CodeHoldDecision.REFUSED, researcher.pk),
    }
    assert [payable(session) for session in sessions] == [True, False, False, True]


def write_held_reasons(OldSession, sessions, researcher):
    """The four sessions completed with a held reason and decision each, as they were kept before
    the hold records."""
    now = timezone.now()
    for session, reason, decision in zip(
        sessions,
        (
            "Not vouched for by the market yet: waiting",
            "Deferred to a second batch (a first session ...)",
            "Why not",
            "",
        ),
        (CodeHoldDecision.RELEASED, "", CodeHoldDecision.REFUSED, ""),
        strict=True,
    ):
        OldSession.objects.filter(pk=session.pk).update(
            completed_at=now,
            code_held_reason=reason,
            code_hold_decision=decision,
            code_hold_decided_at=now if decision else None,
            code_hold_decided_by_id=researcher.pk if decision else None,
        )
