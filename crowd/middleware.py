"""Middleware of the crowd app."""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from . import preview
from .registry import registered
from .services import saved_drafts_cookie, serving_browser


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
        with serving_browser(request):
            return self.get_response(request)


class PreviewMiddleware:
    """Serves the task pages of a researcher's preview of a study with nothing saved (crowd.preview):
    last in MIDDLEWARE, so the session, the user and the CSRF check come first. Other pages (the
    dashboard, the admin) are served as ever, even in a previewing browser."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Only a browser with a session on a task page can be previewing: other requests are left as they were.
        if settings.SESSION_COOKIE_NAME not in request.COOKIES or not _is_task_page(request):
            return self.get_response(request)
        if request.session.get(preview.PREVIEW_KEY) is None:
            return self.get_response(request)
        session = preview.previewed_session(request)
        if session is None:
            return self.get_response(request)
        return preview.serve_preview(request, self.get_response, session, claim_models=registered().claim_models)


def _is_task_page(request: HttpRequest) -> bool:
    try:
        match = resolve(request.path_info)
    except Resolver404:
        return False
    return getattr(match.func, "__module__", "") in registered().previewed_view_modules
