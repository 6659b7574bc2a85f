"""Attack: Prolific's webhook endpoint taken at its word: a replay with a "different" signature, a
timestamp no clock can hold, a body too large to read.

Whoever captured one signed webhook (a proxy log, a shared debugging paste) holds a body, a
timestamp and a signature. Per try, on a study connected to Prolific with a webhook secret:

  "replay, NBSP"       a webhook answered once, sent again with U+00A0 (no-break space) after its
                       signature: the same signature to a check that strips the header, a new one
                       to the replay guard that remembers what it was sent;
  "replay, NEL"        the same with U+0085 (next line), which Python's str.strip() removes too;
  "timestamp 1e20"     a fresh body signed with the real secret over the timestamp 10**20 (the
                       market's secret is not needed for the next two: they aim at the server);
  "10 MB body"         a 10 MiB body announced in Content-Length; the attack sends the request
                       head and waits for the answer before sending any of the body: a server that
                       refuses it before reading answers at once, one that reads it first waits.

A try succeeds when the replay is acted on (200), when the server fails (5xx), or when the large
body is read (no answer until it is sent) or answered with anything but 413. With
ATTACK_SERVER_LOG naming the server's log file, the tracebacks it gained during the attack are
counted as well (a 10 MB body must not log one).

Setup runs Django against the server's database (the server's environment: DATABASE_URL,
SECRET_KEY, MARKET_CREDENTIALS_KEY, ...): a study and its Prolific connection with a secret.

    DATABASE_URL=... MARKET_CREDENTIALS_KEY=... SECRET_KEY=... \
        .venv/bin/python -m bench.attacks.webhook_forgery --base-url http://127.0.0.1:8810
"""

import argparse
import contextlib
import json
import os
import secrets
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from bench.attacks._common import django_ready, wilson_interval

NAME = "webhook-forgery"
CLAIM = "A market webhook is replayed under a look-alike signature, crashes the server, or makes it read a huge body."
VARIANTS = ("replay, NBSP", "replay, NEL", "timestamp 1e20", "10 MB body")
LARGE_BODY = 10 * 1024 * 1024
# How long the large-body try waits for an answer before it sends the body: a server that refuses
# before reading answers within milliseconds; one that reads first never answers until sent.
ANSWER_WAIT_SECONDS = 5.0


def setup(seed: int) -> dict[str, str]:
    """A study with a Prolific connection and a webhook secret; returns its hook path and secret."""
    django_ready()
    from crowd.models import Study, TaskKind
    from markets import connections
    from tests.validation.validation_factories import make_dataset

    tag = f"{seed}-{secrets.token_hex(4)}"
    study = Study.objects.create(
        slug=f"webhook-attack-{tag}",
        name="A study on Prolific",
        dataset=make_dataset(f"webhook-attack-{tag}"),
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=1,
        completion_code="DONE",
    )
    secret = secrets.token_urlsafe(24)
    connection = connections.save_connection(
        study, market="prolific", market_study_id=secrets.token_hex(12), token="not-used", webhook_secret=secret
    )
    return {"path": f"/markets/hooks/prolific/{connection.webhook_key}/", "secret": secret}


def sign(secret: str, timestamp: str, body: bytes) -> str:
    from markets.events import prolific_signature

    return prolific_signature(secret, timestamp, body)


def post(base_url: str, path: str, body: bytes, timestamp: str, signature: str) -> int:
    """POST a webhook; the HTTP status. Header values go as Latin-1 bytes, as a market's client sends them."""
    request = urllib.request.Request(
        base_url.rstrip("/") + path,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-Prolific-Request-Timestamp": timestamp,
            "X-Prolific-Request-Signature": signature,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def event(index: int) -> bytes:
    return json.dumps(
        {"event_type": "study.status.change", "resource_id": f"attack-{index}", "status": "ACTIVE"}
    ).encode()


def large_body_answered_before_sent(base_url: str, path: str) -> tuple[int | None, bool]:
    """(status, answered before the body was sent) for a 10 MiB webhook, over a raw socket."""
    url = urllib.parse.urlsplit(base_url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"X-Prolific-Request-Timestamp: {int(time.time())}\r\nX-Prolific-Request-Signature: x\r\n"
        f"Content-Length: {LARGE_BODY}\r\nConnection: close\r\n\r\n"
    ).encode("latin-1")
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall(head)
        sock.settimeout(ANSWER_WAIT_SECONDS)
        early = b""
        with contextlib.suppress(TimeoutError):  # no answer yet: the server waits for the body
            early = sock.recv(65536)
        if early:
            return _status(early), True
        sock.settimeout(60)
        try:
            sock.sendall(b"{" + b" " * (LARGE_BODY - 2) + b"}")
            answer = sock.recv(65536)
        except OSError:
            return None, False
        return _status(answer), False


def _status(answer: bytes) -> int | None:
    parts = answer.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def tracebacks_in(log: Path | None) -> int:
    if log is None or not log.exists():
        return 0
    return log.read_bytes().count(b"Traceback (most recent call last)")


def run(base_url: str, *, seed: int = 0, tries: int = 3) -> dict:
    known = setup(seed)
    path, secret = known["path"], known["secret"]
    log_name = os.environ.get("ATTACK_SERVER_LOG")
    log = Path(log_name) if log_name else None
    tracebacks_before = tracebacks_in(log)
    succeeded, n, notes = 0, 0, []
    seen: dict[str, list[str]] = {variant: [] for variant in VARIANTS}
    for index in range(tries):
        for variant in VARIANTS:
            n += 1
            body = event(index * len(VARIANTS) + VARIANTS.index(variant))
            if variant.startswith("replay"):
                timestamp = str(int(time.time()))
                signature = sign(secret, timestamp, body)
                first = post(base_url, path, body, timestamp, signature)
                suffix = "\u00a0" if variant.endswith("NBSP") else "\u0085"
                again = post(base_url, path, body, timestamp, signature + suffix)
                seen[variant].append(f"{first}->{again}")
                succeeded += again == 200
            elif variant == "timestamp 1e20":
                timestamp = str(10**20)
                answer = post(base_url, path, body, timestamp, sign(secret, timestamp, body))
                seen[variant].append(str(answer))
                succeeded += answer >= 500
            else:
                large, early = large_body_answered_before_sent(base_url, path)
                seen[variant].append(f"{large}{'' if early else ' after reading'}")
                succeeded += not early or large != 413
    for variant, answers in seen.items():
        notes.append(f"{variant}: {', '.join(answers)}")
    if log is not None:
        notes.append(f"tracebacks logged: {tracebacks_in(log) - tracebacks_before}")
    return {
        "attack": NAME,
        "tries": n,
        "succeeded": succeeded,
        "measure": "share of tries replayed, answered 5xx, or whose large body was read",
        "value": round(succeeded / n, 4),
        "interval": wilson_interval(succeeded, n),
        "at_chance_or_refused": succeeded == 0,
        "detail": "; ".join(notes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tries", type=int, default=3, help="tries per variant")
    args = parser.parse_args()
    print(json.dumps(run(args.base_url, seed=args.seed, tries=args.tries), indent=2))


if __name__ == "__main__":
    main()
