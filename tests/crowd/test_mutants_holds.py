"""crowd/holds.py at the edges mutmut found unguarded: a study's own hold rules reach the page's
warning, "More time" and take-backs; the money filters tell waiting, released and refused holds
apart from their default prefix; only another participant still in the study counts as waiting;
and the hold records: a hold replaces only its session's waiting reasons of its kind, a lift takes
only those, and reasons are cut to their 300 characters."""

from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from crowd.holds import (
    SHARED_BROWSER,
    UNVOUCHED,
    bonus_may_go,
    has_decided_hold,
    hold,
    hold_refused,
    hold_view,
    hold_waits,
    latest_extension,
    lift,
    money_may_go,
    others_waiting,
    record_no_task,
    server_hold_rules,
    take_backs_allowed,
    warning_seconds,
)
from crowd.models import ClaimStatus, CodeHold, CodeHoldDecision, SessionEnding, Study, StudySession
from tests.plans import analysed_plan
from tests.quality.test_catch_trials import make_study, session_for
from tests.validation.validation_factories import make_dataset
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db


def own_rules_study() -> Study:
    study = make_study(make_dataset())
    # Not the server's defaults (3 minutes, 1 extension, 1 take-back): each rule is visibly the study's.
    study.hold_warning_minutes = 2
    study.hold_extensions = 3
    study.hold_take_backs = 4
    study.save()
    return study


def test_a_studys_own_hold_rules_set_the_warning_the_last_extension_and_the_take_backs():
    study = own_rules_study()
    start = datetime(2026, 1, 1, tzinfo=timezone.get_current_timezone())
    assert warning_seconds(study) == 120
    assert latest_extension(start, 10, study) == start + timedelta(minutes=30)
    assert take_backs_allowed(study) == 4


def test_a_pages_hold_view_follows_its_studys_rules_and_counts_down_to_its_end(make_worker):
    study = own_rules_study()
    session = session_for(study, make_worker())
    now = timezone.now()
    claim = ValidationClaim(
        study_session_id=session.pk,
        status=ClaimStatus.OPEN,
        created_at=now - timedelta(minutes=29),
        expires_at=now + timedelta(seconds=90, milliseconds=1),
        take_backs=3,
    )
    view = hold_view([claim], now, minutes=10)
    assert view.expires_at == claim.expires_at
    assert view.seconds_left == 91  # rounded up
    assert view.warn_seconds == 120
    # Claimed 29 minutes ago, three extensions of 10 minutes: "More time" still until minute 30.
    assert view.extendable and not view.expired
    assert view.may_take_back  # 3 of the study's 4 take-backs used
    assert hold_view([claim], claim.created_at + timedelta(minutes=30), minutes=10).extendable
    claim.take_backs = 4
    assert not hold_view([claim], now, minutes=10).may_take_back
    over = hold_view([claim], claim.expires_at, minutes=10)
    assert over.expired and over.seconds_left == 0 and not over.extendable
    # Given back before its time: over at once, no countdown left and no "More time" to offer.
    claim.status = ClaimStatus.RELEASED
    given_back = hold_view([claim], now, minutes=10)
    assert given_back.expired and given_back.seconds_left == 0 and not given_back.extendable


def test_a_visit_outside_a_study_records_no_wait():
    record_no_task(None)  # nobody is known to wait outside a study: nothing to write, no error


def test_the_money_filters_tell_waiting_released_and_refused_holds_apart(make_worker):
    study = make_study(make_dataset())
    sessions = {}
    for name, decisions in (
        ("free", ()),
        ("waiting", ("",)),
        ("released", (CodeHoldDecision.RELEASED,)),
        ("refused", (CodeHoldDecision.REFUSED,)),
        # Released once, then held again by a later finding: its money waits for the new hold.
        ("released then held", (CodeHoldDecision.RELEASED, "")),
        ("refused then held", (CodeHoldDecision.REFUSED, "")),
    ):
        session = session_for(study, make_worker(), name)
        for number, decision in enumerate(decisions):
            record = hold(session, SHARED_BROWSER, f"Same browser ({number})")
            assert record is not None
            CodeHold.objects.filter(pk=record.pk).update(decision=decision)
        sessions[name] = session.pk

    def names(rule):
        pks = set(StudySession.objects.filter(rule).values_list("pk", flat=True))
        return {name for name, pk in sessions.items() if pk in pks}

    assert names(hold_waits()) == {"waiting", "released then held", "refused then held"}
    assert names(hold_refused()) == {"refused"}
    assert names(money_may_go()) == names(bonus_may_go()) == {"free", "released"}


