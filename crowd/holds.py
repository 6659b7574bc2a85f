"""Holds a participant can see and renew: the rule every task's "More time" and "Get these items
back" share. The task apps lock their own claim rows and items and count the
items' room; this module decides what a renewal may do and writes it.

A hold is the claims of one task page (a validation batch, a writing line). Its worker may renew it
in its last `HOLD_WARNING_MINUTES` (the hold runs `minutes` from now again), or once it ran out (the
same items are held again only if every one still has room: "taken back").

Bounds, so that a few ids cannot keep a study's last pairs from everyone else by renewing and
taking back without end: "More time" ends the hold at most 1 + `HOLD_EXTENSIONS` claim periods after
its claim; an expired hold is taken back at most `HOLD_TAKE_BACKS` times. Neither is given while
another participant of the study waits for work (`others_waiting`). A taken-back hold keeps the
claim's `created_at` (the seconds a label took count from the claim, so a batch sent just after it
came back is not taken for a guesser's). A double click extends once.
"""

import math
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.postgres.aggregates import StringAgg
from django.db import transaction
from django.db.models import CharField, F, OuterRef, Q, QuerySet, Subquery
from django.dispatch import Signal
from django.utils import timezone

from corpus.models import Market

from . import hold_kinds
from .claiming import is_live
from .models import ClaimStatus, CodeHold, CodeHoldDecision, DeviceSighting, MarketCheck, Study, StudySession, TaskClaim


class HoldRenewal(Enum):
    EXTENDED = "extended"  # the live hold runs a full period from now
    TAKEN_BACK = "taken_back"  # the expired hold's items were free: held again
    UNCHANGED = "unchanged"  # more than the warning time was left (a second click)
    TAKEN = "taken"  # the expired hold's items went to others meanwhile: nothing changed
    AT_LIMIT = "at_limit"  # the live hold had all the extra time it may get
    WAITED_FOR = "waited_for"  # the live hold gets no more time: others wait for the study's held work
    BACK_AT_LIMIT = "back_at_limit"  # the expired hold was taken back as often as a hold may be
    BACK_WAITED_FOR = "back_waited_for"  # the expired hold's items go to the others who wait for work
    BUSY = "busy"  # the worker holds another page of the task now: one at a time
    GONE = "gone"  # sent already, or given back (another study visit, an exclusion)


# Without the time: the page's hold shows it in the worker's own clock. {what}: "these pairs", "this line".
MESSAGES = {
    HoldRenewal.EXTENDED: "You have more time: the time left is counted again above.",
    HoldRenewal.TAKEN_BACK: "You have {what} again; your earlier work is kept.",
    HoldRenewal.UNCHANGED: "You still hold {what}.",
    HoldRenewal.TAKEN: "Time ran out, and {what} went to other participants meanwhile, so it cannot come back.",
    HoldRenewal.AT_LIMIT: "You cannot hold {what} longer: please send your work before the time runs out. "
    "If it does, you can take {what} back while nobody else has.",
    HoldRenewal.WAITED_FOR: "Other participants are waiting for work, and the rest of this study is held, so "
    "{what} cannot get more time: please send your work before the time runs out.",
    HoldRenewal.BACK_AT_LIMIT: "Time ran out, and you took {what} back once already, so {what} went back to "
    "other participants. Nothing was sent, and your work is still kept in this browser.",
    HoldRenewal.BACK_WAITED_FOR: "Time ran out, and other participants are waiting for work that only {what} can "
    "give them, so {what} went to them. Nothing was sent, and your work is still kept in this browser.",
    HoldRenewal.BUSY: "You hold another task of this kind now: please finish that one first.",
    HoldRenewal.GONE: "You no longer hold {what}.",
}


def renewal_message(outcome: HoldRenewal, *, what: str) -> str:
    return MESSAGES[outcome].format(what=what)


def server_hold_rules() -> dict[str, float]:
    """The server-wide hold settings a study's own fields default to (the study form shows them)."""
    return {
        "hold_warning_minutes": float(settings.NLI.get("HOLD_WARNING_MINUTES", 3)),
        "hold_extensions": int(settings.NLI.get("HOLD_EXTENSIONS", 1)),
        "hold_take_backs": int(settings.NLI.get("HOLD_TAKE_BACKS", 1)),
    }


def _rule(study: Study | None, name: str) -> float:
    own = getattr(study, name, None) if study is not None else None
    return own if own is not None else server_hold_rules()[name]


