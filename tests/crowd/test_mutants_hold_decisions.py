"""The decisions on held completion codes and the reasons they are held for: a researcher's decision
reaches only the complete, named sessions whose holds wait, records who decided and when, and is
announced once with the sessions and the decision; the market's hold says why in the participant's
own market's terms, and its vouching says whether it gave the code just now; an MTurk assignment
submits while held only when the market's listing is all it waits for; a browser that brought other
ids to the study first names those ids, the earliest first, each once, at most five and a count of
the rest; a hold gets more time up to the very edges of its study's rules and is taken back as often
as its study allows; a worker whose hold ran out lately waits for their turn only for their own
lapse in this study, and never because of their own "no task"; and a session's hold texts read as
one line, in the order they were found."""

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.utils import timezone

from corpus.models import Market, Worker
from crowd.holds import (
    SHARED_BROWSER,
    UNVOUCHED,
    HoldDecisionRefused,
    HoldRenewal,
    code_holds_decided,
    decide_code_holds,
    hold,
    hold_code_of_shared_browser,
    hold_code_of_unvouched,
    hold_texts,
    release_vouched_hold,
    renew_hold,
    study_of,
    submits_while_held,
    waits_its_turn,
)
from crowd.models import ClaimStatus, CodeHold, CodeHoldDecision, DeviceSighting, MarketCheck, Study, StudySession
from tests.quality.test_catch_trials import make_study
from tests.validation.validation_factories import make_dataset, make_pair
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db


def participant(name: str, *, market: str = Market.PROLIFIC, external_id: str | None = None) -> Worker:
    """A worker known by `external_id` (the name by default; "" for none: known by the user name)."""
    user = User.objects.create(username=f"user-{name}")
    return Worker.objects.create(user=user, market=market, external_id=name if external_id is None else external_id)


def visit(study: Study, worker: Worker, *, device: str = "", name: str = "s", **fields: Any) -> StudySession:
    return StudySession.objects.create(
        study=study, worker=worker, external_session_id=f"{name}-{worker.pk}", device=device, **fields
    )


def completed(study: Study, name: str) -> StudySession:
    return visit(study, participant(name), name=name, completed_at=timezone.now())


# --- the market's hold -----------------------------------------------------------------------------


def test_the_market_hold_says_why_in_the_terms_of_the_participants_market():
    study = make_study(make_dataset())
    turk = visit(study, participant("A1TURK", market=Market.MTURK))
    prolific = visit(study, participant("5f00prolific", market=Market.PROLIFIC))

    turk.market_check = MarketCheck.REFUSED
    turk.market_check_note = "The assignment is listed under another worker."
    assert (
        hold_code_of_unvouched(turk) == "Not vouched for by the market: The assignment is listed under another worker."
    )
    turk.market_check_note = ""
    assert hold_code_of_unvouched(turk) == "Not vouched for by the market: its record is not this participant’s."

    turk.market_check = prolific.market_check = MarketCheck.PENDING
    assert hold_code_of_unvouched(turk) == (
        "Not vouched for by the market yet: waiting for MTurk to list the submitted assignment "
        "(asked again until it does)."
    )
    assert hold_code_of_unvouched(prolific) == (
        "Not vouched for by the market yet: waiting for Prolific to confirm the submission "
        "(asked again until it answers)."
    )

    for answered in (MarketCheck.VOUCHED, MarketCheck.UNCHECKED):
        turk.market_check = prolific.market_check = answered
        assert hold_code_of_unvouched(turk) is None and hold_code_of_unvouched(prolific) is None


# --- an MTurk assignment submitted while held --------------------------------------------------------


