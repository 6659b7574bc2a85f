"""Clients of the markets' published APIs (Prolific API v1, MTurk through boto3).

A client says nothing to the database: each request and its answer go to `record` (the services
keep it as a `MarketCall`), and every failure is a `MarketError` whose message is one line a
researcher can act on. A `MarketTimeout` means the request may or may not have reached the market:
money is then settled only from the market's own record (services.reconcile...).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ANSWER_KEPT_CHARS = 4000


@dataclass
class CallRecord:
    action: str
    request_summary: str
    status_code: int | None = None
    answer: str = ""
    ok: bool = False
    error: str = ""
    duration_ms: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


Recorder = Callable[[CallRecord], None]


def no_record(_: CallRecord) -> None:
    return None


class MarketError(Exception):
    """The market refused or could not be asked; `str()` is one line for the researcher."""

    def __init__(self, message: str, *, status: int | None = None, code: str = ""):
        super().__init__(" ".join(message.split())[:300])
        self.status = status
        self.code = code


class MarketTimeout(MarketError):
    """No answer in time: the market may have acted. Never resend money on this alone."""


class MarketUnreachable(MarketError):
    """The request did not reach the market (no connection): nothing was done there."""
