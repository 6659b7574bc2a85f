"""What a market's answer proves (markets/answers.py), at the edges mutmut found unguarded: an MTurk
5xx carrying a refusal's error code may hide a payment, and no read of the market's record settles
nothing."""

from datetime import timedelta

from django.utils import timezone

from markets.answers import nothing_was_paid, read_settles
from markets.clients import MarketError
from markets.models import ConnectedMarket


def test_an_mturk_server_error_with_a_refusal_code_may_have_paid():
    # A 5xx says nothing about money moved, whatever code its body names: only a 4xx refusal frees.
    for status in (500, 501, 503):
        error = MarketError("internal failure", status=status, code="RequestError")
        assert not nothing_was_paid(ConnectedMarket.MTURK, error), status
    assert nothing_was_paid(ConnectedMarket.MTURK, MarketError("refused", status=499, code="RequestError"))


def test_no_read_of_the_market_record_settles_nothing():
    assert not read_settles(None, None)
    assert not read_settles(timezone.now(), None)
    assert read_settles(None, timezone.now())
    assert read_settles(timezone.now() - timedelta(days=1), timezone.now())
