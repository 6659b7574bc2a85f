"""The markets' ids are data, never paths: each is checked against its market's format before it
is stored on a connection and again before a client puts it in a request.

A researcher types a connection's ids (study, HIT type, participant groups, qualification types),
and a client joins ids into the URL it asks the market with its stored token. An id such as
`../users/me/#` would otherwise turn "Test the connection" into a request on a path of the typist's
choosing, answered with the token owner's account. So:

- Prolific's own ids (studies, participant groups, submissions, bulk bonuses) are MongoDB object
  ids: 24 lowercase hexadecimal digits.
- MTurk's HIT type and qualification type ids are upper-case letters and digits (30 in the ids
  MTurk hands out; 20 to 40 accepted).
- Every id a client puts in a URL path is at least a plain token (letters, digits, `-`, `_`; at
  most 64): the submission ids of arrival links and the bulk ids of the market's answers too.
- A participant's or worker's id comes from the crowd's arrival link (`crowd.arrival`'s format:
  letters, digits and `_.:-`, no `/`, `?`, `#` or `%`); it goes only into a JSON body.

Django-free: the clients, the model and the services call it alike.
"""

import re

PROLIFIC_ID = re.compile(r"[0-9a-f]{24}")
MTURK_TYPE_ID = re.compile(r"[A-Z0-9]{20,40}")
PLAIN_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")
ARRIVAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")

PROLIFIC_FORMAT = "Prolific's ids are 24 lower-case hexadecimal digits (e.g. 60a3f1c2b4e5d6f7a8b9c0d1)"
MTURK_FORMAT = "MTurk's ids are upper-case letters and digits (e.g. 3XYZ0ABCDEF1GHIJ2KLMN3OPQR4STU)"
TOKEN_FORMAT = "an id of letters, digits, '-' and '_' (at most 64)"
ARRIVAL_FORMAT = "a worker's id of letters, digits and '_.:-' (at most 128)"


class BadMarketId(ValueError):
    """An id that is not in its market's format; `str()` says which and what the format is."""


def _check(pattern: re.Pattern[str], value: str, what: str, fmt: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise BadMarketId(f"{what} {value!r} is not a market id: {fmt}.")
    return value


def prolific_id(value: str, what: str = "The Prolific id") -> str:
    """`value` when it is a Prolific object id, else BadMarketId."""
    return _check(PROLIFIC_ID, value, what, PROLIFIC_FORMAT)


def mturk_type_id(value: str, what: str = "The MTurk id") -> str:
    """`value` when it is an MTurk HIT type or qualification type id, else BadMarketId."""
    return _check(MTURK_TYPE_ID, value, what, MTURK_FORMAT)


def path_token(value: str, what: str = "The id") -> str:
    """`value` when it is a plain token, safe as one segment of a URL path."""
    return _check(PLAIN_TOKEN, value, what, TOKEN_FORMAT)


def participant_id(value: str, what: str = "The participant's id") -> str:
    """`value` when it is a worker's id as an arrival link may give it."""
    return _check(ARRIVAL_ID, value, what, ARRIVAL_FORMAT)


def connection_id_problems(
    market: str,
    *,
    market_study_id: str = "",
    hit_type_id: str = "",
    qualified_list_id: str = "",
    excluded_list_id: str = "",
) -> dict[str, str]:
    """The connection's fields that are not in their market's format, each with why (blank fields
    are left to the required-field checks). `market` is "prolific" or "mturk"."""
    checks = {
        "market_study_id": (market_study_id, "The Prolific study id"),
        "hit_type_id": (hit_type_id, "The HIT type id"),
        "qualified_list_id": (qualified_list_id, "The qualified workers' list id"),
        "excluded_list_id": (excluded_list_id, "The excluded workers' list id"),
    }
    check = prolific_id if market == "prolific" else mturk_type_id
    problems: dict[str, str] = {}
    for field, (value, what) in checks.items():
        if not value:
            continue
        if (market == "prolific" and field == "hit_type_id") or (market != "prolific" and field == "market_study_id"):
            continue  # the other market's field: not sent anywhere
        try:
            check(value, what)
        except BadMarketId as error:
            problems[field] = str(error)
    return problems
