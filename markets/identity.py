"""An identity is real when the market says so, not when a browser sends its id.


A study link's PROLIFIC_PID / workerId is whatever the browser sends. Where the study has a market
connection, each arrival is checked against the market's own record of the visit, after the
arrival's commit: Prolific's in the arrival request itself, before the first task is shown
(`check_at_arrival`, MARKET_ARRIVAL_TIMEOUT_SECONDS), MTurk's and the ones not answered in time by
`markets.check_arrival`, a Celery task (in this process in the embedded mode):

- Prolific: the submission named by SESSION_ID (GET submissions/{id}/) is the participant's and
  the connection's study's;
- MTurk: the assignment (ListAssignmentsForHIT of the link's hitId) is the worker's. MTurk lists an
  assignment only once it is submitted, so until then the session waits ("pending").

The answer is stored on the session (`StudySession.market_check`, its note, whose the market says
the visit is). Labels written while the session waits count nowhere (`ValidationLabel.
awaiting_market_session`), and count once the market vouches (`corpus.services.
release_awaiting_labels`, in the answer's transaction); a refusal leaves them out for good.
While the market has not vouched, a completing session's code is held
(`crowd.holds.hold_code_of_unvouched`) and given once it does (`release_vouched_hold`). A record
that names someone else, or none at all, is refused: the session's code stays held, the two ids
are linked (never validating each other's pairs, `validation.selectors.candidate_statement`) and
the arriving id is excluded, which takes its labels out of gold as every exclusion does
(`quality.services.set_excluded`). A market that cannot be reached leaves the session pending: the
task retries, and the beat's sweep (`markets.check_pending_arrivals`) asks again.
"""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Count
from django.dispatch import receiver
from django.utils import timezone

from base.task_queue import enqueue
from corpus.models import Worker
from corpus.selectors import is_excluded_in
from corpus.services import release_awaiting_labels
from crowd.arrival import link_workers, session_arrived
from crowd.holds import UNVOUCHED, has_decided_hold, hold, release_vouched_hold
from crowd.models import LinkReason, MarketCheck, Study, StudySession
from quality.services import set_excluded

from .answers import MTURK_CREDENTIALS_REFUSED
from .clients import MarketError
from .clients.mturk import MTurkClient
from .clients.prolific import ProlificClient
from .connections import client_for, connection_of
from .models import ConnectedMarket, MarketConnection
from .sealing import SealingUnavailable

# The words of a refusal: the market's record is not this participant's.
UNVOUCHED_REFUSED = "Not vouched for by the market"

# Prolific's ids are 24 hex digits: anything else is not sent into a URL path.
PROLIFIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# A market status that says the request itself was refused, not that the market is unwell.
_ANSWERED = range(400, 500)
# The sweep asks again for sessions this young at most (an MTurk assignment submitted later).
SWEEP_DAYS = 7


@dataclass(frozen=True)
class MarketAnswer:
    state: str  # a MarketCheck
    note: str
    participant_id: str = ""
    # True when the market could not answer (unreachable, its error, its rate limit): ask again.
    ask_again: bool = False


def _refused(error: MarketError) -> bool:
    return error.status in _ANSWERED and error.status not in (401, 403, 429)


def ask_prolific(client: ProlificClient, connection: MarketConnection, session: StudySession) -> MarketAnswer:
    submission_id = session.external_session_id
    if session.external_study_id != connection.market_study_id:
        return MarketAnswer(
            MarketCheck.REFUSED,
            f"The link's STUDY_ID “{session.external_study_id}” is not this study's Prolific study.",
        )
    if not PROLIFIC_ID.fullmatch(submission_id):
        return MarketAnswer(MarketCheck.REFUSED, f"“{submission_id}” is not a Prolific submission id.")
    try:
        row = client.submission(submission_id)
    except MarketError as error:
        if _refused(error):
            return MarketAnswer(MarketCheck.REFUSED, f"Prolific has no submission {submission_id}: {error}")
        return MarketAnswer(MarketCheck.PENDING, f"Prolific did not answer: {error}", ask_again=True)
    owner = str(row.get("participant_id") or row.get("participant") or "")
    study = str(row.get("study_id") or row.get("study") or "")
    if study and study != connection.market_study_id:
        return MarketAnswer(
            MarketCheck.REFUSED, f"Prolific's submission {submission_id} is of another study ({study}).", owner
        )
    if owner != session.worker.external_id:
        return MarketAnswer(
            MarketCheck.REFUSED,
            f"Prolific's submission {submission_id} is participant {owner or '(none)'}'s, "
            f"not {session.worker.external_id}'s.",
            owner,
        )
    return MarketAnswer(MarketCheck.VOUCHED, f"Prolific's submission {submission_id} is this participant's.", owner)


