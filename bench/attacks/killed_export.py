"""Attack: kill -9 the Celery worker in the middle of a snapshot export and see how long the
snapshot stays `running`.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> \\
        .venv/bin/python bench/attacks/killed_export.py --base-url http://127.0.0.1:8850 \\
        --worker-pid <pid of the `celery -A annotation_site worker ... -B` main process> --max-minutes 10

What it does, over HTTP only (the REST API, as a researcher's script would):
1. Setup (Django, against the server's own database, so DATABASE_URL must name it): a researcher
   `attack-killed-export` with an API token (`setup_researcher_token`). Pass `--token` to skip it.
2. POST /api/snapshots/ (every dataset), then GET it every 20 ms until it reads `running`.
3. SIGKILL to the worker's whole process group (main process, pool children and an embedded
   beat `-B` die at once: no signal handler runs). The worker is the one named by `--worker-pid`
   (or KILLED_EXPORT_WORKER_PID), or, only when asked with `--worker-pattern`, every process whose
   command line contains that text (e.g. "celery -A annotation_site worker"): give a pattern
   that matches your worker only.
4. Restarts it as it was: the same command line, folder and environment, read from /proc before
   the kill (or `--restart-command`, run by the shell).
5. Reads the snapshot every second until it leaves `running`, for at most `--max-minutes`.

The figure is the minutes from the kill until the snapshot left `running` (the cap when it never
did). The attack "succeeds" when the snapshot is still `running` at the cap, or left it by neither
finishing nor failing with a message. The corpus must be large enough that the export takes a
few seconds (bench/export.py generates one); a snapshot already done when the kill comes is
reported as such and counts as no try.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

NAME = "killed_export"
CLAIM = "A Celery worker killed (SIGKILL) during a snapshot export leaves the snapshot `running` for hours."

REPO = Path(__file__).resolve().parent.parent.parent
USERNAME = "attack-killed-export"
# What the platform promises (docs/architecture.md, "Long tasks"): a lost export is retried or failed
# within minutes. Beyond this, the attack counts as succeeded even if the snapshot left `running`.
PROMISED_MINUTES = 10.0


def setup_researcher_token() -> str:
    """A researcher with an API token in the server's database (DATABASE_URL); returns the token."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    import django

    django.setup()
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from base.permissions import ensure_researcher_group

    user, _ = User.objects.get_or_create(username=USERNAME, defaults={"is_staff": True, "is_superuser": True})
    user.groups.add(ensure_researcher_group())
    token, _ = Token.objects.get_or_create(user=user)
    return token.key


def _api(base_url: str, token: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        base_url.rstrip("/") + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _process_of(pid: int) -> dict:
    """What it takes to start the process again: its command line, folder and environment."""
    proc = Path(f"/proc/{pid}")
    argv = [part.decode() for part in (proc / "cmdline").read_bytes().split(b"\0") if part]
    environ = dict(part.decode().split("=", 1) for part in (proc / "environ").read_bytes().split(b"\0") if b"=" in part)
    return {"argv": argv, "cwd": os.readlink(proc / "cwd"), "env": environ}


def _pids_matching(pattern: str) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        pid = int(cmdline.parent.name)
        if pattern in text and pid != os.getpid():
            pids.append(pid)
    return pids


def _kill(pid: int) -> None:
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def run(
    base_url: str,
    *,
    seed: int = 0,
    token: str | None = None,
    worker_pid: int | None = None,
    worker_pattern: str | None = None,
    restart_command: str | None = None,
    max_minutes: float = PROMISED_MINUTES,
    log_path: str = "/tmp/killed-export-restarted-worker.log",
) -> dict:
    worker_pid = worker_pid or (
        int(os.environ["KILLED_EXPORT_WORKER_PID"]) if os.environ.get("KILLED_EXPORT_WORKER_PID") else None
    )
    result = {
        "attack": NAME,
        "tries": 0,
        "succeeded": 0,
        "measure": "minutes a snapshot stays running after its worker is killed",
        "value": 0.0,
        "interval": None,
        "at_chance_or_refused": True,
        "detail": "",
    }
    if worker_pid is None and not worker_pattern:
        result["detail"] = "no worker named (--worker-pid or --worker-pattern): nothing was tried"
        return result
    pids = [worker_pid] if worker_pid else _pids_matching(worker_pattern or "")
    if not pids:
        result["detail"] = f"no process matches {worker_pattern!r}"
        return result
    restart = _process_of(pids[0])
    token = token or setup_researcher_token()

    snapshot = _api(base_url, token, "/api/snapshots/", {"datasets": []})
    sid = snapshot["id"]
    deadline = time.monotonic() + 120
    while snapshot["status"] == "pending" and time.monotonic() < deadline:
        time.sleep(0.02)
        snapshot = _api(base_url, token, f"/api/snapshots/{sid}/")
    if snapshot["status"] != "running":
        result["detail"] = f"snapshot {sid} was {snapshot['status']} before the kill (corpus too small, or no worker)"
        return result
    for pid in pids:
        _kill(pid)
    killed_at = time.monotonic()
    at_kill = _api(base_url, token, f"/api/snapshots/{sid}/")
    time.sleep(1)
    log = open(log_path, "w")  # noqa: SIM115 - the restarted worker keeps it
    if restart_command:
        subprocess.Popen(restart_command, shell=True, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    else:
        subprocess.Popen(
            restart["argv"],
            cwd=restart["cwd"],
            env=restart["env"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    result["tries"] = 1
    while True:
        snapshot = _api(base_url, token, f"/api/snapshots/{sid}/")
        minutes = (time.monotonic() - killed_at) / 60
        if snapshot["status"] not in ("running", "pending") or minutes >= max_minutes:
            break
        time.sleep(1)
    left = snapshot["status"] in ("done", "failed") and (snapshot["status"] == "done" or snapshot["error"])
    result["value"] = round(minutes, 2)
    result["succeeded"] = int(not left or minutes > PROMISED_MINUTES)
    result["at_chance_or_refused"] = not result["succeeded"]
    result["detail"] = (
        f"snapshot {sid} was running at {at_kill['progress']:.0%} when its worker was killed; "
        f"{minutes:.2f} min later it was {snapshot['status']}"
        + (f" ({snapshot['error'][:160]})" if snapshot.get("error") else "")
        + (f"; restarts: {snapshot['restarts']}" if "restarts" in snapshot else "")
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--token", help="a researcher's API token (default: made in DATABASE_URL's database)")
    parser.add_argument("--worker-pid", type=int, help="the Celery worker's main process")
    parser.add_argument("--worker-pattern", help="kill every process whose command line contains this")
    parser.add_argument("--restart-command", help="how to start the worker again (default: as it was)")
    parser.add_argument("--max-minutes", type=float, default=PROMISED_MINUTES)
    args = parser.parse_args()
    print(
        json.dumps(
            run(
                args.base_url,
                seed=args.seed,
                token=args.token,
                worker_pid=args.worker_pid,
                worker_pattern=args.worker_pattern,
                restart_command=args.restart_command,
                max_minutes=args.max_minutes,
            ),
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
