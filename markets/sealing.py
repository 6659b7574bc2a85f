"""Credentials sealed with Fernet (the `cryptography` package) under keys from the environment.

MARKET_CREDENTIALS_KEY holds one or more Fernet keys, comma-separated: the first seals, every one
opens (MultiFernet), so a key is rotated by putting the new one first. The database only ever
holds the tokens; without the key they are noise.
"""

import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SealingUnavailable(RuntimeError):
    """No usable key in MARKET_CREDENTIALS_KEY; the message says what to set."""


def _keys() -> MultiFernet:
    raw = [key.strip() for key in (settings.MARKET_CREDENTIALS_KEY or "").split(",") if key.strip()]
    if not raw:
        raise SealingUnavailable(
            "MARKET_CREDENTIALS_KEY is not set: the server cannot keep market credentials. Set it to a Fernet key "
            "(python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')."
        )
    try:
        return MultiFernet([Fernet(key) for key in raw])
    except ValueError as error:
        raise SealingUnavailable(f"MARKET_CREDENTIALS_KEY is not a Fernet key ({error}).") from error


def seal(values: dict[str, Any]) -> str:
    return _keys().encrypt(json.dumps(values, sort_keys=True).encode()).decode()


def unseal(token: str) -> dict[str, Any]:
    if not token:
        return {}
    try:
        opened = json.loads(_keys().decrypt(token.encode()))
    except InvalidToken as error:
        raise SealingUnavailable(
            "The stored credentials cannot be opened with MARKET_CREDENTIALS_KEY (was the key changed?); "
            "enter them again."
        ) from error
    return opened if isinstance(opened, dict) else {}


def seal_text(text: str) -> str:
    return seal({"value": text}) if text else ""


def unseal_text(token: str) -> str:
    return str(unseal(token).get("value", ""))
