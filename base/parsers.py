"""The API's JSON parser: the checks of BadInputMiddleware (NUL, depth, NaN/Infinity), run when a
view reads the body, that is after authentication and permissions. A client without rights gets
its 401/403 and no server parses its body; one with rights gets the same 400 and message as a page."""

import io
from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from .middleware import BadInputMiddleware

_checker = BadInputMiddleware(get_response=lambda request: HttpResponse())  # only json_problem is used


class CheckedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        body = stream.read() if stream is not None else b""
        problem = _checker.json_problem(body)
        if problem:
            raise ParseError(problem)
        return super().parse(io.BytesIO(body), media_type, parser_context)