def subplan_readers(plan, table, under_subplan=False):
    """(node, whether it is read in a subplan) for each node of the plan that reads `table`."""
    inside = under_subplan or plan.get("Parent Relationship") == "SubPlan"
    if plan.get("Relation Name") == table:
        yield plan, inside
    for child in plan.get("Plans", []):
        yield from subplan_readers(child, table, inside)


def test_a_sessions_study_is_asked_of_the_open_link_set_not_joined(make_worker):
    """Whether a session's study pays bonuses is asked of the set of open-link studies: the studies
    are read once as a subplan, never joined row by row (where stale statistics can plan a walk of
    every study's sessions)."""
    open_study, verified = make_study(make_dataset(), slug="open"), make_study(make_dataset(), slug="verified")
    Study.objects.filter(pk=open_study.pk).update(open_link_unverified=True)
    sessions = {study.pk: session_for(study, make_worker(), f"s{study.pk}").pk for study in (open_study, verified)}
    allowed = StudySession.objects.filter(bonus_may_go())

    sql, params = allowed.values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        plan = analysed_plan(cursor, sql, params)

    assert set(allowed.values_list("pk", flat=True)) == {sessions[verified.pk]}
    readers = list(subplan_readers(plan, Study._meta.db_table))
    assert readers and all(in_subplan for _, in_subplan in readers), readers


def test_only_another_participant_still_in_the_study_counts_as_waiting(make_worker):
    study = make_study(make_dataset())
    now = timezone.now()
    holder = session_for(study, make_worker(), "holder")
    holder.no_task_at = now  # the holder's own "no task" is not someone waiting
    holder.save()
    claim = ValidationClaim(study_session_id=holder.pk, expires_at=now)
    live = ValidationClaim.objects.filter(status=ClaimStatus.OPEN)

    def waiting() -> bool:
        return others_waiting([claim], holder.worker_id, now, minutes=10, live=live)

    assert not waiting()
    done = session_for(study, make_worker(), "done")
    done.no_task_at, done.completed_at = now, now
    done.save()
    assert not waiting()
    gone = session_for(study, make_worker(), "gone")
    gone.no_task_at, gone.closed_at, gone.ended_as = now, now, SessionEnding.RETURNED
    gone.save()
    assert not waiting()
    other = session_for(study, make_worker(), "other")
    other.no_task_at = now - timedelta(minutes=1)
    other.save()
    assert waiting()


def test_the_servers_hold_settings_are_read_and_default_when_unset():
    own = {"HOLD_WARNING_MINUTES": 5, "HOLD_EXTENSIONS": 2, "HOLD_TAKE_BACKS": 0}
    with override_settings(NLI={**settings.NLI, **own}):
        assert server_hold_rules() == {"hold_warning_minutes": 5.0, "hold_extensions": 2, "hold_take_backs": 0}
    unset = {key: value for key, value in settings.NLI.items() if key not in own}
    with override_settings(NLI=unset):
        assert server_hold_rules() == {"hold_warning_minutes": 3.0, "hold_extensions": 1, "hold_take_backs": 1}


def _reasons(session: StudySession, kind: str) -> list[tuple[str, str]]:
    return list(CodeHold.objects.filter(session=session, kind=kind).values_list("text", "decision"))


