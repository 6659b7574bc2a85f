"""Arrival from a crowd market: the study link's URL parameters become a Worker and a StudySession.

Prolific appends ?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...; Mechanical Turk appends
?workerId=...&assignmentId=...&hitId=... (and assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE while a
worker only previews the HIT, when nothing may be created). Nobody copies ids by hand.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.dispatch import Signal
from django.http import HttpRequest
from django.utils import timezone

from corpus.models import Market, Worker

from .claiming import live_claims
from .codes import verify_link_signature
from .models import ClaimStatus, DeviceSighting, LinkReason, MarketCheck, Study, StudySession, TaskClaim, WorkerLink

MTURK_PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
# Where MTurk may ask a finished assignment to be posted (turkSubmitTo); any other value is
# ignored, so a crafted link cannot make the completion page post to a stranger's site.
MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
# Market ids are opaque tokens: letters, digits and a little punctuation, never spaces or markup.
_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
# Where the current StudySession is kept in the Django session, for the writing and validation views.
SESSION_KEY = "study_session_id"

# Each market's URL parameters for (worker id, study id, session id).
_MARKETS = [
    (Market.PROLIFIC, ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")),
    (Market.MTURK, ("workerId", "hitId", "assignmentId")),
]


# Sent in the transaction that starts or resumes a study session whose ids no market vouched for
# yet (`session`); its answers are never read (an event: the markets app receives it).
session_arrived = Signal()


class ArrivalError(Exception):
    """The link's parameters are missing or malformed; the message says which, for the worker."""


@dataclass(frozen=True)
class Arrival:
    market: str
    worker_id: str
    study_id: str
    session_id: str
    turk_submit_to: str = ""


def is_mturk_preview(params: Mapping[str, str]) -> bool:
    return params.get("assignmentId") == MTURK_PREVIEW_ASSIGNMENT


def parse_arrival(params: Mapping[str, str]) -> Arrival:
    """Read a market's ids from the query parameters, or raise ArrivalError naming what is wrong."""
    for market, names in _MARKETS:
        if not any(params.get(name) for name in names):
            continue
        values, problems = [], []
        for name in names:
            value = (params.get(name) or "").strip()
            if not value:
                problems.append(f"{name} is missing")
            elif not _ID_PATTERN.match(value):
                problems.append(f"{name} is not a valid id")
            values.append(value)
        if problems:
            raise ArrivalError("; ".join(problems) + ".")
        submit_to = (params.get("turkSubmitTo") or "").rstrip("/") if market == Market.MTURK else ""
        worker_id, study_id, session_id = values
        return Arrival(
            market, worker_id, study_id, session_id, turk_submit_to=submit_to if submit_to in MTURK_SUBMIT_HOSTS else ""
        )
    raise ArrivalError(
        "This link carries no worker ids. Please open the study from Prolific "
        "(PROLIFIC_PID, STUDY_ID, SESSION_ID) or Mechanical Turk (workerId, assignmentId, hitId)."
    )


def _username(market: str, external_id: str, attempt: int = 0) -> str:
    name = f"{market}-{external_id}"[:150]
    if attempt:
        # The plain name is taken by another account (a local user may call themselves
        # "prolific-…"): add a suffix instead of failing, the market id stays on the Worker.
        suffix = f"~{attempt}"
        name = name[: 150 - len(suffix)] + suffix
    return name


def _free_username(market: str, external_id: str) -> str:
    User = get_user_model()
    for attempt in range(100):
        name = _username(market, external_id, attempt)
        if not User.objects.filter(username=name).exists():
            return name
    raise ArrivalError("Too many accounts share this id; please contact the researchers.")


def _workers_of(arrival: Arrival) -> QuerySet[Worker]:
    return Worker.objects.filter(market=arrival.market, external_id=arrival.worker_id)


