"""A researcher's preview of a study: its tasks walked through as a participant, nothing saved.

Decision (README, "Previewing a study"): the preview DISCARDS its work rather than keeping it apart.
Every submit of a preview runs the real view and services inside a transaction that is then rolled
back, so nothing of it exists afterwards (jobs are queued on commit). Kept apart instead, every
reader would have to skip its rows: one forgotten filter and a preview counts.

What a preview keeps between its pages is its claims (a task page and its submit are two
requests): they are released (no place held from anyone) whenever no preview request is being
served, opened again for each of its requests, and deleted when the preview ends or another begins.
Its one StudySession (`is_preview`) never counts a task, so it never completes; the readers that
count sessions skip it.

Fail-closed: while a browser previews, every request it sends is served so (`serve_preview`),
whatever app serves it, a task app added later and a JSON endpoint alike (the banner says "nothing
you do here is saved" on every page). No list says which pages are task pages: with one, a task
page left off it saved the preview's work. The two lists there are stay safe when a page is left
off them: `COMMITTING_URL_NAMES`, the requests that leave (or start) a preview or change who is
signed in, none a task's (left off, a page saves nothing during a preview); and the researchers'
own pages (the admin, the dashboard: `researcher_namespaces`, registered by the composition root),
read as ever, whose writing requests are refused, never run, rather than rolled back, because a
form there may act outside the database (pay bonuses on a market), which no rollback takes back
(left off, a page is rolled back). A GET is not rolled back (the claim of a task page must outlive
it): HTTP's safe methods promise nothing else is written.

The crowd layer names no task app: the composition root passes the claim models (crowd.registry).
"""

import enum
from collections.abc import Callable
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseRedirectBase
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.http import url_has_allowed_host_and_scheme

from .access import Refusal
from .arrival import SESSION_KEY, ClaimModels, release_open_claims
from .models import ClaimStatus, Study, StudySession, TaskClaim
from .services import worker_for_user

# The Django session's keys: the preview's StudySession, and its claims by model
# ({"app.model": [pk, ...]}): those of the task on screen (`current`), and those submitted, held
# (released) until the preview ends so the same item is not offered again in it (`done`).
PREVIEW_KEY = "preview_session_id"
CURRENT_CLAIMS_KEY = "preview_claims"
DONE_CLAIMS_KEY = "preview_claims_done"
# The researchers' page the preview was started from (the dashboard's study page, the admin's),
# where ending it brings the researcher back.
STARTED_FROM_KEY = "preview_started_from"
# The market session id of a researcher's preview of a study (one preview session per study and researcher).
PREVIEW_SESSION_ID = "researcher-preview"

ClaimIds = dict[str, list[int]]
# Said after each submit of a preview that passed the checks (the task's own "Saved" comes first).
PREVIEW_NOT_SAVED = "Preview: that passed the checks and was not saved."
# Said after any other rolled-back request that sends the browser on (a refused submit, a form of
# any other page): the page it goes to may say "saved".
PREVIEW_NOTHING_SAVED = "Preview: nothing of that was saved. End the preview to make changes that stay."
# Said instead of running a writing request to a researchers' page during a preview.
PREVIEW_REFUSED = (
    "This browser is previewing “{study}”, in which nothing is saved, so nothing was done here. "
    "End the preview (the button above) to change anything in the admin or the dashboard."
)

# The requests a previewing browser sends that commit as ever (URL names): the preview's own start
# and end, a study link (which ends the preview), and signing in or out or changing a password
# (rolled back, the session row they replace would be gone). None is a task's page.
COMMITTING_URL_NAMES = frozenset(
    {
        "study_preview_start",
        "preview_end",
        "study_entry",
        "login",
        "logout",
        "password_change",
        "password_reset_confirm",
        "admin:login",
        "admin:logout",
        "admin:password_change",
    }
)


def start_preview(
    request: HttpRequest, study: Study, *, claim_models: ClaimModels, started_from: str | None = None
) -> StudySession:
    """Make this browser a participant of `study` in the researcher's preview session. Claims of an
    earlier preview are deleted and the researcher's open claims released, so every open claim the
    researcher's worker holds from now on is the preview's. Ending the preview goes back to
    `started_from` when it is a path of this site."""
    user = request.user
    assert isinstance(user, User)
    worker = worker_for_user(user)
    with transaction.atomic():
        _delete_preview_claims(request, worker.pk, claim_models)
        release_open_claims(claim_models, worker__in=[worker.pk])
        # is_preview in the lookup: a participant's session is never made a preview, nor the reverse.
        session, _ = StudySession.objects.get_or_create(
            study=study, worker=worker, external_session_id=PREVIEW_SESSION_ID, is_preview=True
        )
    request.session[SESSION_KEY] = session.pk
    request.session[PREVIEW_KEY] = session.pk
    request.session[CURRENT_CLAIMS_KEY] = {}
    request.session[DONE_CLAIMS_KEY] = {}
    request.session[STARTED_FROM_KEY] = started_from if is_a_page_of_this_site(request, started_from) else None
    return session


