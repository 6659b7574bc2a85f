import json
import re
from collections.abc import Callable
from typing import NoReturn
from urllib.parse import unquote

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import (
    BadRequest,
    ImproperlyConfigured,
    PermissionDenied,
    RequestDataTooBig,
    TooManyFieldsSent,
)
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from . import login_throttle
from .permissions import is_researcher

GetResponse = Callable[[HttpRequest], HttpResponseBase]


class ResearcherOnlyAdminMiddleware:
    """Crowdworkers who are logged in never see the admin, not even its login page."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path.startswith("/admin/") and request.user.is_authenticated and not is_researcher(request.user):
            # Django's handler turns this into templates/403.html, the participants' page.
            raise PermissionDenied("This area is for researchers.")
        return self.get_response(request)


class LoginThrottleMiddleware:
    """Failed logins on the login pages are limited per account (as Django normalises its name)
    and client address, per address and per account, with pauses that grow
    (base/login_throttle.py). A refused try gets a 429 whatever the password, and its
    password is never checked. A login form shown again after a POST is a failure, a redirect a
    success; anything else (a CSRF refusal) checked no password.

    Counts live in the shared cache, so every web process sees them. Behind a reverse proxy,
    LOGIN_CLIENT_IP_HEADER names the header with the client address (its last entry is used:
    the one the proxy added).
    """

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        paths = settings.LOGIN_THROTTLE["PATHS"]
        if not isinstance(paths, tuple | list):
            raise ImproperlyConfigured("LOGIN_THROTTLE['PATHS'] is a tuple of paths")
        if request.method != "POST" or request.path not in paths:
            return self.get_response(request)
        attempt = login_throttle.begin_login(request)
        if attempt.refused_for:
            return too_many_tries(request, attempt.refused_for)
        response = self.get_response(request)
        if response.status_code == 200:
            attempt.failed()
        elif response.status_code in (301, 302, 303):
            attempt.succeeded()
        else:
            attempt.not_checked()
        return response


def too_many_tries(request: HttpRequest, seconds: int) -> HttpResponse:
    minutes = max(1, -(-seconds // 60))
    response = render(request, "429.html", {"minutes": minutes}, status=429)
    response["Retry-After"] = str(seconds)
    return response


class FailedTokenThrottleMiddleware:
    """Failed token authentications on the API (DRF tokens, node tokens: any Authorization
    header answered 401) are counted per client address; past API_FAILED_TOKENS["PER_ADDRESS"] in
    the window, that address's API requests with an Authorization header get a 429 before any
    token is looked up, until the window has passed. A good token never counts, and other
    addresses are not affected. DRF authenticates before it throttles, so its own throttles never
    see a bad token: this runs first.
    """

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not request.path.startswith("/api/") or "HTTP_AUTHORIZATION" not in request.META:
            return self.get_response(request)
        limits = settings.API_FAILED_TOKENS
        key = f"api-bad-token:{login_throttle.client_address(request)}"
        if (cache.get(key) or 0) >= limits["PER_ADDRESS"]:
            refusal = JsonResponse(
                {"detail": "Too many failed authentications from this address; please wait before trying again."},
                status=429,
            )
            refusal["Retry-After"] = str(limits["WINDOW_SECONDS"])
            return refusal
        response = self.get_response(request)
        if response.status_code == 401:
            login_throttle.take_count(key, timeout=limits["WINDOW_SECONDS"])
        return response


class BadInputMiddleware:
    """A clear 400, never a 500, for input no view should have to think about: NUL bytes in the
    path, the query string, form fields, uploaded file names or JSON (PostgreSQL text cannot hold
    them), JSON nested deeper than MAX_JSON_DEPTH (Python's parser would overflow its stack), NaN
    or Infinity in JSON, and a view's own BadRequest (e.g. an unknown admin filter value).
    API paths answer JSON ({"detail": ...}), pages the friendly 400 page with the message.
    """

    MAX_JSON_DEPTH = 64
    _JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        problem = self.problem(request)
        if problem:
            return self.bad_request(request, problem)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, BadRequest):
            return self.bad_request(request, str(exception) or "This request is not valid.")
        return None

    @staticmethod
    def bad_request(request: HttpRequest, message: str) -> HttpResponse:
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": message}, status=400)
        return render(request, "400.html", {"message": message}, status=400)

    def problem(self, request: HttpRequest) -> str | None:
        raw_path = request.META.get("PATH_INFO", "") + request.META.get("QUERY_STRING", "")
        if "\x00" in raw_path or "%00" in raw_path or "\x00" in unquote(raw_path):
            return "The address contains a NUL character (%00)."
        if request.method not in ("POST", "PUT", "PATCH"):
            return None
        content_type = request.content_type or ""
        if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            try:
                for name, values in request.POST.lists():
                    if "\x00" in name or any("\x00" in value for value in values):
                        return f"The form field {name.replace(chr(0), '')!r} contains a NUL character."
                for uploads in request.FILES.lists():
                    if any("\x00" in (upload.name or "") for upload in uploads[1]):
                        return "An uploaded file name contains a NUL character."
            except (RequestDataTooBig, TooManyFieldsSent) as error:
                return str(error)
        elif (content_type == "application/json" or content_type.endswith("+json")) and not request.path.startswith(
            ("/api/", "/markets/hooks/")
        ):
            # The API checks JSON in its parser (base.parsers), after authentication;
            # market webhooks bound their raw body before reading it, then verify its signature
            # (markets.views): reading it here would read a body of any size first.
            return self.json_problem(request.body)
        return None

    def json_problem(self, body: bytes) -> str | None:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return "The JSON body is not UTF-8."
        if "\x00" in text:
            return "The JSON body contains a NUL character."
        depth = deepest = 0
        for char in self._JSON_STRING.sub('""', text):
            if char in "[{":
                depth += 1
                deepest = max(deepest, depth)
                if deepest > self.MAX_JSON_DEPTH:
                    return f"The JSON body is nested deeper than {self.MAX_JSON_DEPTH} levels."
            elif char in "]}":
                depth -= 1
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except _NonFiniteNumber as error:
            return str(error)
        except ValueError:
            return None  # not JSON at all: the view's parser says so in its own words
        if _contains_nul(data):
            return "The JSON body contains a NUL character (\\u0000)."
        return None


class _NonFiniteNumber(ValueError):
    pass


def _refuse_constant(name: str) -> NoReturn:
    raise _NonFiniteNumber(f"The JSON body contains {name}; numbers must be finite.")


def _contains_nul(data: object) -> bool:
    if isinstance(data, str):
        return "\x00" in data
    if isinstance(data, dict):
        return any(_contains_nul(key) or _contains_nul(value) for key, value in data.items())
    if isinstance(data, list):
        return any(_contains_nul(item) for item in data)
    return False