def study_of(claims: Sequence[TaskClaim]) -> Study | None:
    """The study the claims of one hold count for."""
    session_id = next((claim.study_session_id for claim in claims if claim.study_session_id is not None), None)
    if session_id is None:
        return None
    return Study.objects.filter(sessions__pk=session_id).first()


def warning_seconds(study: Study | None = None) -> int:
    """How long before a hold ends its page warns and offers "More time"."""
    return int(float(_rule(study, "hold_warning_minutes")) * 60)


# The outcomes that leave the worker without the hold (its page offers other work instead).
REFUSED_BACK = (HoldRenewal.TAKEN, HoldRenewal.BACK_AT_LIMIT, HoldRenewal.BACK_WAITED_FOR)


def latest_extension(created_at: datetime, minutes: float, study: Study | None = None) -> datetime:
    """The last moment "More time" is given to a hold claimed at `created_at`."""
    return created_at + timedelta(minutes=minutes) * int(_rule(study, "hold_extensions"))


def take_backs_allowed(study: Study | None = None) -> int:
    return int(_rule(study, "hold_take_backs"))


def record_no_task(study_session: StudySession | None, now: datetime | None = None) -> None:
    """The study told this visit there is no task: it waits for work for a claim period, or until it
    holds a task."""
    if study_session is not None and study_session.pk is not None:
        StudySession.objects.filter(pk=study_session.pk).update(no_task_at=now or timezone.now())


def others_waiting(
    claims: Sequence[TaskClaim], holder: int, now: datetime, *, minutes: float, live: QuerySet[Any]
) -> bool:
    """Whether a participant of the hold's study other than `holder` (a worker's pk) was told "no
    task" within the last claim period and holds none of the kind's `live` claims since: every open
    item of the study was held then, so the hold's items are what they wait for."""
    visits = {claim.study_session_id for claim in claims if claim.study_session_id is not None}
    if not visits:
        return False
    return (
        StudySession.objects.filter(
            study__in=StudySession.objects.filter(pk__in=visits).values("study"),
            no_task_at__gt=now - timedelta(minutes=minutes),
            completed_at__isnull=True,
            closed_at__isnull=True,
        )
        .exclude(worker_id=holder)
        .exclude(worker_id__in=live.values("worker_id"))
        .exists()
    )


def waits_its_turn(
    worker_id: int, study_session: StudySession | None, now: datetime, *, minutes: float, live: QuerySet[Any]
) -> bool:
    """Whether the worker claims nothing new now: a hold of theirs in this study ran out unsent
    within the last claim period, they hold no live claim of the kind (`live`), and another
    participant of the study waits for work. Else a hold refused its take-back would come back at
    once as a fresh claim of the same items (bench/attacks/hoarders.py)."""
    if study_session is None or live.filter(worker_id=worker_id).exists():
        return False
    lapsed = list(
        live.model._default_manager.filter(
            worker_id=worker_id,
            study_session__study_id=study_session.study_id,
            status__in=(ClaimStatus.OPEN, ClaimStatus.EXPIRED),
            expires_at__lte=now,
            expires_at__gt=now - timedelta(minutes=minutes),
        )[:1]
    )
    return bool(lapsed) and others_waiting(lapsed, worker_id, now, minutes=minutes, live=live)


WAIT_YOUR_TURN = (
    "Time ran out on your last {what} before you sent it, and other participants are waiting for work, so "
    "they go first. Please look again in a few minutes."
)


@dataclass(frozen=True)
class HoldView:
    """What a task page shows of its hold; `expired` is the server's view (the page is rendered so)."""

    expires_at: datetime
    seconds_left: int
    warn_seconds: int
    extendable: bool
    expired: bool
    may_take_back: bool = True


def has_run_out(claims: Sequence[TaskClaim], now: datetime) -> bool:
    """Whether the hold of these claims (one page's) has ended: expired, given back, or past its time."""
    return not all(is_live(claim, now) for claim in claims)


