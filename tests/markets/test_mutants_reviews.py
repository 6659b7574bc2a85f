"""Approvals and rejections on the market (markets/reviews.py), at the edges mutmut found unguarded:
who decided and how it is recorded, which sessions an approval takes, a decision never turned the
other way, the queue sending only its own study's rejections with the reason and category they were
pressed with, and what each press counts (against the market STAND-IN)."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from audit.models import AuditEntry
from corpus.models import Market, WorkerExclusion
from crowd.holds import hold
from crowd.models import CodeHoldDecision, SessionEnding, StudySession
from markets import reviews, selectors
from markets.connections import ConnectionRefused
from markets.models import MarketCall, ReviewDecision, ReviewState, SessionReview
from markets.reviews import ReviewOutcome
from quality.guessers import GUESSER

from .conftest import arrive, connect_mturk, connect_prolific, make_study


def held(session):
    """The session's code held by the guesser test, as record_task_done holds it."""
    session.completion_code = ""
    session.save(update_fields=["completion_code"])
    hold(session, GUESSER, "Labels at chance so far (sequential guesser test).")
    return session


# --- what a press counts and says ------------------------------------------------------------


def test_outcomes_added_together_keep_every_count_and_every_error():
    outcome = ReviewOutcome(confirmed=1, failed=2, unanswered=3, skipped=4, errors=["first"])

    outcome.add(ReviewOutcome(confirmed=10, failed=20, unanswered=30, skipped=40, errors=["second"]))

    assert outcome == ReviewOutcome(confirmed=11, failed=22, unanswered=33, skipped=44, errors=["first", "second"])


def test_the_outcome_line_names_the_unanswered_the_first_refusal_and_those_left_alone():
    outcome = ReviewOutcome(confirmed=1, failed=2, unanswered=3, skipped=4, errors=["Prolific refused (400)", "other"])
    assert outcome.line("Approved") == (
        "Approved on the market: 1; 3 sent without an answer (asked again on the next try); "
        "2 refused: Prolific refused (400); 4 already decided or not complete, left alone."
    )
    # A refusal whose error was not kept points to the calls.
    assert ReviewOutcome(failed=1).line("Rejected") == "Rejected on the market: 0; 1 refused: see the calls."
    assert ReviewOutcome(confirmed=2).line("Approved") == "Approved on the market: 2."


# --- who decided, and what is recorded -------------------------------------------------------


@pytest.mark.django_db
def test_a_researchers_approval_records_them_on_the_review_the_call_the_audit_and_the_hold(
    standin, django_user_model, researcher
):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    held(session)

    assert reviews.approve_sessions(study, [session.pk], by=researcher).confirmed == 1

    review = SessionReview.objects.get()
    call = MarketCall.objects.get(action="approve")
    assert (review.decided_by, review.automatic, review.reason, review.category) == (researcher, False, "", "")
    assert review.call == call and call.made_by == researcher
    assert AuditEntry.objects.get(action="review.approve").after == {"decision": "approve", "automatic": False}
    decided = session.code_holds.get()
    assert (decided.decision, decided.decided_by) == (CodeHoldDecision.RELEASED, researcher)


@pytest.mark.django_db
def test_a_researchers_rejection_records_them_its_reason_and_category_the_call_and_the_refused_hold(
    standin, django_user_model, researcher
):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    held(session)

    outcome = reviews.reject_session(
        session, "  Most catch   trials\nat random. ", category="FAILED_CHECK", by=researcher
    )

    assert outcome == ReviewOutcome(confirmed=1)
    review = SessionReview.objects.get()
    call = MarketCall.objects.get(action="reject")
    assert (review.decided_by, review.automatic) == (researcher, False)
    assert (review.reason, review.category) == ("Most catch trials at random.", "FAILED_CHECK")
    assert review.call == call and call.made_by == researcher
    assert '"Most catch trials at random."' in call.request_summary
    assert AuditEntry.objects.get(action="review.reject").after == {"decision": "reject", "automatic": False}
    decided = session.code_holds.get()
    assert (decided.decision, decided.decided_by) == (CodeHoldDecision.REFUSED, researcher)


@pytest.mark.django_db
def test_a_review_pressed_by_no_signed_in_user_names_no_decider(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)

    assert reviews.approve_sessions(study, [session.pk], by=AnonymousUser()).confirmed == 1

    assert SessionReview.objects.get().decided_by is None