def worker_for_arrival(arrival: Arrival) -> Worker:
    """The Worker for (market, external id), created with a password-less account on first arrival."""
    worker = _workers_of(arrival).select_related("user").first()
    if worker is not None:
        return worker
    User = get_user_model()
    for _ in range(3):
        try:
            with transaction.atomic():
                user = User(username=_free_username(arrival.market, arrival.worker_id))
                user.set_unusable_password()
                user.save()
                return Worker.objects.create(user=user, market=arrival.market, external_id=arrival.worker_id)
        except IntegrityError:
            # The same worker opened the link twice at once (the first request created them),
            # or someone took the username between our check and our insert: look again.
            worker = _workers_of(arrival).select_related("user").first()
            if worker is not None:
                return worker
    raise ArrivalError("Your account could not be created just now; please open the link again.")


# The claim models live in the feature apps, above this one: crowd.registry passes them in.
ClaimModels = Sequence[type[TaskClaim]]


def release_open_claims(
    claim_models: ClaimModels,
    *,
    exclude_session: StudySession | None = None,
    on_teams: Sequence[int] | None = None,
    **worker_filter: object,
) -> int:
    """Release the open claims of every claim model that `worker_filter` names (their tasks go back to
    the pool at once), but those of `exclude_session`; with `on_teams`, only the claims on those
    teams' datasets. Returns how many."""
    released = 0
    now = timezone.now()
    for model in claim_models:
        # Each concrete claim model has a `worker` (the abstract TaskClaim cannot declare it).
        claims = model._default_manager.filter(live_claims(now), **worker_filter)
        if on_teams is not None:
            claims = claims.filter(**{f"{model.DATASET_PATH}__team_id__in": on_teams})
        if exclude_session is not None:
            claims = claims.exclude(study_session=exclude_session)
        released += claims.update(status=ClaimStatus.RELEASED)
    return released


@dataclass(frozen=True)
class StartedSession:
    session: StudySession
    released_claims: int


def start_study_session(
    study: Study, arrival: Arrival, *, claim_models: ClaimModels, device: str = ""
) -> StartedSession:
    """Create or resume the worker's StudySession for this study visit, releasing the worker's open
    claims that count for another study session (or none), in the same transaction: a claim counts
    for the session it was made in, and must not be counted for the earlier session or done twice.
    A new session remembers the browser (`device`) that opened it."""
    worker = worker_for_arrival(arrival)
    # Two first visits at once: get_or_create's own savepoint takes the loser's IntegrityError and
    # reads the winner's row.
    session, _ = StudySession.objects.get_or_create(
        study=study,
        worker=worker,
        external_session_id=arrival.session_id,
        defaults={"external_study_id": arrival.study_id, "device": device},
    )
    with transaction.atomic():
        if arrival.turk_submit_to and session.turk_submit_to != arrival.turk_submit_to:
            session.turk_submit_to = arrival.turk_submit_to
            session.save(update_fields=["turk_submit_to"])
        released = release_open_claims(claim_models, worker__in=[session.worker.pk], exclude_session=session)
        link_same_market_session(session)
        if session.market_check in (MarketCheck.UNCHECKED, MarketCheck.PENDING):
            # The markets app, where the study has a connection, marks the session as waiting for
            # the market's word and asks it after this commit (markets.identity).
            session_arrived.send(sender=StudySession, session=session)
    return StartedSession(session, released)


def link_workers(one: int, other: int, reason: str) -> bool:
    """Record that two worker ids are one person (both ways); False when they were linked already."""
    if one == other:
        return False
    rows = [
        WorkerLink(worker_id=one, linked_id=other, reason=reason),
        WorkerLink(worker_id=other, linked_id=one, reason=reason),
    ]
    before = WorkerLink.objects.filter(worker_id=one, linked_id=other).exists()
    WorkerLink.objects.bulk_create(rows, ignore_conflicts=True)
    return not before


def link_same_market_session(session: StudySession) -> int:
    """Link the session's worker to every other id that presented the same market session (a second
    id on one participant's visit is the same person, or a forgery), and to the ids whose visits the
    market's record gave to this participant id. Returns how many new links."""
    worker = session.worker
    others = set(
        StudySession.objects.filter(external_session_id=session.external_session_id, worker__market=worker.market)
        .exclude(external_session_id="")
        .exclude(worker_id=worker.pk)
        .values_list("worker_id", flat=True)
    )
    added = sum(link_workers(worker.pk, other, LinkReason.SAME_MARKET_SESSION) for other in sorted(others))
    if worker.external_id:
        named_me = set(
            StudySession.objects.filter(market_participant_id=worker.external_id, worker__market=worker.market)
            .exclude(worker_id=worker.pk)
            .values_list("worker_id", flat=True)
        )
        added += sum(link_workers(worker.pk, other, LinkReason.MARKET_RECORD) for other in sorted(named_me))
    return added