def hold_view(claims: Sequence[TaskClaim], now: datetime, *, minutes: float) -> HoldView:
    expires_at = min(claim.expires_at for claim in claims)
    created_at = min(claim.created_at for claim in claims)
    expired = has_run_out(claims, now)
    study = study_of(claims)
    return HoldView(
        expires_at=expires_at,
        # Rounded up: the page's countdown never ends before the server's hold does.
        seconds_left=0 if expired else max(0, math.ceil((expires_at - now).total_seconds())),
        warn_seconds=warning_seconds(study),
        extendable=not expired and now <= latest_extension(created_at, minutes, study),
        expired=expired,
        may_take_back=max(claim.take_backs for claim in claims) < take_backs_allowed(study),
    )


def renew_hold(
    model: type[TaskClaim],
    claims: Sequence[Any],
    now: datetime,
    *,
    minutes: float,
    items_free: Callable[[], bool],
    busy: Callable[[], bool] = lambda: False,
    others_wait: Callable[[], bool] = lambda: False,
) -> HoldRenewal:
    """Renew the hold of these claims (one page's, locked FOR UPDATE by the caller, which also
    serialises the worker's other claims of the task).

    `others_wait()` is asked before any time is given. Only for a hold that ran out: `busy()`, whether
    the worker holds another page of the task now (they would hold two); `items_free()`, after its
    claims were marked expired, locks the items as the task's claim does and says whether every one
    still has room. The caller recounts whatever it keeps of the items' held places.
    """
    if not claims or any(claim.status in (ClaimStatus.SUBMITTED, ClaimStatus.RELEASED) for claim in claims):
        return HoldRenewal.GONE
    pks = [claim.pk for claim in claims]
    rows = model._default_manager.filter(pk__in=pks)
    new_end = now + timedelta(minutes=minutes)
    study = study_of(claims)
    if not has_run_out(claims, now):
        if min(claim.expires_at for claim in claims) - now > timedelta(seconds=warning_seconds(study)):
            return HoldRenewal.UNCHANGED
        if now > latest_extension(min(claim.created_at for claim in claims), minutes, study):
            return HoldRenewal.AT_LIMIT
        if others_wait():
            return HoldRenewal.WAITED_FOR
        rows.update(expires_at=new_end)
        return HoldRenewal.EXTENDED
    if busy():
        return HoldRenewal.BUSY
    # Ran out: its claims hold no place, whatever comes of the renewal (a refusal frees its items).
    rows.update(status=ClaimStatus.EXPIRED)
    if max(claim.take_backs for claim in claims) >= take_backs_allowed(study):
        return HoldRenewal.BACK_AT_LIMIT
    if others_wait():
        return HoldRenewal.BACK_WAITED_FOR
    if not items_free():
        return HoldRenewal.TAKEN
    rows.update(status=ClaimStatus.OPEN, expires_at=new_end, take_backs=F("take_backs") + 1)
    return HoldRenewal.TAKEN_BACK


# --- held completion codes and the money that follows them ---------------------------------------
# A session's code is held by a check at completion (crowd.hold_kinds) or a later finding (`hold`):
# one `CodeHold` per reason, which the researcher releases or refuses (admin actions, or the market's
# approve/reject). Its bonuses and payment are owed only when no hold waits and none was refused.


# Sent in the decision's transaction with `sessions` (those decided now) and `decision` (a
# CodeHoldDecision): the apps above crowd act on it (adversarial queues a released session's examples).
code_holds_decided = Signal()


class HoldDecisionRefused(ValueError):
    """A decision on held codes was refused; the message is fit to show the researcher."""


def _joined_texts(session_id: int) -> str:
    texts = CodeHold.objects.filter(session_id=session_id).order_by("found_at", "pk").values_list("text", flat=True)
    return "; ".join(texts)[:300]


def _rewrite_reason(session: StudySession) -> None:
    session.code_held_reason = _joined_texts(session.pk)
    StudySession.objects.filter(pk=session.pk).update(code_held_reason=session.code_held_reason)


def hold(session: StudySession, kind: str, text: str, *, replacing: bool = False) -> CodeHold | None:
    """Hold `session`'s code for a reason of a registered `kind`: the one writer of holds. A reason
    recorded already is not recorded twice (None then); `replacing`: the kind's waiting holds of the
    session give way to this one. The session's code stays given if it was (a later finding holds
    its money, not the code shown)."""
    hold_kinds.kind(kind)
    text = text[:300]
    if replacing:
        CodeHold.objects.filter(session_id=session.pk, kind=kind, decision="").exclude(text=text).delete()
    if CodeHold.objects.filter(session_id=session.pk, kind=kind, text=text).exists():
        return None
    record = CodeHold.objects.create(session_id=session.pk, kind=kind, text=text)
    _rewrite_reason(session)
    return record


