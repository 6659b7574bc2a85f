"""Middleware of the crowd app."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .services import saved_drafts_cookie


class SavedDraftsMiddleware:
    """Carries "these drafts are saved" from a submit to the next page in a cookie (crowd.services)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return saved_drafts_cookie(request, self.get_response(request))
