"""Per-session completion codes and signed study links (pure functions, no database).

A completion code is the study's own code followed by an HMAC of the study and session ids under
the study's secret, so a code shared between participants matches one session only, and the
researcher can verify any code offline. A signed study link carries an HMAC of the study's slug.
"""

import base64
import hashlib
import hmac
import secrets

# 10 base32 characters = 50 bits: guessing the code of a given session is out of reach.
CODE_DIGEST_CHARS = 10


def new_study_secret() -> str:
    return secrets.token_hex(32)


def _mac(secret: str, message: str) -> str:
    digest = hmac.new(secret.encode(), message.encode(), hashlib.sha256).digest()
    return base64.b32encode(digest).decode()


def completion_code(study_code: str, secret: str, study_id: int, session_id: int) -> str:
    suffix = _mac(secret, f"completion:{study_id}:{session_id}")[:CODE_DIGEST_CHARS]
    return f"{study_code}-{suffix}" if study_code else suffix


def link_signature(secret: str, slug: str) -> str:
    return _mac(secret, f"link:{slug}")[:16].lower()


def verify_link_signature(signature: str | None, secret: str, slug: str) -> bool:
    given = (signature or "").lower().encode("utf-8", "surrogatepass")
    # compare_digest takes str only when it is ASCII (a TypeError, i.e. a 500, on `sig=é`): bytes.
    return hmac.compare_digest(given, link_signature(secret, slug).encode())
