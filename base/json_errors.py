"""A JSON decoding error as one whole sentence, for import reports.

Python's `JSONDecodeError.msg` alone is cut where the decoder meant to name a place: "Unterminated
string starting at", "Invalid control character at". A report that prints the bare message reads
as if it broke off; these words always end in the place the decoder stopped.
"""

import json


def json_error_text(error: json.JSONDecodeError, *, with_line: bool = True) -> str:
    """'Unterminated string starting at line 3, column 12', 'Expecting value at column 1': the
    decoder's message followed by its place (the line left out for a one-line record)."""
    place = f"line {error.lineno}, column {error.colno}" if with_line else f"column {error.colno}"
    message = error.msg.rstrip()
    # Messages that end in "at" are waiting for their place; the others take one after "at".
    return f"{message} {place}" if message.endswith(" at") else f"{message} at {place}"