def lift(session: StudySession, kind: str) -> int:
    """Lift the waiting holds of this `kind` of `session` (their reason is gone); returns how many.
    The code is given once no hold of the session waits or was refused."""
    lifted, _ = CodeHold.objects.filter(session_id=session.pk, kind=kind, decision="").delete()
    if not lifted:
        return 0
    _rewrite_reason(session)
    if session.completed_at is not None and not session.completion_code and not _withheld(session.pk):
        session.completion_code = session.expected_completion_code()
        StudySession.objects.filter(pk=session.pk).update(completion_code=session.completion_code)
    return lifted


def has_decided_hold(session: StudySession) -> bool:
    """Whether a researcher decided a hold of `session` (a later finding then leaves it as decided)."""
    return CodeHold.objects.filter(session_id=session.pk).exclude(decision="").exists()


def _withheld(session_id: int) -> bool:
    return CodeHold.objects.filter(session_id=session_id).exclude(decision=CodeHoldDecision.RELEASED).exists()


def _holds_of(prefix: str, **condition: Any) -> Q:
    """Whether the session reached through `prefix` (e.g. "study_session__") has a hold of `condition`.
    A semi-join on the holds' session ids, not an Exists: an OuterRef loses its table inside an
    aggregate's filter once Django wraps the aggregate as a subquery (the study page's funnel)."""
    return Q(**{f"{prefix}pk__in": CodeHold.objects.filter(**condition).values("session_id")})


def money_may_go(prefix: str = "") -> Q:
    """The sessions whose money may be paid, as a filter (`prefix` reaches them through a relation):
    no hold of theirs waits for a researcher, and none was refused."""
    return ~_holds_of(prefix, decision__in=("", CodeHoldDecision.REFUSED))


# Why an open-link study's bonuses are recorded and never paid (Study.open_link_unverified).
OPEN_LINK_NO_BONUS = "not payable: the study's link is open, so its participant ids are unverified"


def bonus_may_go(prefix: str = "") -> Q:
    """The sessions whose bonuses may be paid, as a filter: their money may go, and their study's
    ids are verified. An open-link study pays no bonus: a fresh browser per typed id would earn it
    again each time."""
    # The open-link studies are asked as a set of ids (a handful of rows), not joined: a statement
    # then finds a session's study by no join, and a planner misled by stale statistics cannot walk
    # every study's sessions to find one bonus's.
    open_link = Study.objects.filter(open_link_unverified=True).values("pk")
    return money_may_go(prefix) & ~Q(**{f"{prefix}study__in": open_link})


def hold_waits(prefix: str = "") -> Q:
    """The sessions with a hold not decided yet: their money waits for the decision."""
    return _holds_of(prefix, decision="")


def hold_refused(prefix: str = "") -> Q:
    """The sessions with a hold a researcher refused (and none waiting): none of their money is owed."""
    return _holds_of(prefix, decision=CodeHoldDecision.REFUSED) & ~hold_waits(prefix)


def ever_held(prefix: str = "") -> Q:
    """The sessions with a hold, whatever was decided of it (a lifted one is gone)."""
    return _holds_of(prefix)


def hold_texts() -> Subquery:
    """The session's hold texts, oldest first and joined by "; ", as an annotation."""
    joined = (
        CodeHold.objects.filter(session_id=OuterRef("pk"))
        .order_by()
        .values("session_id")
        .annotate(texts=StringAgg("text", "; ", order_by=("found_at", "pk")))
        .values("texts")
    )
    return Subquery(joined, output_field=CharField())


def decide_code_holds(session_ids: Sequence[int], decision: str, *, by: User | None = None) -> int:
    """Release or refuse the waiting holds of these sessions, in one transaction; returns how many
    sessions were decided now. A released session gets its completion code, unless a hold of it was
    refused before. Sessions with no waiting hold are left alone (a second click changes nothing)."""
    if decision not in CodeHoldDecision.values:
        raise HoldDecisionRefused("Choose to release or to refuse the held codes.")
    with transaction.atomic():
        sessions = list(
            StudySession.objects.select_for_update(of=("self",))
            .select_related("study")
            .filter(pk__in=list(session_ids), completed_at__isnull=False)
            .filter(hold_waits())
            .order_by("pk")
        )
        decider = by if getattr(by, "pk", None) else None
        CodeHold.objects.filter(session__in=sessions, decision="").update(
            decision=decision, decided_at=timezone.now(), decided_by=decider
        )
        for session in sessions:
            if decision == CodeHoldDecision.RELEASED and not _withheld(session.pk):
                session.completion_code = session.expected_completion_code()
                session.save(update_fields=["completion_code"])
        if sessions:
            code_holds_decided.send(StudySession, sessions=sessions, decision=decision)
    return len(sessions)