def ask_mturk(client: MTurkClient, session: StudySession) -> MarketAnswer:
    assignment_id, hit_id = session.external_session_id, session.external_study_id
    try:
        assignments = client.assignments_for_hit(hit_id)
    except MarketError as error:
        # AWS answers the platform's own refused credentials with a 400 too: that says nothing
        # about the participant, who waits for an answer about them.
        unanswered = ("ServiceUnavailable", "ServiceFault", *MTURK_CREDENTIALS_REFUSED)
        if _refused(error) and error.code not in unanswered:
            return MarketAnswer(MarketCheck.REFUSED, f"MTurk does not know HIT {hit_id} for this account: {error}")
        return MarketAnswer(MarketCheck.PENDING, f"MTurk did not answer: {error}", ask_again=True)
    found = next((row for row in assignments if row.get("AssignmentId") == assignment_id), None)
    if found is None:
        # Accepted assignments are not listed until they are submitted: not a refusal.
        return MarketAnswer(
            MarketCheck.PENDING, f"MTurk lists no submitted assignment {assignment_id} of HIT {hit_id} yet."
        )
    owner = str(found.get("WorkerId") or "")
    if owner != session.worker.external_id:
        return MarketAnswer(
            MarketCheck.REFUSED,
            f"MTurk's assignment {assignment_id} is worker {owner or '(none)'}'s, not {session.worker.external_id}'s.",
            owner,
        )
    return MarketAnswer(MarketCheck.VOUCHED, f"MTurk's assignment {assignment_id} is this worker's.", owner)


def ask_market(session: StudySession, *, timeout: float | None = None, patient: bool = True) -> MarketAnswer:
    """What the study's market says of the session's ids (no transaction is held across the call).
    `timeout`, `patient`: as `client_for`'s, for a participant waiting at arrival."""
    connection = MarketConnection.objects.filter(study_id=session.study_id).first()
    if connection is None:
        return MarketAnswer(MarketCheck.UNCHECKED, "The study has no market connection: its ids are unchecked.")
    try:
        client = client_for(connection, timeout=timeout, patient=patient)
    except SealingUnavailable as error:
        return MarketAnswer(
            MarketCheck.PENDING, f"The connection's credentials cannot be read: {error}", ask_again=True
        )
    if isinstance(client, ProlificClient):
        return ask_prolific(client, connection, session)
    return ask_mturk(client, session)


def check_session(session_id: int, *, timeout: float | None = None, patient: bool = True) -> MarketAnswer | None:
    """Ask the market about a waiting session and store its answer; None when it waits no more
    (answered already, gone, a researcher's preview)."""
    session = (
        StudySession.objects.select_related("worker")
        .filter(pk=session_id, market_check=MarketCheck.PENDING, is_preview=False)
        .first()
    )
    if session is None:
        return None
    answer = ask_market(session, timeout=timeout, patient=patient)
    store_answer(session_id, session.worker_id, answer)
    return answer


def store_answer(session_id: int, worker_id: int, answer: MarketAnswer) -> None:
    """Write the market's answer on the session, in one transaction with what follows from it: the
    code given (vouched) or held, the ids linked and the arriving id excluded (refused)."""
    with transaction.atomic():
        # The worker's row first, then the session's: the order a claim and a submit lock them in
        # (the other order deadlocked with a submit completing the same session).
        Worker.objects.select_for_update(no_key=True).filter(pk=worker_id).first()
        session = (
            StudySession.objects.select_for_update(of=("self",))
            .select_related("study", "worker")
            .filter(pk=session_id)
            .first()
        )
        if session is None or session.market_check != MarketCheck.PENDING:
            return
        session.market_check = answer.state
        session.market_check_note = answer.note[:300]
        session.market_checked_at = timezone.now()
        session.market_check_tries += 1
        session.market_participant_id = answer.participant_id[:128]
        session.save(
            update_fields=[
                "market_check",
                "market_check_note",
                "market_checked_at",
                "market_check_tries",
                "market_participant_id",
            ]
        )
        if answer.state == MarketCheck.VOUCHED:
            release_vouched_hold(session)
            # The labels written while it waited count from now: their pairs are recounted here.
            release_awaiting_labels(session.pk)
        elif answer.state == MarketCheck.REFUSED:
            _act_on_refusal(session, answer)