@pytest.mark.django_db
def test_a_rejection_needs_a_reason_and_one_of_prolifics_categories(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)

    with pytest.raises(ConnectionRefused) as no_reason:
        reviews.reject_session(session, None)  # type: ignore[arg-type]
    with pytest.raises(ConnectionRefused) as no_category:
        reviews.reject_session(session, "No answers given.", category="NOT_A_CATEGORY")

    assert str(no_reason.value) == "A rejection needs a reason: the participant reads it."
    assert str(no_category.value) == "Choose one of Prolific's rejection categories."
    assert not SessionReview.objects.exists() and not MarketCall.objects.exists()


# --- a decision is never turned the other way ------------------------------------------------


@pytest.mark.django_db
def test_a_queued_approval_is_never_turned_into_a_rejection_nor_a_refused_rejection_into_an_approval(
    standin, django_user_model
):
    study = make_study()
    connect_prolific(study, standin)
    approved, rejected = arrive(study, standin, django_user_model, 2)
    standin.fail("approve", "500")
    assert reviews.approve_sessions(study, [approved.pk]).unanswered == 1
    standin.fail("reject", "400")
    assert reviews.reject_session(rejected, "No answers given.").failed == 1

    assert reviews.reject_session(approved, "Changed my mind.") == ReviewOutcome(skipped=1)
    assert reviews.approve_sessions(study, [rejected.pk]) == ReviewOutcome(skipped=1)

    assert {r.study_session_id: (r.decision, r.state) for r in SessionReview.objects.all()} == {
        approved.pk: (ReviewDecision.APPROVE, ReviewState.SENT),
        rejected.pk: (ReviewDecision.REJECT, ReviewState.FAILED),
    }
    assert {row["status"] for row in standin.submissions.values()} == {"AWAITING REVIEW"}


@pytest.mark.django_db
def test_every_decided_session_is_counted_left_alone_and_the_others_named_with_them_are_still_sent(
    standin, django_user_model
):
    study = make_study()
    connect_prolific(study, standin)
    fresh, first, second = arrive(study, standin, django_user_model, 3)
    assert reviews.approve_sessions(study, [first.pk, second.pk]).confirmed == 2

    # The newest sessions come first: the decided ones are met before the undecided one.
    outcome = reviews.approve_sessions(study, [fresh.pk, first.pk, second.pk])

    assert outcome == ReviewOutcome(confirmed=1, skipped=2)
    assert standin.submissions[fresh.external_session_id]["status"] == "APPROVED"