def test_only_an_mturk_assignment_waiting_for_its_listing_alone_submits_while_held():
    study = make_study(make_dataset())

    def held(name: str, market: str, check: str) -> StudySession:
        session = visit(study, participant(name, market=market), market_check=check)
        hold(session, UNVOUCHED, "Not vouched for by the market yet.")
        return session

    waiting = held("A1WAIT", Market.MTURK, MarketCheck.PENDING)
    assert submits_while_held(waiting)

    assert not submits_while_held(held("5f00pending", Market.PROLIFIC, MarketCheck.PENDING))
    # Vouched meanwhile (the hold about to be lifted) or refused: the market answered, nothing to submit for.
    assert not submits_while_held(held("A1VOUCHED", Market.MTURK, MarketCheck.VOUCHED))
    assert not submits_while_held(held("A1REFUSED", Market.MTURK, MarketCheck.REFUSED))

    never_held = visit(study, participant("A1FREE", market=Market.MTURK), market_check=MarketCheck.PENDING)
    assert not submits_while_held(never_held)

    also_shared = held("A1SHARED", Market.MTURK, MarketCheck.PENDING)
    hold(also_shared, SHARED_BROWSER, "Same browser as participant A1WAIT.")
    assert not submits_while_held(also_shared)

    refused_before = held("A1REFUSEDBEFORE", Market.MTURK, MarketCheck.PENDING)
    shared = hold(refused_before, SHARED_BROWSER, "Same browser as participant A1WAIT.")
    assert shared is not None
    CodeHold.objects.filter(pk=shared.pk).update(decision=CodeHoldDecision.REFUSED)
    assert not submits_while_held(refused_before)


# --- the study a hold counts for ---------------------------------------------------------------------


def test_a_holds_study_is_that_of_its_first_claim_in_a_study():
    study = make_study(make_dataset())
    session = visit(study, participant("p1"))
    outside, inside = ValidationClaim(study_session_id=None), ValidationClaim(study_session_id=session.pk)
    assert study_of([outside, inside]) == study
    assert study_of([outside]) is None
    assert study_of([]) is None


# --- researchers' decisions ----------------------------------------------------------------------------


@pytest.fixture
def announced() -> Any:
    """The announcements of decisions, as a receiver listening to the session model hears them."""
    heard: list[tuple[object, list[int], str]] = []

    def receiver(sender: object, **kwargs: Any) -> None:
        heard.append((sender, [session.pk for session in kwargs["sessions"]], kwargs["decision"]))

    code_holds_decided.connect(receiver, sender=StudySession, dispatch_uid="test-hold-decisions")
    yield heard
    code_holds_decided.disconnect(dispatch_uid="test-hold-decisions", sender=StudySession)


def test_a_decision_other_than_release_or_refuse_is_refused_with_a_reason_and_changes_nothing():
    study = make_study(make_dataset())
    session = completed(study, "p1")
    hold(session, SHARED_BROWSER, "Same browser.")
    with pytest.raises(HoldDecisionRefused) as refused:
        decide_code_holds([session.pk], "maybe")
    assert str(refused.value) == "Choose to release or to refuse the held codes."
    assert list(CodeHold.objects.filter(session=session).values_list("decision", flat=True)) == [""]


def test_a_decision_reaches_only_the_named_complete_sessions_whose_holds_wait(researcher, announced):
    study = make_study(make_dataset())
    decided, unfinished, unnamed = (completed(study, name) for name in ("decided", "unfinished", "unnamed"))
    StudySession.objects.filter(pk=unfinished.pk).update(completed_at=None)
    never_held = completed(study, "never-held")
    for session in (decided, unfinished, unnamed):
        hold(session, SHARED_BROWSER, "Same browser.")

    named = [decided.pk, unfinished.pk, never_held.pk]
    assert decide_code_holds(named, CodeHoldDecision.RELEASED, by=researcher) == 1

    record = CodeHold.objects.get(session=decided)
    assert record.decision == CodeHoldDecision.RELEASED and record.decided_by == researcher
    assert record.decided_at is not None
    for left in (unfinished, unnamed):
        assert CodeHold.objects.get(session=left).decision == ""
    codes = dict(StudySession.objects.filter(study=study).values_list("pk", "completion_code"))
    assert codes == {
        decided.pk: StudySession.objects.get(pk=decided.pk).expected_completion_code(),
        unfinished.pk: "",
        unnamed.pk: "",
        never_held.pk: "",
    }
    assert announced == [(StudySession, [decided.pk], CodeHoldDecision.RELEASED)]

    # A second click: nothing waits, nothing is decided or announced again.
    assert decide_code_holds(named, CodeHoldDecision.REFUSED, by=researcher) == 0
    assert CodeHold.objects.get(session=decided).decision == CodeHoldDecision.RELEASED
    assert len(announced) == 1


