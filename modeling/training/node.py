"""Start a training node's Celery workers: one per GPU, each running TRAINING_RUNS_PER_NODE runs at once.

    python -m modeling.training.node [--dry-run] [extra celery worker options]

A run is one process of a Celery worker's prefork pool (prefetch 1, acks_late), so runs on a node
never share an interpreter, a CUDA context or a torch thread pool. Each GPU gets a Celery worker
named gpu<N>@host that sees only it; with one GPU or none the worker is gpu@host. Settings
(TRAINING_RUNS_PER_NODE, TRAINING_GPUS): docs/gpu-nodes.md. Plain Python, no Django and no torch.
"""

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from types import FrameType

DEFAULT_RUNS = 1
MAX_RUNS = 64


class NodeConfigError(ValueError):
    pass


def runs_per_node(environ: Mapping[str, str] = os.environ) -> int:
    value = environ.get("TRAINING_RUNS_PER_NODE", "") or str(DEFAULT_RUNS)
    try:
        runs = int(value)
    except ValueError:
        raise NodeConfigError(f"TRAINING_RUNS_PER_NODE must be a whole number, got {value!r}") from None
    if not 1 <= runs <= MAX_RUNS:
        raise NodeConfigError(f"TRAINING_RUNS_PER_NODE must be from 1 to {MAX_RUNS}, got {runs}")
    return runs


def _gpu_list(value: str, source: str) -> list[str]:
    gpus = [part.strip() for part in value.split(",") if part.strip()]
    for gpu in gpus:
        if not (gpu.isdigit() or gpu.startswith(("GPU-", "MIG-"))):
            raise NodeConfigError(f"{source} must list GPU indices or UUIDs separated by commas, got {value!r}")
    return gpus


def detect_gpus(environ: Mapping[str, str] = os.environ, nvidia_smi: str | None = None) -> list[str]:
    """The GPUs this node gives its Celery workers: TRAINING_GPUS, else CUDA_VISIBLE_DEVICES, else nvidia-smi's list."""
    chosen = environ.get("TRAINING_GPUS", "").strip()
    if chosen.lower() == "none":
        return []
    if chosen:
        return _gpu_list(chosen, "TRAINING_GPUS")
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return _gpu_list(visible, "CUDA_VISIBLE_DEVICES") if visible.strip() not in ("", "-1") else []
    if nvidia_smi is None:
        nvidia_smi = shutil.which("nvidia-smi")
    if not nvidia_smi:
        return []
    try:
        listing = subprocess.run([nvidia_smi, "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(line for line in listing.splitlines() if line.startswith("GPU "))]


def celery_worker_commands(
    runs: int,
    gpus: Sequence[str],
    extra_args: Sequence[str] = (),
    celery: str = "celery",
    environ: Mapping[str, str] = os.environ,
    cpus: int | None = None,
) -> list[tuple[list[str], dict[str, str]]]:
    """[(argv, env)]: one `celery worker` on the gpu queue per GPU (or one without a GPU).

    Each run gets an equal share of the node's CPU cores as torch threads (OMP_NUM_THREADS, unless
    the operator set it): N runs with torch's default of every core each would spin against each other.
    """
    base = [celery, "-A", "annotation_site", "worker", "-Q", "gpu", "--pool", "prefork"]
    base += ["--concurrency", str(runs), "--prefetch-multiplier", "1", "-l", "info"]
    cpus = cpus or os.cpu_count() or 1
    threads = str(max(1, cpus // (runs * max(1, len(gpus)))))
    if len(gpus) <= 1:
        env = {"OMP_NUM_THREADS": threads, **environ}
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = gpus[0]
        return [([*base, "-n", "gpu@%h", *extra_args], env)]
    return [
        (
            [*base, "-n", f"gpu{gpu}@%h", *extra_args],
            {"OMP_NUM_THREADS": threads, **environ, "CUDA_VISIBLE_DEVICES": gpu},
        )
        for gpu in gpus  # each Celery worker sees one GPU, as cuda:0
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    dry_run = "--dry-run" in args
    args = [a for a in args if a != "--dry-run"]
    try:
        commands = celery_worker_commands(runs_per_node(), detect_gpus(), args, celery=_celery())
    except NodeConfigError as error:
        print(f"training node: {error}", file=sys.stderr)
        return 2
    for command, env in commands:
        gpu = env.get("CUDA_VISIBLE_DEVICES", "")
        print(f"training node: CUDA_VISIBLE_DEVICES={gpu or '(all)'} {' '.join(command)}", flush=True)
    if dry_run:
        return 0
    if len(commands) == 1:
        command, env = commands[0]
        os.execvpe(command[0], command, env)  # the Celery worker itself takes the signals, as before
    return _supervise(commands)


def _celery() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "celery")
    return beside if os.path.exists(beside) else "celery"


def _supervise(commands: Sequence[tuple[list[str], dict[str, str]]]) -> int:
    """Run one Celery worker per GPU; pass signals on; when one ends, stop the others and end with its code."""
    children = [subprocess.Popen(command, env=env) for command, env in commands]

    def forward(signum: int, _frame: FrameType | None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        signal.signal(signum, forward)
    code = 0
    while True:
        pid, status = os.wait()
        ended = next((child for child in children if child.pid == pid), None)
        if ended is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        ended.returncode = code
        forward(signal.SIGTERM, None)  # a node is whole or down: the container's restart policy brings it back
        for child in children:
            if child is not ended:
                child.wait()
        return code


if __name__ == "__main__":
    sys.exit(main())