def _participant_name(session: StudySession) -> str:
    worker = session.worker
    return worker.external_id or worker.user.get_username()


SHARED_BROWSER = "shared_browser"
# The browser whose submit completes the session, while `record_task_done` asks the checks (the
# session's own `device` is still the one that opened it then).
COMPLETING_BROWSER: ContextVar[str] = ContextVar("completing_browser", default="")


def hold_code_of_shared_browser(session: StudySession, *, browser: str = "") -> str | None:
    """Why the completing `session`'s code is held when one of its browsers (the one that opened it,
    `browser` completing it, every browser its id was seen in) already came to this study under
    another participant id. The earliest id of a browser in the study keeps its code; every later one
    is held, naming the earlier ids. None when the session's browsers brought no other id here first."""
    browsers = set(DeviceSighting.objects.filter(worker_id=session.worker_id).values_list("device", flat=True))
    browsers.update(device for device in (session.device, browser) if device)
    if not browsers:
        return None
    earlier = (
        StudySession.objects.filter(study_id=session.study_id, pk__lt=session.pk, is_preview=False)
        .filter(Q(device__in=browsers) | Q(worker__device_sightings__device__in=browsers))
        .exclude(worker_id=session.worker_id)
        .select_related("worker__user")
        .order_by("pk")
        .distinct()
    )
    names = list(dict.fromkeys(_participant_name(other) for other in earlier[:20]))
    if not names:
        return None
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"Same browser as participant {shown}, who came to this study earlier: one person under several ids?"


# Held while the market has not vouched for the session's ids (markets.identity): the one kind a
# later answer of the market lifts by itself (`release_vouched_hold`), so it is asked last.
UNVOUCHED = "unvouched"


def hold_code_of_unvouched(session: StudySession) -> str | None:
    """Why the completing `session`'s code is held when its study's market has not vouched for its
    ids: the market's record names someone else (or nothing), or its answer is still awaited."""
    if session.market_check == MarketCheck.REFUSED:
        return f"Not vouched for by the market: {session.market_check_note or 'its record is not this participant’s.'}"
    if session.market_check == MarketCheck.PENDING:
        if session.worker.market == Market.MTURK:
            return "Not vouched for by the market yet: waiting for MTurk to list the submitted assignment (asked again until it does)."
        return "Not vouched for by the market yet: waiting for Prolific to confirm the submission (asked again until it answers)."
    return None


def register_crowd_hold_kinds() -> None:
    """Crowd's own kinds (CrowdConfig.ready): another id's browser, and the market's silence (last)."""
    hold_kinds.register(
        hold_kinds.HoldKind(
            SHARED_BROWSER,
            "same browser as an earlier participant id",
            check=lambda session: hold_code_of_shared_browser(session, browser=COMPLETING_BROWSER.get()),
        )
    )
    hold_kinds.register(
        hold_kinds.HoldKind(UNVOUCHED, "not vouched for by the market", check=hold_code_of_unvouched, last=True)
    )


def submits_while_held(session: StudySession) -> bool:
    """Whether the held `session` is an MTurk assignment held only until MTurk lists it: MTurk lists
    it once it is submitted, so its completion page submits it (without a code). Its money waits."""
    if session.worker.market != Market.MTURK or session.market_check != MarketCheck.PENDING:
        return False
    waiting = set(session.code_holds.filter(decision="").values_list("kind", flat=True))
    return waiting == {UNVOUCHED} and not session.code_holds.filter(decision=CodeHoldDecision.REFUSED).exists()


def release_vouched_hold(session: StudySession) -> bool:
    """Lift the waiting market hold of a complete `session` (locked by the caller) now that the market
    vouched; True when its code is given now. Any other hold stays as it is (and keeps the code)."""
    if session.completed_at is None:
        return False
    had_code = bool(session.completion_code)
    return bool(lift(session, UNVOUCHED)) and not had_code and bool(session.completion_code)
