"""The node's side of a training run, whatever carries its reports home.

One code path for both deployments: a `RunReporter` says where the run comes from and where its
progress, result, failure and checkpoint go (services.DatabaseReporter: the ORM, for the embedded
mode and single-host Celery workers; remote.HttpReporter: the node API, for a GPU node).

Plain Python (no Django): `execute_attempt` imports torch only when it trains.
"""

import logging
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modeling.snapshots.format import SnapshotError

logger = logging.getLogger(__name__)


class RunAbandoned(Exception):
    """The run is no longer this attempt's (reaped, or taken over by another lease): stop at once."""


@dataclass
class RunSpec:
    """What an attempt needs to train a run, as the lease handed it out."""

    run_id: int
    attempt: str
    lease_id: str
    model: str
    config: dict[str, Any]
    snapshot_id: int
    snapshot_hash: str
    restarts: int = 0
    # The snapshot's folder on this machine when the platform shares its disk (embedded, single host).
    snapshot_directory: str = ""
    # Where the snapshot came from on this node: {"source": "cache" | "download", "bytes_downloaded", "seconds"}.
    snapshot_source: dict[str, Any] = field(default_factory=dict)


class RunReporter:
    """Where a run comes from and where its reports go; see DatabaseReporter and HttpReporter."""

    def lease(self, run_id: int, hostname: str, attempt: str | None) -> RunSpec | None:
        """A RunSpec, or None when there is nothing (more) to do for this attempt."""
        raise NotImplementedError

    def snapshot_folder(self, spec: RunSpec) -> str | Path:
        """A folder on this machine holding the run's snapshot, verified against its manifest."""
        raise NotImplementedError

    def progress(self, spec: RunSpec, fields: Mapping[str, Any]) -> bool:
        """Write a heartbeat; False when the run is no longer this attempt's."""
        raise NotImplementedError

    def save_checkpoint(self, spec: RunSpec, path: str | Path) -> bool:
        """Send the finished checkpoint home; False when the run is no longer this attempt's."""
        raise NotImplementedError

    def finish(self, spec: RunSpec, results: dict[str, Any]) -> bool:
        raise NotImplementedError

    def fail(self, spec: RunSpec, error: object) -> bool:
        raise NotImplementedError

    def snapshot_rejected(self, spec: RunSpec) -> None:
        """The snapshot folder failed verification: forget any local copy of it."""

    def status(self, run_id: int) -> str | None:
        """The run's status as the platform sees it (for the task's return value)."""
        raise NotImplementedError


class Heartbeat:
    """Reports a run's progress at most every `interval` seconds (always at the start, per epoch, at evaluation);
    RunAbandoned when the run is no longer this attempt's, so two nodes never write one run."""

    def __init__(self, reporter: RunReporter, spec: RunSpec, interval: float, bar: Any = None) -> None:
        self.reporter = reporter
        self.spec = spec
        self.interval = interval
        self.bar = bar
        self.last = 0.0

    def __call__(self, event: Mapping[str, Any]) -> None:
        if self.bar is not None:
            self.bar.total = event["total_steps"] or None
            self.bar.set_postfix(epoch=event["epoch"], loss=event["loss"], dev=event["dev_accuracy"], refresh=False)
            self.bar.update(event["step"] - self.bar.n)  # redraws at most every mininterval
        now = time.monotonic()
        if event["kind"] == "step" and now - self.last < self.interval:
            return
        self.last = now
        fields = {key: event[key] for key in ("epoch", "total_epochs", "step", "total_steps", "loss", "dev_accuracy")}
        fields.update(history=list(event["history"]), device=event["device"][:100])
        if not self.reporter.progress(self.spec, fields):
            raise RunAbandoned(f"run {self.spec.run_id} is no longer running under this attempt")