def test_a_refusal_is_announced_with_every_session_it_decided_and_gives_no_code(announced):
    study = make_study(make_dataset())
    first, second = completed(study, "first"), completed(study, "second")
    for session in (second, first):
        hold(session, UNVOUCHED, "Not vouched for by the market.")
    assert decide_code_holds([second.pk, first.pk], CodeHoldDecision.REFUSED) == 2
    assert announced == [(StudySession, [first.pk, second.pk], CodeHoldDecision.REFUSED)]
    held = CodeHold.objects.filter(session__in=[first, second])
    assert [(record.decision, record.decided_by_id) for record in held] == [(CodeHoldDecision.REFUSED, None)] * 2
    codes = StudySession.objects.filter(pk__in=[first.pk, second.pk]).values_list("completion_code", flat=True)
    assert list(codes) == ["", ""]


def test_a_decision_by_nobody_signed_in_records_no_decider():
    study = make_study(make_dataset())
    session = completed(study, "p1")
    hold(session, SHARED_BROWSER, "Same browser.")
    assert decide_code_holds([session.pk], CodeHoldDecision.RELEASED, by=AnonymousUser()) == 1  # type: ignore[arg-type]
    record = CodeHold.objects.get(session=session)
    assert record.decision == CodeHoldDecision.RELEASED and record.decided_by is None


# --- one browser, several participant ids ------------------------------------------------------------


def shared_reason(names: str) -> str:
    return f"Same browser as participant {names}, who came to this study earlier: one person under several ids?"


def test_a_browser_known_by_any_of_its_traces_names_the_earlier_id():
    study = make_study(make_dataset())
    visit(study, participant("pid-first"), device="browser-1")
    later = visit(study, participant("pid-later"))
    assert hold_code_of_shared_browser(later) is None  # no browser known: nothing to compare
    DeviceSighting.objects.create(device="browser-elsewhere", worker=later.worker)
    assert hold_code_of_shared_browser(later) is None

    # The completing browser alone, the session's own, or one its id was seen in.
    assert hold_code_of_shared_browser(later, browser="browser-1") == shared_reason("pid-first")
    later.device = "browser-1"
    assert hold_code_of_shared_browser(later) == shared_reason("pid-first")
    later.device = ""
    DeviceSighting.objects.create(device="browser-1", worker=later.worker)
    assert hold_code_of_shared_browser(later) == shared_reason("pid-first")


def test_an_earlier_id_is_found_by_a_browser_it_was_seen_in_though_its_visit_recorded_none():
    study = make_study(make_dataset())
    earlier = visit(study, participant("pid-first"))
    DeviceSighting.objects.create(device="browser-2", worker=earlier.worker)
    later = visit(study, participant("pid-later"), device="browser-2")
    assert hold_code_of_shared_browser(later) == shared_reason("pid-first")


def test_only_an_earlier_real_visit_of_this_study_under_another_id_counts():
    study = make_study(make_dataset())
    other_study = make_study(make_dataset("other"), slug="other-study")
    holder = participant("pid-holder")
    visit(other_study, participant("pid-other-study"), device="browser-1")
    visit(study, participant("pid-preview"), device="browser-1", is_preview=True)
    visit(study, holder, device="browser-1", name="own-earlier")
    session = visit(study, holder, device="browser-1", name="completing")
    visit(study, participant("pid-after"), device="browser-1")
    assert hold_code_of_shared_browser(session) is None


def test_the_earlier_ids_are_named_in_arrival_order_each_once_five_at_most_and_the_rest_counted():
    study = make_study(make_dataset())
    holder = participant("pid-holder")

    def reason() -> str | None:
        completing = visit(study, holder, device="browser-1", name=f"completing-{StudySession.objects.count()}")
        return hold_code_of_shared_browser(completing)

    first = participant("pid-01")
    visit(study, first, device="browser-1", name="one")
    visit(study, first, device="browser-1", name="two")  # the same id again: named once
    visit(study, participant("nameless", external_id=""), device="browser-1")  # no market id: its user name
    for number in (3, 4, 5):
        visit(study, participant(f"pid-{number:02}"), device="browser-1")
    assert reason() == shared_reason("pid-01, user-nameless, pid-03, pid-04, pid-05")

    visit(study, participant("pid-06"), device="browser-1")
    assert reason() == shared_reason("pid-01, user-nameless, pid-03, pid-04, pid-05 and 1 more")

    # The first twenty earlier visits are read: 19 ids (one came twice), 14 beyond the five shown.
    for number in range(7, 25):
        visit(study, participant(f"pid-{number:02}"), device="browser-1")
    assert reason() == shared_reason("pid-01, user-nameless, pid-03, pid-04, pid-05 and 14 more")


