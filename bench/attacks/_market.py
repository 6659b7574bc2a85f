"""What the identity attacks share: the market STAND-IN (tests/markets/standin.py, a
real HTTP server speaking Prolific's API v1) on the port the server under attack was told about.

The server must be started with PROLIFIC_API_URL=http://127.0.0.1:<ATTACK_MARKET_PORT>/api/v1/
(8899 unless ATTACK_MARKET_PORT says otherwise) and the MARKET_CREDENTIALS_KEY the judge has, so its
arrival checks (markets.identity) ask this stand-in. A server that asks no market (one without
arrival checks) never calls it: the attack measures what the server lets through either way.
"""

import os
import secrets

from bench.attacks._common import django_ready

_running: dict[int, object] = {}


def market_port() -> int:
    return int(os.environ.get("ATTACK_MARKET_PORT", "8899"))


def standin():
    """The stand-in on the attack's port, started once per process (every attack adds its own submissions)."""
    django_ready()
    from tests.markets.standin import MarketStandIn

    port = market_port()
    if port not in _running:
        _running[port] = MarketStandIn().start(port)
    return _running[port]


def connected_study(slug: str):
    """Connect the study `slug` to the stand-in's Prolific study; returns the stand-in."""
    django_ready()
    from crowd.models import Study
    from markets import connections

    market = standin()
    connections.save_connection(
        Study.objects.get(slug=slug),
        market="prolific",
        market_study_id=market.study_id,
        token=market.prolific_token,
        webhook_secret=secrets.token_urlsafe(16),
    )
    return market


def submission_id() -> str:
    """A fresh Prolific-looking submission id (24 hex digits)."""
    return secrets.token_hex(12)