def execute_attempt(
    reporter: RunReporter,
    run_id: int,
    hostname: str,
    attempt: str | None,
    heartbeat_seconds: float,
    bar: Any = None,  # a tqdm bar (tqdm has no type hints), or None
    work_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Lease the run, get its snapshot, train, evaluate, send the checkpoint and the results home.

    Returns {"run": id, "status": ...}. Every failure ends on the run (reporter.fail), never only
    in a log; a run taken over or reaped meanwhile is left to its new holder.
    """
    spec = reporter.lease(run_id, hostname, attempt)
    if spec is None:
        return {"run": run_id, "status": reporter.status(run_id)}
    with tempfile.TemporaryDirectory(prefix=f"run-{run_id}-", dir=_existing(work_dir)) as scratch:
        checkpoint = Path(scratch) / f"run-{run_id}.safetensors"
        try:
            folder = reporter.snapshot_folder(spec)
            # torch loads here, on the node, never in the web process.
            from .data import load_snapshot
            from .loop import train

            # A snapshot downloaded just now was verified file by file as it came in (snapshot_cache);
            # hashing half a gigabyte twice would add seconds and check nothing more.
            data = load_snapshot(
                folder, expected_hash=spec.snapshot_hash, verify=not spec.snapshot_source.get("verified")
            )
            results, _ = train(
                data,
                spec.model,
                spec.config,
                on_progress=Heartbeat(reporter, spec, heartbeat_seconds, bar=bar),
                checkpoint_path=checkpoint,
            )
            results = _with_source(dict(results, restarts=spec.restarts), spec)
            if not reporter.save_checkpoint(spec, checkpoint):
                raise RunAbandoned(f"run {run_id} is no longer running under this attempt")
        except SnapshotError as exc:
            logger.error("training run %s: %s", run_id, exc)
            reporter.snapshot_rejected(spec)
            reporter.fail(spec, f"{type(exc).__name__}: {exc}"[:5000])
            return {"run": run_id, "status": "failed"}
        except RunAbandoned as exc:
            logger.warning("%s", exc)
            return {"run": run_id, "status": "abandoned"}
        except Exception as exc:
            logger.exception("training run %s failed", run_id)
            reporter.fail(spec, f"{type(exc).__name__}: {exc}"[:5000])
            return {"run": run_id, "status": "failed"}
    if not reporter.finish(spec, results):
        return {"run": run_id, "status": "abandoned"}
    return {"run": run_id, "status": "done"}


class _PackMember:
    """One packed run's heartbeat: a run taken from this attempt (reaped, cancelled, taken over) is
    noted and left to its new holder while the rest of the pack trains on; the pack does not stop
    for it, and its results are never sent."""

    def __init__(self, heartbeat: Heartbeat, abandoned: set[int]) -> None:
        self.heartbeat = heartbeat
        self.abandoned = abandoned

    def __call__(self, event: Mapping[str, Any]) -> None:
        run_id = self.heartbeat.spec.run_id
        if run_id in self.abandoned:
            return
        try:
            self.heartbeat(event)
        except RunAbandoned as exc:
            logger.warning("%s", exc)
            self.abandoned.add(run_id)


def execute_packed_attempts(
    reporter: RunReporter,
    run_ids: list[int],
    hostname: str,
    attempt: str | None,
    heartbeat_seconds: float,
    bars: list[Any] | None = None,
    work_dir: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Lease several runs of one model and shape and train them at once (packed.train_packed): each
    run keeps its own heartbeat, checkpoint, results and failure, as `execute_attempt` gives one run.

    One {"run", "status"} per run id, in order. A failure of the pack (a snapshot that fails its
    check, runs that cannot share a step) fails every run leased for it, with the reason.
    """
    outcomes: dict[int, dict[str, Any]] = {}
    specs: list[RunSpec] = []
    for run_id in run_ids:
        spec = reporter.lease(run_id, hostname, attempt)
        if spec is None:
            outcomes[run_id] = {"run": run_id, "status": reporter.status(run_id)}
        else:
            specs.append(spec)
    abandoned: set[int] = set()
    results: list[dict[str, Any]] | None = None
    error = ""
    with tempfile.TemporaryDirectory(prefix="pack-", dir=_existing(work_dir)) as scratch:
        checkpoints = [Path(scratch) / f"run-{spec.run_id}.safetensors" for spec in specs]
        try:
            if specs:
                results = _train_pack(reporter, specs, checkpoints, heartbeat_seconds, bars, abandoned)
        except SnapshotError as exc:
            logger.error("packed runs %s: %s", [spec.run_id for spec in specs], exc)
            for spec in specs:
                reporter.snapshot_rejected(spec)
            error = f"{type(exc).__name__}: {exc}"[:5000]
        except Exception as exc:
            logger.exception("packed runs %s failed", [spec.run_id for spec in specs])
            error = f"{type(exc).__name__}: {exc}"[:5000]
        for index, spec in enumerate(specs):
            if spec.run_id in abandoned:
                outcomes[spec.run_id] = {"run": spec.run_id, "status": "abandoned"}
            elif results is None:
                reporter.fail(spec, error)
                outcomes[spec.run_id] = {"run": spec.run_id, "status": "failed"}
            elif not reporter.save_checkpoint(spec, checkpoints[index]) or not reporter.finish(
                spec, _with_source(dict(results[index], restarts=spec.restarts), spec)
            ):
                outcomes[spec.run_id] = {"run": spec.run_id, "status": "abandoned"}
            else:
                outcomes[spec.run_id] = {"run": spec.run_id, "status": "done"}
    return [outcomes[run_id] for run_id in run_ids]


def _with_source(results: dict[str, Any], spec: RunSpec) -> dict[str, Any]:
    """A run's results naming where its snapshot came from, as a lone run's do."""
    if spec.snapshot_source:
        results["snapshot_source"] = spec.snapshot_source
    return results


def _train_pack(
    reporter: RunReporter,
    specs: list[RunSpec],
    checkpoints: list[Path],
    heartbeat_seconds: float,
    bars: list[Any] | None,
    abandoned: set[int],
) -> list[dict[str, Any]]:
    from .data import load_snapshot
    from .packed import train_packed

    models = sorted({spec.model for spec in specs})
    if len(models) > 1:
        raise ValueError(f"packed runs train one model; these are {', '.join(models)}")
    loaded: dict[str, Any] = {}  # one load per snapshot: the genre matrix's runs share theirs
    sources: dict[str, dict[str, Any]] = {}
    for spec in specs:
        if spec.snapshot_hash not in loaded:
            folder = reporter.snapshot_folder(spec)
            loaded[spec.snapshot_hash] = load_snapshot(
                folder, expected_hash=spec.snapshot_hash, verify=not spec.snapshot_source.get("verified")
            )
            sources[spec.snapshot_hash] = spec.snapshot_source
        else:
            spec.snapshot_source = sources[spec.snapshot_hash]  # each run's results say where its data came from
    heartbeats = [
        _PackMember(Heartbeat(reporter, spec, heartbeat_seconds, bar=bars[index] if bars else None), abandoned)
        for index, spec in enumerate(specs)
    ]
    return train_packed(
        [loaded[spec.snapshot_hash] for spec in specs],
        models[0],
        [spec.config for spec in specs],
        on_progress=heartbeats,
        checkpoint_paths=checkpoints,
    )


def _existing(folder: str | Path | None) -> str | None:
    if folder is None:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return str(folder)
