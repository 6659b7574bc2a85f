"""Middleware of the crowd app."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

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