def is_a_page_of_this_site(request: HttpRequest, url: str | None) -> bool:
    """Only a path on this host: the address arrives in a link's query string, which anyone can
    write, and ending a preview must not send the researcher to another site."""
    if not url or not url.startswith("/") or url.startswith("//"):
        return False
    return url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()}, require_https=request.is_secure())


def preview_started_from(request: HttpRequest) -> str | None:
    """The page this browser's preview was started from (checked when it started), or None."""
    started_from = request.session.get(STARTED_FROM_KEY)
    return started_from if isinstance(started_from, str) else None


def end_preview(request: HttpRequest, *, claim_models: ClaimModels) -> Study | None:
    """Leave the preview: its claims are deleted; the study previewed, or None outside a preview."""
    session = previewed_session(request)
    if session is not None:
        with transaction.atomic():
            _delete_preview_claims(request, session.worker_id, claim_models)
    for key in (PREVIEW_KEY, CURRENT_CLAIMS_KEY, DONE_CLAIMS_KEY, STARTED_FROM_KEY):
        request.session.pop(key, None)
    if request.session.get(SESSION_KEY) == (session.pk if session else None):
        request.session.pop(SESSION_KEY, None)
    return session.study if session is not None else None


def previewed_session(request: HttpRequest) -> StudySession | None:
    """The preview session this browser is in, or None. A study link opened meanwhile (another
    study session in the browser) or another account ends the preview."""
    preview_id = request.session.get(PREVIEW_KEY)
    if preview_id is None:
        return None
    if request.session.get(SESSION_KEY) != preview_id or not request.user.is_authenticated:
        return None
    return (
        StudySession.objects.select_related("study")
        .filter(pk=preview_id, is_preview=True, worker__user_id=request.user.pk)
        .first()
    )


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class Serving(enum.Enum):
    """How a request of a previewing browser is served (`serving_in_preview`)."""

    AS_EVER = "as ever"  # committed: it starts or leaves the preview, or a researchers' page is read
    REFUSED = "refused"  # not run: a researchers' form (`refusal_in_preview`)
    PREVIEWED = "previewed"  # `serve_preview`: every other request, whatever app serves it


def serving_in_preview(request: HttpRequest, *, researcher_namespaces: frozenset[str]) -> Serving:
    """How this request of a previewing browser is served. Requests named in `COMMITTING_URL_NAMES`
    commit; the researchers' pages are read as ever, outside the preview's transaction (a long page
    holds no lock), and their forms are refused; everything else, an unknown path included, is
    previewed."""
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return Serving.PREVIEWED
    if match.view_name in COMMITTING_URL_NAMES:
        return Serving.AS_EVER
    if researcher_namespaces.intersection(match.namespaces):
        return Serving.AS_EVER if request.method in SAFE_METHODS else Serving.REFUSED
    return Serving.PREVIEWED


def refusal_in_preview(request: HttpRequest, session: StudySession) -> HttpResponse:
    """The page that refuses a writing request to a researchers' page while this browser previews:
    the view is not run at all, so nothing it would do outside the database happens either."""
    refusal = Refusal(PREVIEW_REFUSED.format(study=session.study.name), title="End the preview first")
    return render(request, "crowd/not_admitted.html", {"refusal": refusal}, status=403)


def serve_preview(
    request: HttpRequest,
    get_response: Callable[[HttpRequest], HttpResponse],
    session: StudySession,
    *,
    claim_models: ClaimModels,
) -> HttpResponse:
    """Serve a request of the preview, whatever page it is. A GET runs as it would for a participant,
    then releases the claims it leaves open; anything else runs the real view, then is rolled back
    whole, and the claims it submitted are kept released until the preview ends. Either way the
    claims on screen are opened again first, as a participant's would be."""
    models = {model._meta.label_lower: model for model in claim_models}
    current: ClaimIds = request.session.get(CURRENT_CLAIMS_KEY, {})
    done: ClaimIds = request.session.get(DONE_CLAIMS_KEY, {})
    if request.method in SAFE_METHODS:
        with transaction.atomic():
            _set_status(models, current, ClaimStatus.RELEASED, ClaimStatus.OPEN)
            response = get_response(request)
            current = _claims_of(models, session.worker_id, status=ClaimStatus.OPEN)
            _set_status(models, current, ClaimStatus.OPEN, ClaimStatus.RELEASED)
        _keep_in_session(request, CURRENT_CLAIMS_KEY, current)
        return response
    with transaction.atomic():
        _set_status(models, current, ClaimStatus.RELEASED, ClaimStatus.OPEN)
        response = get_response(request)
        submitted = _claims_of(models, session.worker_id, status=ClaimStatus.SUBMITTED, among=current)
        transaction.set_rollback(True)
    # Rolled back: the submitted claims are released rows again; they stay so until the preview
    # ends, so that the preview's next task is another item.
    _keep_in_session(request, CURRENT_CLAIMS_KEY, _without(current, submitted))
    _keep_in_session(request, DONE_CLAIMS_KEY, _joined(done, submitted))
    if submitted:
        _drop_success_messages(request)  # the view's "Saved, thank you." was rolled back with its work
        messages.info(request, PREVIEW_NOT_SAVED)
    elif isinstance(response, HttpResponseRedirectBase) and not _refused_back_to_its_page(request, response):
        # Only where the browser goes on to a page that shows messages: a JSON answer's would wait
        # for the next page, one per keystroke's request.
        messages.info(request, PREVIEW_NOTHING_SAVED)
    return response


