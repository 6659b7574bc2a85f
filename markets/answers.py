"""What a market's answer to a call that moves money proves (docs/markets.md, "What an answer proves").

Three kinds, and only the first two settle anything:
- paid: the market's success answer (Prolific's 2xx to the pay step, MTurk's 200 to SendBonus), or
  its own record listing the bonus;
- nothing paid: the few answers the markets document as a request refused before anything was
  done (`nothing_was_paid`). Only these free the bonuses at once;
- unknown: everything else. A 409, a 5xx, any other 4xx, a time-out, a connection dropped after the
  request left: the market may have paid. The bonuses stay `unknown` (a state, not a message) until
  a read of the market's own record settles them, and "not paid" is believed only from a read made
  after the last attempt and after the record has had `MARKET_RECORD_SETTLE_SECONDS` to follow
  (`read_settles`): the markets pay first and list the payment afterwards.
"""

from datetime import datetime, timedelta

from django.conf import settings

from .clients import MarketError
from .models import ConnectedMarket

# Prolific's API answers a request it refuses as such before acting on it with these (its API
# reference: 400 a validation error naming the field, 401 an unknown token, 403 a token without
# the permission), as Django REST Framework, which it serves, checks all three before the view acts.
# 404, 409, 429 and every 5xx are not among them: they say nothing about money already moved.
PROLIFIC_NOTHING_DONE = frozenset({400, 401, 403})

# MTurk (AWS's JSON protocol) answers these error codes before the operation runs: RequestError is
# MTurk's documented refusal of the request itself (a worker and assignment that do not match, an
# amount out of bounds); the others are AWS's documented authentication failures. A RequestError
# about a UniqueRequestToken already used is the opposite (an earlier send went through) and is
# told apart before this is asked (markets.payments).
MTURK_CREDENTIALS_REFUSED = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "MissingAuthenticationTokenException",
        "AccessDenied",
        "AccessDeniedException",
    }
)
MTURK_NOTHING_DONE = frozenset({"RequestError"}) | MTURK_CREDENTIALS_REFUSED


def nothing_was_paid(market: str, error: MarketError) -> bool:
    """Whether this failed pay call is one of the market's documented "nothing was done" answers.
    Anything not listed (a time-out, no connection, a 409, a 5xx, an answer without a status) may
    hide a payment made."""
    if error.status is None:
        return False
    if market == ConnectedMarket.PROLIFIC:
        return error.status in PROLIFIC_NOTHING_DONE
    return 400 <= error.status < 500 and error.code in MTURK_NOTHING_DONE


def settled_after(last_attempt: datetime) -> datetime:
    """From when a read of the market's record can show an attempt made at `last_attempt`."""
    return last_attempt + timedelta(seconds=settings.MARKET_RECORD_SETTLE_SECONDS)


def read_settles(last_attempt: datetime | None, record_read_at: datetime | None) -> bool:
    """Whether a read of the market's record made at `record_read_at` may say "not paid" for an
    attempt made at `last_attempt` (both by the server's clock): made after it, and late enough for
    the record to have followed the money."""
    if last_attempt is None:
        return record_read_at is not None
    return record_read_at is not None and record_read_at >= settled_after(last_attempt)