# --- the market vouching after completion --------------------------------------------------------------


def test_the_market_vouching_says_whether_it_gave_the_code_now():
    study = make_study(make_dataset())
    only_market = completed(study, "only-market")
    hold(only_market, UNVOUCHED, "Not vouched for by the market yet.")
    assert release_vouched_hold(only_market)
    assert only_market.completion_code == only_market.expected_completion_code() != ""

    # Its code shown already (held later, for the market alone): lifted, but no code is given now.
    shown = completed(study, "shown")
    StudySession.objects.filter(pk=shown.pk).update(completion_code=shown.expected_completion_code())
    shown.refresh_from_db()
    hold(shown, UNVOUCHED, "Not vouched for by the market yet.")
    assert not release_vouched_hold(shown)
    assert not CodeHold.objects.filter(session=shown).exists()

    # Not complete: nothing lifted, nothing given.
    unfinished = visit(study, participant("unfinished"))
    hold(unfinished, UNVOUCHED, "Not vouched for by the market yet.")
    assert not release_vouched_hold(unfinished)
    assert CodeHold.objects.filter(session=unfinished, kind=UNVOUCHED).exists()

    # Nothing waited for the market: nothing to lift.
    assert not release_vouched_hold(completed(study, "never-held"))


# --- renewing a hold at its bounds ---------------------------------------------------------------------


def claim_of(study: Study, *, created_at: datetime, expires_at: datetime, take_backs: int = 0) -> ValidationClaim:
    worker = participant(f"holder-{Worker.objects.count()}")
    claim = ValidationClaim.objects.create(
        study_session=visit(study, worker),
        worker=worker,
        pair=make_pair(study.dataset),
        expires_at=expires_at,
        take_backs=take_backs,
    )
    ValidationClaim.objects.filter(pk=claim.pk).update(created_at=created_at)  # set on create
    claim.refresh_from_db()
    return claim


def own_rules_study(*, warning: float = 2, extensions: int = 1, take_backs: int = 2) -> Study:
    study = make_study(make_dataset())
    study.hold_warning_minutes, study.hold_extensions, study.hold_take_backs = warning, extensions, take_backs
    study.save()
    return study


def test_more_time_is_given_from_the_warnings_first_second_to_the_last_extensions_moment():
    study = own_rules_study(warning=2, extensions=1)
    now = timezone.now()
    # Exactly the study's two warning minutes left, and exactly one claim period since the claim.
    claim = claim_of(study, created_at=now - timedelta(minutes=10), expires_at=now + timedelta(minutes=2))
    assert renew_hold(ValidationClaim, [claim], now, minutes=10, items_free=lambda: False) is HoldRenewal.EXTENDED
    claim.refresh_from_db()
    assert claim.expires_at == now + timedelta(minutes=10) and claim.status == ClaimStatus.OPEN


def test_an_expired_hold_is_taken_back_as_often_as_its_study_allows():
    study = own_rules_study(take_backs=2)
    now = timezone.now()
    claim = claim_of(study, created_at=now - timedelta(minutes=30), expires_at=now, take_backs=1)
    assert renew_hold(ValidationClaim, [claim], now, minutes=10, items_free=lambda: True) is HoldRenewal.TAKEN_BACK
    claim.refresh_from_db()
    assert (claim.status, claim.expires_at, claim.take_backs) == (ClaimStatus.OPEN, now + timedelta(minutes=10), 2)

    later = claim.expires_at
    outcome = renew_hold(ValidationClaim, [claim], later, minutes=10, items_free=lambda: True)
    assert outcome is HoldRenewal.BACK_AT_LIMIT
    claim.refresh_from_db()
    assert (claim.status, claim.take_backs) == (ClaimStatus.EXPIRED, 2)


