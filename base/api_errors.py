"""The API's error answers, as its OpenAPI schema documents them (modeling/api/schema.py).

- An address under /api/ that matches no route (`/api/snapshots/abc/`) answers JSON 404, not the
  participants' HTML page: a client of the API always gets `{"detail": ...}`.
- A request that names an object that does not exist (an unknown dataset or genre slug, a
  snapshot id) answers 404 naming it, not 400: the request was well formed, the object is missing.
  Serializer fields and filters say so with the error code `does_not_exist` (DRF's related
  fields; `KnownObjectFilter` below for django-filter).
"""

from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework import status
from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

MISSING = "does_not_exist"


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: JSON under /api/, the friendly page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found: no API endpoint or object at this address."}, status=404)
    return render(request, "404.html", status=404)


def _codes(detail: object) -> Iterator[str | None]:
    if isinstance(detail, dict):
        for value in detail.values():
            yield from _codes(value)
    elif isinstance(detail, list):
        for value in detail:
            yield from _codes(value)
    elif isinstance(detail, ErrorDetail):
        yield detail.code
    else:
        yield None


def _messages(detail: object, prefix: str = "") -> Iterator[str]:
    if isinstance(detail, dict):
        for key, value in detail.items():
            yield from _messages(value, f"{prefix}{key}: ")
    elif isinstance(detail, list):
        for value in detail:
            yield from _messages(value, prefix)
    else:
        yield f"{prefix}{detail}"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, except that a 400 made only of "no such object" errors becomes a 404."""
    if isinstance(exc, ValidationError):
        codes = set(_codes(exc.detail))
        if codes == {MISSING}:
            # The fields' messages stay where a 400 has them, with a `detail` summing them up.
            body: dict[str, object] = {"detail": " ".join(_messages(exc.detail))}
            if isinstance(exc.detail, dict):
                body.update(exc.detail)
            return Response(body, status=status.HTTP_404_NOT_FOUND)
    return drf_exception_handler(exc, context)
