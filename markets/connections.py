"""A study's connection to its market: saving it (credentials sealed), its client, its check.

Every other markets module reaches the market through `client_for`, whose calls are all kept
(`MarketCall`, data, never code).
"""

import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit import services as audit
from crowd.models import Study

from .clients import CallRecord, MarketError
from .clients.mturk import MTurkClient
from .clients.prolific import ProlificClient
from .models import ConnectedMarket, MarketCall, MarketConnection
from .sealing import SealingUnavailable, seal, seal_text, unseal, unseal_text

# Prolific's bulk calls (approvals, bonuses) take at most this many participants in one request.
PROLIFIC_BULK_MAX = 200


class ConnectionRefused(ValueError):
    """A connection could not be saved; the message says which field and why."""


def _now() -> datetime:
    return timezone.now()


def connection_of(study: Study) -> MarketConnection | None:
    """The study's market connection, or None: the one read with the study where it was selected
    with it (`select_related("market_connection")`, the study page's), else one statement whose
    answer the study keeps, so the page's regions that show it read it once."""
    try:
        return study.market_connection
    except MarketConnection.DoesNotExist:
        return None


def connected(study: Study) -> MarketConnection:
    """The study's connection, which an action on the market needs."""
    if (connection := connection_of(study)) is None:
        raise ConnectionRefused("This study has no market connection.")
    return connection


# --- the connection --------------------------------------------------------------------------


def save_connection(
    study: Study,
    *,
    market: str,
    market_study_id: str = "",
    hit_type_id: str = "",
    mturk_live: bool = False,
    token: str = "",
    access_key_id: str = "",
    secret_access_key: str = "",
    webhook_secret: str = "",
    approve_automatically: bool = False,
    qualified_list_id: str = "",
    excluded_list_id: str = "",
    by: Any = None,
) -> MarketConnection:
    """Create or change the study's connection. Blank credentials keep the stored ones; the
    credentials are sealed (markets.sealing) before they reach the database."""
    if market not in ConnectedMarket.values:
        raise ConnectionRefused("Choose Prolific or Mechanical Turk.")
    existing = connection_of(study)
    old = _stored_credentials(existing.sealed_credentials) if existing and existing.market == market else {}
    if market == ConnectedMarket.PROLIFIC:
        credentials = {"token": token.strip() or old.get("token", "")}
        if not credentials["token"]:
            raise ConnectionRefused("Prolific needs an API token (Prolific: Workspace settings → API tokens).")
        if not market_study_id.strip():
            raise ConnectionRefused("Prolific needs the study's id (the STUDY_ID in the study's URL on Prolific).")
    else:
        credentials = {
            "access_key_id": access_key_id.strip() or old.get("access_key_id", ""),
            "secret_access_key": secret_access_key.strip() or old.get("secret_access_key", ""),
        }
        if not (credentials["access_key_id"] and credentials["secret_access_key"]):
            raise ConnectionRefused("MTurk needs an AWS access key id and its secret access key.")
        if not hit_type_id.strip():
            raise ConnectionRefused("MTurk needs the HIT type id the study's HITs share.")
    try:
        sealed = seal(credentials)
        # A blank secret keeps the stored one, sealed again under the first key: saving each
        # connection is how a key is rotated, so nothing may stay sealed under the old key only.
        kept_secret = _stored_secret(existing.sealed_webhook_secret) if existing else ""
        sealed_secret = seal_text(webhook_secret.strip() or kept_secret)
    except SealingUnavailable as error:
        raise ConnectionRefused(str(error)) from error
    connection = existing or MarketConnection(study=study, webhook_key=secrets.token_urlsafe(24))
    connection.market = market
    connection.market_study_id = market_study_id.strip()
    connection.hit_type_id = hit_type_id.strip()
    connection.mturk_live = mturk_live
    connection.sealed_credentials = sealed
    connection.sealed_webhook_secret = sealed_secret
    connection.approve_automatically = approve_automatically
    connection.qualified_list_id = qualified_list_id.strip()
    connection.excluded_list_id = excluded_list_id.strip()
    if problems := connection.id_problems():
        raise ConnectionRefused(" ".join(problems.values()))
    with transaction.atomic():
        connection.save()
        audit.record(
            "market.connection_saved",
            actor=by,
            subject=connection,
            team_id=study.team_id,
            after={
                "market": market,
                "market_study_id": connection.market_study_id,
                "hit_type_id": connection.hit_type_id,
            },
        )
    return connection


def _stored_credentials(sealed: str) -> dict[str, Any]:
    """The stored credentials, or none when no key opens them any more (the key was lost): the form
    must then give them again, and the checks of save_connection say which are missing."""
    try:
        return unseal(sealed)
    except SealingUnavailable:
        return {}


def _stored_secret(sealed: str) -> str:
    try:
        return unseal_text(sealed)
    except SealingUnavailable:
        return ""


def _recorder(
    connection: MarketConnection, by: Any = None, calls: list[MarketCall] | None = None
) -> Callable[[CallRecord], None]:
    def record(entry: CallRecord) -> None:
        call = MarketCall.objects.create(
            connection=connection,
            action=entry.action,
            request_summary=entry.request_summary,
            status_code=entry.status_code,
            answer=entry.answer,
            ok=entry.ok,
            error=entry.error[:300],
            duration_ms=entry.duration_ms,
            made_by=by if getattr(by, "pk", None) else None,
        )
        if calls is not None:
            calls.append(call)

    return record


def client_for(
    connection: MarketConnection,
    by: Any = None,
    calls: list[MarketCall] | None = None,
    *,
    timeout: float | None = None,
    patient: bool = True,
) -> ProlificClient | MTurkClient:
    """The connection's market client; `timeout` and `patient` (Prolific's): a participant waits on it."""
    credentials = unseal(connection.sealed_credentials)
    record = _recorder(connection, by, calls)
    if connection.market == ConnectedMarket.PROLIFIC:
        return ProlificClient(credentials.get("token", ""), record=record, timeout=timeout, patient=patient)
    return MTurkClient(
        credentials.get("access_key_id", ""),
        credentials.get("secret_access_key", ""),
        live=connection.mturk_live,
        record=record,
    )


def test_connection(connection: MarketConnection, by: Any = None) -> tuple[bool, str]:
    """Ask the market who the credentials belong to and whether it knows the study: (ok, one line)."""
    try:
        client = client_for(connection, by)
        if isinstance(client, ProlificClient):
            user = client.me()
            study = client.study(connection.market_study_id)
            line = (
                f"Connected to Prolific as {user.get('email') or user.get('id') or 'this token'}: study "
                f"“{study.get('name', connection.market_study_id)}” ({study.get('status', 'status unknown')})."
            )
        else:
            balance = client.balance()
            where = "live marketplace" if connection.mturk_live else "sandbox"
            line = f"Connected to the MTurk {where}: balance {balance.get('AvailableBalance', '?')} USD."
        ok = True
    except (MarketError, SealingUnavailable) as error:
        ok, line = False, str(error)
    connection.last_check_ok, connection.last_check = ok, line[:300]
    connection.last_checked_at = _now()
    connection.save(update_fields=["last_check_ok", "last_check", "last_checked_at", "updated_at"])
    return ok, line


def refused_outright(error: MarketError) -> bool:
    """A 4xx other than the rate limit: the market did nothing. A time-out, no connection or the
    market's own error (5xx) may hide a payment made."""
    return error.status is not None and 400 <= error.status < 500 and error.status != 429