# --- waiting one's turn after a hold ran out -------------------------------------------------------------


class Turns:
    """A study where `worker`'s claims run out and others wait for work, seen at `now` with
    ten-minute claims."""

    minutes = 10

    def __init__(self, slug: str) -> None:
        self.study = make_study(make_dataset(slug), slug=slug)
        self.now = timezone.now()
        self.worker = participant(f"{slug}-worker")
        self.session = visit(self.study, self.worker)

    def claim(
        self, worker: Worker, session: StudySession, *, ended: float, status: str = ClaimStatus.OPEN
    ) -> ValidationClaim:
        """A claim of `worker` that ended `ended` minutes ago (negative: ends in the future)."""
        return ValidationClaim.objects.create(
            study_session=session,
            worker=worker,
            pair=make_pair(self.study.dataset),
            status=status,
            expires_at=self.now - timedelta(minutes=ended),
        )

    def lapse(self, *, ended: float = 1, status: str = ClaimStatus.OPEN) -> ValidationClaim:
        return self.claim(self.worker, self.session, ended=ended, status=status)

    def someone_waits(self, study: Study | None = None) -> StudySession:
        other = participant(f"waiting-{Worker.objects.count()}")
        return visit(study or self.study, other, no_task_at=self.now - timedelta(minutes=1))

    def waits(self) -> bool:
        live = ValidationClaim.objects.filter(status=ClaimStatus.OPEN, expires_at__gt=self.now)
        return waits_its_turn(self.worker.pk, self.session, self.now, minutes=self.minutes, live=live)


def test_a_worker_whose_hold_ran_out_lately_waits_while_another_participant_waits_for_work():
    turns = Turns("lapsed")
    turns.lapse(ended=1)
    turns.someone_waits()
    assert turns.waits()
    # Holding a live claim of the kind now: they are working, not claiming anew.
    turns.claim(turns.worker, turns.session, ended=-5)
    assert not turns.waits()


def test_only_the_workers_own_lapse_in_this_study_within_the_last_period_makes_them_wait():
    long_ago = Turns("long-ago")
    long_ago.lapse(ended=11)
    long_ago.someone_waits()
    assert not long_ago.waits()

    sent = Turns("sent")
    sent.lapse(ended=1, status=ClaimStatus.SUBMITTED)
    sent.lapse(ended=2, status=ClaimStatus.RELEASED)
    sent.someone_waits()
    assert not sent.waits()

    # Another participant's lapse is theirs, not this worker's.
    others = Turns("others-lapse")
    lapsed_other = participant("others-lapse-other")
    others.claim(lapsed_other, visit(others.study, lapsed_other), ended=1)
    others.someone_waits()
    assert not others.waits()

    # A lapse in another study, where someone waits, is no reason to wait here.
    here = Turns("here")
    elsewhere = make_study(make_dataset("elsewhere"), slug="elsewhere")
    here.claim(here.worker, visit(elsewhere, here.worker, name="elsewhere"), ended=1)
    here.someone_waits(elsewhere)
    assert not here.waits()


def test_a_worker_is_never_kept_waiting_by_their_own_no_task_answer():
    turns = Turns("own-answer")
    turns.lapse(ended=1)
    StudySession.objects.filter(pk=turns.session.pk).update(no_task_at=turns.now - timedelta(minutes=1))
    assert not turns.waits()


# --- a session's hold texts, one line for the files ---------------------------------------------------------


def test_a_sessions_hold_texts_read_as_one_line_in_the_order_they_were_found():
    study = make_study(make_dataset())
    session = completed(study, "p1")
    later = hold(session, SHARED_BROWSER, "Found second.")
    earlier = hold(session, UNVOUCHED, "Found first.")
    assert later is not None and earlier is not None
    CodeHold.objects.filter(pk=earlier.pk).update(found_at=later.found_at - timedelta(minutes=1))
    never_held = completed(study, "p2")
    texts = dict(StudySession.objects.filter(study=study).annotate(texts=hold_texts()).values_list("pk", "texts"))
    assert texts == {session.pk: "Found first.; Found second.", never_held.pk: None}
