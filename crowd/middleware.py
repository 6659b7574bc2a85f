"""Middleware of the crowd app."""

from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse

from . import preview, selectors
from .registry import registered
from .services import REQUEST_BROWSER, browser_device, saved_drafts_cookie


class SavedDraftsMiddleware:
    """Carries "these drafts are saved" from a submit to the next page in a cookie (crowd.services)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return saved_drafts_cookie(request, self.get_response(request))


class BrowserDeviceMiddleware:
    """Names the browser of each request (its device cookie) for the submit that completes a study
    session: the session's completion code is then shown in that browser only (crowd.services)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = REQUEST_BROWSER.set(lambda: browser_device(request))
        try:
            return self.get_response(request)
        finally:
            REQUEST_BROWSER.reset(token)


class PreviewMiddleware:
    """Serves every request of a browser in a researcher's preview of a study with nothing saved
    (crowd.preview says which are served otherwise). Last in MIDDLEWARE, so the session and the user
    come first (and the CSRF check, a view's, runs inside the rollback)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Only a browser with a session can be previewing: other requests (API tokens, webhooks)
        # are left as they were.
        session = preview.previewed_session(request) if settings.SESSION_COOKIE_NAME in request.COOKIES else None
        if session is None:
            return self.get_response(request)
        task_apps = registered()
        serving = preview.serving_in_preview(request, researcher_namespaces=task_apps.researcher_namespaces)
        if serving is preview.Serving.AS_EVER:
            return self.get_response(request)
        if not selectors.may_go_on_previewing(request.user, session.study):
            # Checked on every request, not only at the start: a preview begun before the user
            # left the team (or the study moved) would go on serving the other team's pairs.
            preview.end_preview(request, claim_models=task_apps.claim_models)
            raise Http404(selectors.NO_SUCH_STUDY)
        if serving is preview.Serving.REFUSED:
            return preview.refusal_in_preview(request, session)
        return preview.serve_preview(request, self.get_response, session, claim_models=task_apps.claim_models)
