"""Writes of the crowd app: the worker behind an account, a study session's task count, and the
browser a participant works in."""

import re
import secrets
from collections.abc import Callable
from contextvars import ContextVar

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from corpus.models import Market, Worker

from . import hold_kinds
from .holds import COMPLETING_BROWSER, hold
from .models import DeviceSighting, StudySession


def worker_for_user(user: User) -> Worker:
    """The Worker behind a logged-in account; local accounts get one the first time they work."""
    found = Worker.objects.filter(user_id=user.pk).order_by().first()
    if found is not None:
        user.worker = found  # both sides' caches, as `user.worker` would leave them; no write
        return user.worker
    try:
        with transaction.atomic():
            return Worker.objects.create(user=user, market=Market.LOCAL)
    except IntegrityError:  # a second tab created it first
        return Worker.objects.get(user=user)


# The order in which a participant's claim or submit takes its row locks, written down once (docs/
# architecture.md, "Lock order"): a transaction that takes two of these takes them top to bottom,
# so no two submits wait for each other in a circle. `record_task_done` takes the last.
LOCK_ORDER = (
    "the worker (FOR NO KEY UPDATE): a validation or per-premise label submit, a hold, an exclusion",
    "the task's own claims (FOR UPDATE): a batch's claims, a writing claim",
    "the claimed rows: pairs in pk order (FOR NO KEY UPDATE; the labels written then recount the pairs'"
    " counted-label rows, in pk order, by the label table's triggers), or the one premise (FOR NO KEY UPDATE"
    " OF it, then its claim-order row; a claim takes the claim-order row alone)",
    "the study session (FOR NO KEY UPDATE of its row alone), counting the task",
    "a writing claim's count in its study (an upsert of one `collection.models.StudyServed` shard, its last statement)",
)
# Never locked by a claim or submit: the study and the dataset rows, which every participant's rows
# reference (their inserts key-share them), and the tallies, which take append-only inserts.


def record_task_done(study_session: StudySession | None) -> StudySession | None:
    """Count one finished task; the session is complete once it reaches the study's batch size.

    In the caller's transaction (the submit that finished the task), so a task is never counted
    without its data, nor saved without being counted. When the session completes, every registered
    hold check (crowd.hold_kinds) is asked, and each reason found holds its code.
    """
    if study_session is None:
        return None
    session = (
        StudySession.objects.select_for_update(no_key=True, of=("self",))
        .select_related("study")
        .filter(pk=study_session.pk)
        .first()
    )
    if session is None:
        raise StudySession.DoesNotExist("This study session no longer exists.")
    session.tasks_done += 1
    fields = ["tasks_done"]
    if session.completed_at is None and session.tasks_done >= session.study.tasks_per_batch:
        session.completed_at = timezone.now()
        fields += ["completed_at"]
        browser = REQUEST_BROWSER.get()
        device = browser() if browser is not None else ""
        asking = COMPLETING_BROWSER.set(device)
        try:
            found = hold_kinds.findings(session)
        finally:
            COMPLETING_BROWSER.reset(asking)
        for reason in found:
            hold(session, reason.kind, reason.text)
        if not found:
            session.completion_code = session.expected_completion_code()
            fields += ["completion_code"]
        # The code is shown in the browser whose submit completed the session (StudySession.device).
        if device:
            session.device = device
            fields += ["device"]
    session.save(update_fields=fields)
    for name in ("tasks_done", "completed_at", "completion_code", "code_held_reason", "device"):
        setattr(study_session, name, getattr(session, name))  # the caller's instance says it too
    return session


# Which drafts the server saved reaches the next page in a cookie of its own, not the session: a
# submit then writes nothing beside its data, and neither does the page after it.
SAVED_DRAFTS_COOKIE = "nli_saved_drafts"
SAVED_DRAFTS_KEPT = 20
_DRAFT_KEY = re.compile(r"[A-Za-z0-9_-]{1,100}")


def drafts_saved(request: HttpRequest, key: str) -> None:
    """Tell the worker's browser, on the next page, that the draft `key` is saved: it may drop its copy."""
    request.drafts_saved_now = [*getattr(request, "drafts_saved_now", []), key]  # type: ignore[attr-defined]


def take_saved_drafts(request: HttpRequest) -> list[str]:
    """The drafts saved since the last page (once: the next page no longer names them)."""
    sent = request.COOKIES.get(SAVED_DRAFTS_COOKIE)
    if not sent:
        return []
    request.saved_drafts_taken = True  # type: ignore[attr-defined]
    return [key for key in sent.split(".") if _DRAFT_KEY.fullmatch(key)][-SAVED_DRAFTS_KEPT:]


def saved_drafts_cookie(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """Set the cookie to the drafts this request saved (after those no page has named yet), or
    clear it once a page has named them."""
    now = getattr(request, "drafts_saved_now", [])
    earlier = request.COOKIES.get(SAVED_DRAFTS_COOKIE, "")
    if now:
        kept = [] if getattr(request, "saved_drafts_taken", False) else earlier.split(".")
        keys = [key for key in [*kept, *now] if _DRAFT_KEY.fullmatch(key)][-SAVED_DRAFTS_KEPT:]
        response.set_cookie(
            SAVED_DRAFTS_COOKIE,
            ".".join(keys),
            max_age=24 * 3600,
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
            samesite="Lax",
        )
    elif earlier and getattr(request, "saved_drafts_taken", False):
        response.delete_cookie(SAVED_DRAFTS_COOKIE, samesite="Lax")
    return response


DEVICE_COOKIE = "nli_device"
DEVICE_SESSION_KEY = "device"
DEVICE_COOKIE_AGE = 2 * 365 * 24 * 3600


def browser_device(request: HttpRequest) -> str:
    """This browser's device token (the long-lived cookie, else the one the session carries), or
    "" for a browser that has none yet."""
    token = request.COOKIES.get(DEVICE_COOKIE) or request.session.get(DEVICE_SESSION_KEY) or ""
    return token if 16 <= len(token) <= 64 and token.isalnum() else ""


def device_of(request: HttpRequest) -> str:
    """This browser's device token, a new one for a browser that has none (kept in its session, so
    one request names one device)."""
    token = browser_device(request)
    if not token:
        token = secrets.token_hex(16)
        request.session[DEVICE_SESSION_KEY] = token
    return token


# The browser of the request being served, for `record_task_done` (which the task apps call deep
# inside a submit, with no request): set around each request by `BrowserDeviceMiddleware`, read
# only when a session completes (so no other request reads its session for it).
REQUEST_BROWSER: ContextVar[Callable[[], str] | None] = ContextVar("request_browser", default=None)


def note_device(request: HttpRequest, response: HttpResponse, worker: Worker) -> HttpResponse:
    """Record that `worker` arrived in this browser and keep the device cookie (researchers read the
    link between ids; a participant never sees it)."""
    token = device_of(request)
    request.session[DEVICE_SESSION_KEY] = token
    DeviceSighting.objects.get_or_create(device=token, worker=worker)
    response.set_cookie(
        DEVICE_COOKIE, token, max_age=DEVICE_COOKIE_AGE, httponly=True, samesite="Lax", secure=request.is_secure()
    )
    return response