def seen_in_another_browser(arrival: Arrival, device: str) -> bool:
    """Whether the link's participant id already has a session or a browser, and this browser
    (`device`) was never theirs: then the browser is asked before it becomes that participant."""
    worker = _workers_of(arrival).first()
    if worker is None:
        return False
    sightings = DeviceSighting.objects.filter(worker=worker)
    if device and sightings.filter(device=device).exists():
        return False
    return sightings.exists() or worker.study_sessions.exists()


def is_paid(study: Study) -> bool:
    """Whether the study pays its participants: a payment per task or a bonus per catch trial."""
    return (study.payment_per_task or 0) > 0 or (study.bonus_per_catch_match or 0) > 0


def ids_verified(study: Study, *, market_confirms: bool) -> bool:
    """Whether an id costs more than typing it: the market confirms each participant or the study
    takes only links carrying its signature."""
    return market_confirms or study.require_signed_link


LAUNCH_REFUSED = (
    "This study pays its participants, and its participant ids are not verified: anyone can type an id "
    "into its link, and a fresh browser per id earns the pay and bonuses many times. Verify its ids in one "
    "of two ways: connect the study to its market (the markets page; the market then confirms each "
    "participant), or require signed links (the study's settings). Or tick “Open link: ids are unverified, "
    "no bonuses” in its settings: its bonuses are then never paid."
)


def launch_refusal(study: Study, *, market_confirms: bool) -> str | None:
    """Why the study may not take participants, for the researcher, or None: unpaid, its ids
    verified, or opened as an unverified link on purpose."""
    if not is_paid(study) or study.open_link_unverified or ids_verified(study, market_confirms=market_confirms):
        return None
    return LAUNCH_REFUSED


def first_device(worker: Worker) -> str:
    """The browser the participant id first came from (its earliest sighting, else its earliest
    session's), or "" when none is known."""
    sighting = (
        DeviceSighting.objects.filter(worker=worker).order_by("first_seen", "pk").values_list("device", flat=True)
    )
    found = sighting.first()
    if found:
        return found
    session = (
        StudySession.objects.filter(worker=worker)
        .exclude(device="")
        .order_by("started_at", "pk")
        .values_list("device", flat=True)
    )
    return session.first() or ""


def bound_to_another_browser(study: Study, arrival: Arrival, device: str) -> bool:
    """On an open-link study (`Study.open_link_unverified`: nobody confirms its ids), whether the
    link's participant id first came from another browser than this one (`device`): then it is
    refused, not asked, since the id alone is all that says who the participant is."""
    if not study.open_link_unverified:
        return False
    worker = _workers_of(arrival).first()
    if worker is None:
        return False
    first = first_device(worker)
    return bool(first) and first != device


def check_link_signature(study: Study, params: Mapping[str, str]) -> None:
    """Raise ArrivalError unless the study takes unsigned links or `sig` is the study's signature."""
    if study.require_signed_link and not verify_link_signature(params.get("sig"), study.code_secret, study.slug):
        raise ArrivalError("This study link is not signed correctly. Please open it again from the crowd platform.")


def current_study_session(request: HttpRequest, *, task_kind: str | None = None) -> StudySession | None:
    """The StudySession this browser arrived with, if it is the logged-in worker's (and of `task_kind`)."""
    session_id = request.session.get(SESSION_KEY)
    if not session_id or not request.user.is_authenticated:
        return None
    sessions = StudySession.objects.select_related("study__dataset").filter(pk=session_id, worker__user=request.user)
    if task_kind is not None:
        sessions = sessions.filter(study__task_kind=task_kind)
    return sessions.first()