@pytest.mark.django_db
def test_an_mturk_rejection_records_its_call_and_rejecting_it_again_counts_it_left_alone(standin, django_user_model):
    study = make_study()
    connect_mturk(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    assert reviews.reject_session(session, "No work done.").confirmed == 1

    assert reviews.reject_session(session, "No work done.") == ReviewOutcome(skipped=1)
    assert SessionReview.objects.get().call == MarketCall.objects.get(action="reject")


# --- which sessions an approval takes --------------------------------------------------------


@pytest.mark.django_db
def test_approving_without_naming_takes_only_complete_open_free_undecided_sessions(
    standin, django_user_model, researcher
):
    study = make_study()
    connect_prolific(study, standin)
    fresh, closed, code_held, excluded, queued_rejection, approved, unfinished = arrive(
        study, standin, django_user_model, 7
    )
    unfinished.completed_at = None
    unfinished.save(update_fields=["completed_at"])
    closed.closed_at, closed.ended_as = timezone.now(), SessionEnding.REJECTED
    closed.save(update_fields=["closed_at", "ended_as"])
    held(code_held)
    WorkerExclusion.objects.create(worker=excluded.worker, team_id=study.dataset.team_id)
    standin.fail("reject", "500")
    assert reviews.reject_session(queued_rejection, "No answers given.").unanswered == 1
    assert reviews.approve_sessions(study, [approved.pk]).confirmed == 1

    outcome = reviews.approve_sessions(study, by=researcher)

    assert outcome == ReviewOutcome(confirmed=1)
    assert outcome.line("Approved") == "Approved on the market: 1."
    statuses = {s.pk: standin.submissions[s.external_session_id]["status"] for s in (fresh, approved)}
    assert statuses == {fresh.pk: "APPROVED", approved.pk: "APPROVED"}
    left = (closed, code_held, excluded, queued_rejection, unfinished)
    assert {standin.submissions[s.external_session_id]["status"] for s in left} == {"AWAITING REVIEW"}
    assert SessionReview.objects.get(study_session=fresh).automatic is False
    # A closed visit is not approved even when named.
    assert reviews.approve_sessions(study, [closed.pk]) == ReviewOutcome()


@pytest.mark.django_db
def test_approving_a_study_takes_none_of_another_studys_sessions(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    other = make_study("other-study")
    connect_prolific(other, standin)
    (own,) = arrive(study, standin, django_user_model, 1)
    (elsewhere,) = arrive(other, standin, django_user_model, 1, prefix="other-")
    StudySession.objects.filter(pk=elsewhere.pk).update(external_session_id="other-submission")
    standin.add_submission("other-submission", elsewhere.worker.external_id)
    standin.add_submission(own.external_session_id, own.worker.external_id)  # arrive reused its id

    assert reviews.approve_sessions(study, automatic=True) == ReviewOutcome(confirmed=1)

    assert standin.submissions[own.external_session_id]["status"] == "APPROVED"
    assert standin.submissions["other-submission"]["status"] == "AWAITING REVIEW"
    assert not SessionReview.objects.filter(study_session=elsewhere).exists()


# --- what each market call counts ------------------------------------------------------------


@pytest.mark.django_db
def test_mturk_approvals_count_each_session_confirmed_unanswered_or_refused(standin, django_user_model):
    study = make_study()
    connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 6, market=Market.MTURK)
    confirmed, unanswered, refused = sessions[:2], sessions[2:4], sessions[4:]
    assert reviews.approve_sessions(study, [s.pk for s in confirmed]).confirmed == 2
    standin.fail("ApproveAssignment", "500", times=2)
    assert reviews.approve_sessions(study, [s.pk for s in unanswered]).unanswered == 2
    for session in refused:
        standin.assignments.pop(session.external_session_id)

    outcome = reviews.approve_sessions(study, [s.pk for s in refused])

    assert (outcome.confirmed, outcome.failed, outcome.unanswered) == (0, 2, 0)
    assert len(outcome.errors) == 2 and "Assignment does not exist." in outcome.errors[0]
    for review in SessionReview.objects.filter(study_session__in=refused).select_related("call"):
        assert review.state == ReviewState.FAILED and "Assignment does not exist." in review.last_error
        assert review.call is not None and review.call.action == "approve" and not review.call.ok


@pytest.mark.django_db
def test_a_refused_rejection_pressed_again_stays_queued_while_the_market_does_not_answer(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    standin.fail("reject", "400")
    assert reviews.reject_session(session, "No answers given.").failed == 1
    assert SessionReview.objects.get().state == ReviewState.FAILED
    standin.fail("reject", "500")

    again = reviews.reject_session(session, "No answers given.")

    assert (again.unanswered, again.failed) == (1, 0)
    review = SessionReview.objects.get()
    assert review.state == ReviewState.SENT, "not refused this time: queued, sent again by the beat"
    assert review.attempts == 2 and "Prolific had an error (500)" in review.last_error


@pytest.mark.django_db
def test_a_review_whose_market_id_is_malformed_stays_queued_with_the_reason_and_no_call(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    session.external_session_id = "not/a/submission"
    session.save(update_fields=["external_session_id"])

    outcome = reviews.reject_session(session, "No answers given.")

    assert (outcome.unanswered, outcome.failed) == (1, 0)
    review = SessionReview.objects.get()
    assert review.state == ReviewState.SENT and review.call is None and review.last_error == outcome.errors[0]
    assert not MarketCall.objects.exists(), "nothing was sent"


# --- the queue -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_queue_sends_only_its_own_studys_queued_rejections_and_never_an_approval_as_one(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    queued, refused, approval, also_queued = arrive(study, standin, django_user_model, 4)
    other = connect_mturk(make_study("other-study"), standin)
    (elsewhere,) = arrive(other.study, standin, django_user_model, 1, market=Market.MTURK)
    standin.fail("reject", "500", times=2)
    standin.fail("reject", "400")
    standin.fail("approve", "500")
    standin.fail("RejectAssignment", "500")
    assert reviews.reject_session(queued, "No answers given.").unanswered == 1
    assert reviews.reject_session(also_queued, "Wrong code.", category="BAD_CODE").unanswered == 1
    assert reviews.reject_session(refused, "No answers given.").failed == 1
    assert reviews.approve_sessions(study, [approval.pk]).unanswered == 1
    assert reviews.reject_session(elsewhere, "No work done.").unanswered == 1
    calls_before = MarketCall.objects.count()

    outcome = reviews.retry_queued_rejections(connection)

    assert outcome == ReviewOutcome(confirmed=2)
    states = {r.study_session_id: r.state for r in SessionReview.objects.all()}
    assert states == {
        queued.pk: ReviewState.CONFIRMED,
        also_queued.pk: ReviewState.CONFIRMED,
        refused.pk: ReviewState.FAILED,
        approval.pk: ReviewState.SENT,
        elsewhere.pk: ReviewState.SENT,
    }
    assert standin.submissions[approval.external_session_id]["status"] == "AWAITING REVIEW"
    assert standin.submissions[refused.external_session_id]["status"] == "AWAITING REVIEW"
    assert standin.assignments[elsewhere.external_session_id]["AssignmentStatus"] == "Submitted"
    # Each queued rejection: Prolific's record looked up, then the rejection sent.
    assert MarketCall.objects.count() - calls_before == 4


@pytest.mark.django_db
def test_sending_the_whole_queue_again_counts_its_approvals_and_rejections_and_approves_no_one_undecided(
    standin, django_user_model
):
    study = make_study()
    connection = connect_prolific(study, standin)
    undecided, decided, approval, rejection = arrive(study, standin, django_user_model, 4)
    assert reviews.approve_sessions(study, [decided.pk]).confirmed == 1
    standin.fail("approve", "500")
    assert reviews.approve_sessions(study, [approval.pk]).unanswered == 1
    standin.fail("reject", "500")
    assert reviews.reject_session(rejection, "No answers given.").unanswered == 1

    assert reviews.retry_queued_reviews(connection) == ReviewOutcome(confirmed=2)
    assert reviews.retry_queued_reviews(connection) == ReviewOutcome()
    # The researcher has not decided this one: the queue sends only what was pressed.
    assert standin.submissions[undecided.external_session_id]["status"] == "AWAITING REVIEW"
    assert not SessionReview.objects.filter(study_session=undecided).exists()


@pytest.mark.django_db
def test_a_rejection_sent_again_keeps_the_category_it_was_pressed_with_and_one_without_is_other(
    standin, django_user_model
):
    study = make_study()
    connection = connect_prolific(study, standin)
    pressed, unlabelled = arrive(study, standin, django_user_model, 2)
    standin.fail("reject", "500")
    assert reviews.reject_session(pressed, "Answered at random.", category="LOW_EFFORT").unanswered == 1
    # A rejection queued before its category was kept.
    SessionReview.objects.create(
        study_session=unlabelled, decision=ReviewDecision.REJECT, reason="No answers given.", category=""
    )

    assert reviews.retry_queued_rejections(connection).confirmed == 2

    sent = {call.request_summary for call in MarketCall.objects.filter(action="reject", ok=True)}
    assert len(sent) == 2
    assert any("LOW_EFFORT" in summary and "Answered at random." in summary for summary in sent)
    assert any('"OTHER"' in summary and "No answers given." in summary for summary in sent)


@pytest.mark.django_db
def test_a_rejection_prolific_did_before_its_answer_was_lost_is_confirmed_by_the_lookups_call(
    standin, django_user_model
):
    study = make_study()
    connection = connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    standin.fail("reject", "slow-after")
    assert reviews.reject_session(session, "Wrong completion code", category="BAD_CODE").unanswered == 1

    assert reviews.retry_queued_rejections(connection) == ReviewOutcome(confirmed=1)

    review = SessionReview.objects.select_related("call").get()
    assert review.state == ReviewState.CONFIRMED
    assert review.call is not None and review.call.action == "submission.get" and review.call.ok


@pytest.mark.django_db
def test_the_panel_lists_the_review_answered_or_tried_last_first(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    tried_again, confirmed_later, approved = arrive(study, standin, django_user_model, 3)
    standin.fail("reject", "500", times=3)
    assert reviews.reject_session(tried_again, "No answers given.").unanswered == 1
    assert reviews.reject_session(confirmed_later, "No answers given.").unanswered == 1
    assert reviews.approve_sessions(study, [approved.pk]).confirmed == 1

    # The queue meets the market's error again on the first, and the second goes through.
    assert reviews.retry_queued_rejections(connection) == ReviewOutcome(
        confirmed=1, unanswered=1, errors=["Prolific had an error (500): Internal error."]
    )

    decided = [s.pk for s in selectors.panel(study)["decided"]]
    assert decided == [confirmed_later.pk, tried_again.pk, approved.pk]