def _act_on_refusal(session: StudySession, answer: MarketAnswer) -> None:
    worker = session.worker
    if answer.participant_id:
        owner = Worker.objects.filter(market=worker.market, external_id=answer.participant_id).first()
        if owner is not None:
            link_workers(worker.pk, owner.pk, LinkReason.MARKET_RECORD)
    if session.completed_at is not None and not has_decided_hold(session):
        # A code given before the market answered (an MTurk session) stays shown, but its money is
        # held with it (crowd.holds.money_may_go) until a researcher decides. The refusal takes the
        # place of the market's silence; every other reason stays beside it.
        hold(session, UNVOUCHED, f"{UNVOUCHED_REFUSED}: {answer.note}", replacing=True)
    team_id = session.study.dataset.team_id
    # Excluded in the team whose study the market refused the ids of.
    if team_id is not None and not is_excluded_in(worker, team_id):
        set_excluded([worker.pk], True, teams=[team_id], reason=f"{UNVOUCHED_REFUSED}: {answer.note}"[:300])


def pending_sessions(now: datetime | None = None) -> list[int]:
    """The waiting sessions the sweep asks about again (the partial index `session_market_pending`)."""
    since = (now or timezone.now()) - timedelta(days=SWEEP_DAYS)
    return list(
        StudySession.objects.filter(market_check=MarketCheck.PENDING, started_at__gte=since, is_preview=False)
        .order_by("pk")
        .values_list("pk", flat=True)[:500]
    )


@receiver(session_arrived, dispatch_uid="markets.identity.check_on_arrival")
def check_on_arrival(sender: type[StudySession], session: StudySession, **kwargs: object) -> None:
    """A session started in a study with a market connection waits for the market's word, asked
    after the arrival's commit: Prolific at once, before the first task is shown (`check_at_arrival`);
    MTurk, which lists an assignment only once it is submitted, by the Celery task."""
    if session.is_preview:
        return
    market = MarketConnection.objects.filter(study_id=session.study_id).values_list("market", flat=True).first()
    if market is None:
        return
    if session.market_check != MarketCheck.PENDING:
        StudySession.objects.filter(pk=session.pk).update(market_check=MarketCheck.PENDING)
        session.market_check = MarketCheck.PENDING
    session_pk = session.pk
    if market == ConnectedMarket.PROLIFIC:
        transaction.on_commit(lambda: check_at_arrival(session_pk))
    else:
        transaction.on_commit(lambda: enqueue("markets.check_arrival", session_pk))


def check_at_arrival(session_id: int) -> MarketAnswer | None:
    """Ask the market while the participant waits for their first task, at most
    MARKET_ARRIVAL_TIMEOUT_SECONDS and never waiting out a rate limit: a made-up SESSION_ID is
    refused before any task is shown. A market that does not answer in time leaves the session
    waiting (its code held, its labels out of gold) for the Celery task and the beat's sweep."""
    try:
        answer = check_session(session_id, timeout=settings.MARKET_ARRIVAL_TIMEOUT_SECONDS, patient=False)
    except DatabaseError:
        # A lock the participant's own other request holds: nothing was stored; the task asks again.
        answer = None
        enqueue("markets.check_arrival", session_id)
    if answer is not None and answer.state == MarketCheck.PENDING:
        enqueue("markets.check_arrival", session_id)
    return answer


def confirms_each_participant(study: Study) -> bool:
    """Whether the study's ids are the market's: a connection asks the market of every arrival
    (`check_on_arrival`), so an id costs a market account and a submission. Registered into the
    crowd layer (`crowd.registry.market_confirms`): a paid study launches only with it, or signed
    links, or the researcher's open-link choice (`crowd.arrival.launch_refusal`)."""
    return MarketConnection.objects.filter(study=study).exists()


@dataclass(frozen=True)
class ArrivalChecks:
    """What the study page shows of its arrivals' checks."""

    market: str  # the connection's market's name, "" without a connection
    counts: dict[str, int]
    refused: list[StudySession]


def arrival_checks(study: Study) -> ArrivalChecks:
    """The study's sessions by market check, and the latest refused ones (with why), in two
    statements (the connection: `connection_of`)."""
    connection = connection_of(study)
    sessions = StudySession.objects.filter(study=study, is_preview=False)
    counts = dict.fromkeys(MarketCheck.values, 0)
    for state, n in sessions.order_by().values_list("market_check").annotate(n=Count("pk")):
        counts[state] = n
    refused = list(
        sessions.filter(market_check=MarketCheck.REFUSED).select_related("worker").order_by("-market_checked_at")[:20]
    )
    return ArrivalChecks(connection.get_market_display() if connection else "", counts, refused)
