"""Train a baseline on a snapshot: queued for a GPU node (the `gpu` queue), or here with a progress bar."""

import time
from typing import Any, TextIO

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from modeling.models import ModelKind, RunStatus, TrainingRun
from modeling.training.services import (
    LaunchRefused,
    execute_training_run,
    launch_training_run,
)


def refusal(refused: ValidationError) -> CommandError:
    """A LaunchRefused as the command's error, one field per clause."""
    options = {"snapshot": "--snapshot", "model": "--model", "config": "--config"}
    return CommandError(
        "; ".join(
            f"{options.get(field, field)}: {message}"
            for field, messages in refused.message_dict.items()
            for message in messages
        )
    )


def wait_for_runs(run_ids: list[int], poll: float = 1.0, stream: TextIO | None = None) -> list[TrainingRun]:
    """Follow queued runs in the database with one tqdm bar until all are done or failed."""
    with tqdm(total=None, unit="step", desc="training", file=stream) as bar:
        while True:
            runs = list(TrainingRun.objects.filter(pk__in=run_ids))
            bar.total = sum(r.total_steps for r in runs) or None
            bar.n = sum(r.step for r in runs)
            bar.set_postfix(status=",".join(sorted({r.status for r in runs})), refresh=False)
            bar.refresh()
            if all(r.status in (RunStatus.DONE, RunStatus.FAILED) for r in runs):
                return runs
            time.sleep(poll)


def run_in_process(run: TrainingRun, desc: str | None = None, bar_off_a_terminal: bool = True) -> TrainingRun:
    """Train `run` here with a progress bar; `bar_off_a_terminal=False` draws it only on a terminal
    (tqdm's disable=None): the demo's log, a file, read as hundreds of lines of bars."""
    with tqdm(
        total=run.total_steps or None,
        unit="step",
        desc=desc or f"run {run.pk} {run.model}",
        disable=False if bar_off_a_terminal else None,
    ) as bar:
        execute_training_run(run.pk, bar=bar)
        run.refresh_from_db()
        finish_bar(bar, run)
    return run


def finish_bar(bar: Any, run: TrainingRun) -> None:
    """A run stopped before its planned steps (early stopping, max_minutes) ends its bar at what
    really ran, as the run page reads, instead of stopping short of 100%."""
    stopped_by = (run.results or {}).get("stopped_by")
    if run.status == RunStatus.DONE and bar.total and bar.n < bar.total:
        bar.total = bar.n
        if stopped_by and stopped_by != "epochs":
            bar.set_postfix_str(f"stopped by {stopped_by}", refresh=False)
        bar.refresh()


def summary(run: TrainingRun) -> str:
    if run.status == RunStatus.FAILED:
        return f"run {run.pk}: failed: {run.error}"
    if run.status != RunStatus.DONE:
        return f"run {run.pk}: {run.status} (follow it at /api/training-runs/{run.pk}/)"
    accuracy = ", ".join(
        f"{split} {acc:.4f}" for split, acc in run.results.get("accuracy", {}).items() if acc is not None
    )
    return (
        f"run {run.pk}: done on {run.device} in {run.results.get('seconds', 0):.1f} s, "
        f"{run.results.get('epochs_run', 0)} epoch(s), best epoch {run.results.get('best_epoch')}; "
        f"train {run.results.get('train_accuracy')}; {accuracy}"
    )


class Command(BaseCommand):
    help = "Train a baseline (majority, cbow, bilstm, esim, hypothesis_only) on a done snapshot."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--snapshot", type=int, required=True)
        parser.add_argument("--model", required=True, choices=ModelKind.values)
        parser.add_argument("--config", default="{}", help='JSON, e.g. \'{"epochs": 3, "hidden_dim": 100}\'')
        parser.add_argument("--wait", action="store_true", help="follow the queued run until it ends")
        parser.add_argument("--in-process", action="store_true", help="train here instead of on a GPU node")

    def handle(
        self, *args: Any, snapshot: Any, model: Any, config: Any, wait: Any, in_process: Any, **options: Any
    ) -> None:
        try:
            run = launch_training_run(snapshot, model, config=config, enqueue=not in_process)
        except LaunchRefused as refused:
            raise refusal(refused) from refused
        if in_process:
            run = run_in_process(run)
        elif wait:
            run = wait_for_runs([run.pk])[0]
        else:
            run.refresh_from_db()
        self.stdout.write(summary(run))
        if run.status == RunStatus.FAILED:
            raise CommandError(f"run {run.pk} failed")