def test_a_hold_keeps_the_kinds_other_reasons_and_replacing_takes_only_this_sessions_waiting_ones(make_worker):
    study = make_study(make_dataset())
    session, other = session_for(study, make_worker(), "held"), session_for(study, make_worker(), "other")
    hold(session, SHARED_BROWSER, "Same browser as participant a.")
    hold(session, SHARED_BROWSER, "Same browser as participant b.")
    assert len(_reasons(session, SHARED_BROWSER)) == 2, "a second reason of a kind does not replace the first"
    refused = hold(session, UNVOUCHED, "Not vouched for by the market: refused.")
    assert refused is not None
    CodeHold.objects.filter(pk=refused.pk).update(decision=CodeHoldDecision.REFUSED)
    hold(session, UNVOUCHED, "Not vouched for by the market yet.")
    hold(other, UNVOUCHED, "Not vouched for by the market yet.")

    answer = hold(session, UNVOUCHED, "The market refused this id.", replacing=True)

    assert answer is not None
    assert _reasons(session, UNVOUCHED) == [
        ("Not vouched for by the market: refused.", CodeHoldDecision.REFUSED),  # decided: stays
        ("The market refused this id.", ""),
    ]
    assert _reasons(other, UNVOUCHED) == [("Not vouched for by the market yet.", "")], "another session's"
    assert len(_reasons(session, SHARED_BROWSER)) == 2, "another kind's"
    assert hold(session, UNVOUCHED, "The market refused this id.", replacing=True) is None, "the same answer again"
    assert CodeHold.objects.filter(pk=answer.pk).exists(), "its record stays, not written anew"


def test_a_reason_and_the_sessions_line_of_reasons_are_cut_to_300_characters(make_worker):
    session = session_for(make_study(make_dataset()), make_worker())
    record = hold(session, SHARED_BROWSER, "x" * 400)
    assert record is not None and record.text == "x" * 300
    hold(session, SHARED_BROWSER, "y" * 200)
    session.refresh_from_db()
    assert session.code_held_reason == ("x" * 300 + "; " + "y" * 200)[:300]


def test_lifting_a_kind_takes_only_this_sessions_waiting_holds_and_counts_them(make_worker):
    study = make_study(make_dataset())
    session, other = session_for(study, make_worker(), "held"), session_for(study, make_worker(), "other")
    refused = hold(session, UNVOUCHED, "Not vouched for by the market: refused.")
    assert refused is not None
    CodeHold.objects.filter(pk=refused.pk).update(decision=CodeHoldDecision.REFUSED)
    hold(session, UNVOUCHED, "Not vouched for by the market yet.")
    hold(other, UNVOUCHED, "Not vouched for by the market yet.")

    assert lift(session, UNVOUCHED) == 1
    assert _reasons(session, UNVOUCHED) == [("Not vouched for by the market: refused.", CodeHoldDecision.REFUSED)]
    assert _reasons(other, UNVOUCHED) == [("Not vouched for by the market yet.", "")]
    assert lift(session, UNVOUCHED) == 0, "nothing waits any more"


def test_a_decided_hold_is_told_of_its_own_session_only(make_worker):
    study = make_study(make_dataset())
    session, other = session_for(study, make_worker(), "held"), session_for(study, make_worker(), "other")
    record = hold(session, SHARED_BROWSER, "Same browser as participant a.")
    hold(other, SHARED_BROWSER, "Same browser as participant b.")
    assert record is not None and not has_decided_hold(session)
    CodeHold.objects.filter(pk=record.pk).update(decision=CodeHoldDecision.RELEASED)
    assert has_decided_hold(session)
    assert not has_decided_hold(other)


def test_the_same_words_under_another_kind_are_that_kinds_own_reason(make_worker):
    session = session_for(make_study(make_dataset()), make_worker())
    assert hold(session, SHARED_BROWSER, "Held for a second look.") is not None
    assert hold(session, UNVOUCHED, "Held for a second look.") is not None
    assert sorted(session.code_holds.values_list("kind", flat=True)) == [SHARED_BROWSER, UNVOUCHED]