def _refused_back_to_its_page(request: HttpRequest, response: HttpResponseRedirectBase) -> bool:
    """Whether the view sent the browser back to the page the form came from with nothing to
    celebrate (a refused submit), whose page says itself that nothing was saved and why: a preview
    note above it would repeat it. With a success message queued the page would say "saved": the
    note stays then."""
    target = urlsplit(response.url)
    if (target.netloc and target.netloc != request.get_host()) or target.path != request.path:
        return False
    storage = messages.get_messages(request)
    queued = getattr(storage, "_queued_messages", [])
    return not any(message.level == messages.SUCCESS for message in queued)


def _drop_success_messages(request: HttpRequest) -> None:
    """Leave out the success messages the rolled-back view queued: "Saved, thank you." would stand
    above "Preview: … was not saved". Its errors and notes stay, they are still true."""
    storage = messages.get_messages(request)
    queued = getattr(storage, "_queued_messages", None)
    if queued is not None:
        setattr(storage, "_queued_messages", [m for m in queued if m.level != messages.SUCCESS])  # noqa: B010


def _keep_in_session(request: HttpRequest, key: str, claims: ClaimIds) -> None:
    """Store the preview's claims in the session only where they changed. A session is saved whole,
    by the last request to finish: a page's background requests (a draft's score) wait for its
    submit's claim rows, so they loaded the session before the submit saved its refusal; saving
    their unchanged claims would save that old session over it, and the refusal's errors were lost."""
    if request.session.get(key) != claims:
        request.session[key] = claims


def _claims_of(
    models: dict[str, type[TaskClaim]], worker_id: int, *, status: str, among: ClaimIds | None = None
) -> ClaimIds:
    found: ClaimIds = {}
    for label, model in models.items():
        claims = model._default_manager.filter(status=status, **_of_worker(worker_id))
        if among is not None:
            claims = claims.filter(pk__in=among.get(label, []))
        pks = sorted(claims.values_list("pk", flat=True))
        if pks:
            found[label] = pks
    return found


def _set_status(models: dict[str, type[TaskClaim]], claims: ClaimIds, old: str, new: str) -> None:
    for label, pks in claims.items():
        model = models.get(label)
        if model is not None and pks:
            model._default_manager.filter(pk__in=pks, status=old).update(status=new)


def _without(claims: ClaimIds, removed: ClaimIds) -> ClaimIds:
    kept = {label: [pk for pk in pks if pk not in set(removed.get(label, []))] for label, pks in claims.items()}
    return {label: pks for label, pks in kept.items() if pks}


def _joined(first: ClaimIds, second: ClaimIds) -> ClaimIds:
    return {label: sorted({*first.get(label, []), *second.get(label, [])}) for label in {*first, *second}}


def _delete_preview_claims(request: HttpRequest, worker_id: int, claim_models: ClaimModels) -> None:
    """Delete the claims of this browser's preview and of any other preview of the worker's."""
    listed = _joined(request.session.get(CURRENT_CLAIMS_KEY, {}), request.session.get(DONE_CLAIMS_KEY, {}))
    for model in claim_models:
        manager = model._default_manager
        listed_here = listed.get(model._meta.label_lower, [])
        manager.filter(pk__in=listed_here, **_of_worker(worker_id)).exclude(status=ClaimStatus.OPEN).delete()
        manager.filter(study_session__is_preview=True, status=ClaimStatus.RELEASED, **_of_worker(worker_id)).delete()


def _of_worker(worker_id: int) -> dict[str, object]:
    # Each concrete claim model has a `worker` (the abstract TaskClaim cannot declare it).
    return {"worker_id": worker_id}
