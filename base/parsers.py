"""The API's JSON parser: the checks of BadInputMiddleware (NUL, depth, NaN/Infinity), run when a
view reads the body, that is after authentication and permissions. A client without rights gets
its 401/403 and no server parses its body; one with rights gets the same 400 and message as a page."""

import io

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from .middleware import BadInputMiddleware

_checker = BadInputMiddleware(get_response=None)


class CheckedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        body = stream.read() if stream is not None else b""
        problem = _checker.json_problem(body)
        if problem:
            raise ParseError(problem)
        return super().parse(io.BytesIO(body), media_type, parser_context)
