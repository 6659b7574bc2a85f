"""MultiNLI Table 5: one model per training genre, its test accuracy on every genre.

Each cell comes from one TrainingRun (config.train_genre = the row's genre): its results'
per-genre test accuracy (dev when the snapshot has no test file). The table is written as JSON
to settings.DATA_DIR/genre_matrices/snapshot-<id>-<model>-runs-<first>-<last>.json and each run's
results["genre_matrix_file"] names that file, so the dashboard finds it from any of its runs.
"""

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from base.console import format_table
from modeling.models import RunStatus, TrainingRun
from modeling.snapshots.files import materialised_snapshot
from modeling.training.data import load_snapshot
from modeling.training.services import (
    LaunchRefused,
    execute_packed_training_runs,
    launch_packed_training_runs,
    launch_training_run,
    parse_config_text,
    validate_launch,
)

from .train import finish_bar, refusal, run_in_process, wait_for_runs


def train_genres(snapshot: Any) -> list[str]:
    with materialised_snapshot(snapshot) as folder:
        data = load_snapshot(folder, expected_hash=snapshot.content_hash)
    return sorted({ex.genre for ex in data.train if ex.genre and ex.label >= 0})


def build_matrix(runs: list[Any]) -> dict[str, Any]:
    phase = "test" if all("test" in r.results for r in runs) else "dev"
    test_genres = sorted({g for r in runs for g in r.results.get(phase, {}).get("per_genre", {})})
    accuracy = {
        r.config["train_genre"]: {
            g: r.results.get(phase, {}).get("per_genre", {}).get(g, {}).get("accuracy") for g in test_genres
        }
        for r in runs
    }
    return {
        "phase": phase,
        "train_genres": [r.config["train_genre"] for r in runs],
        "test_genres": test_genres,
        "accuracy": accuracy,
        "runs": {r.config["train_genre"]: r.pk for r in runs},
    }


def format_matrix(table: dict[str, Any]) -> str:
    """The table as text, every column as wide as its longest cell (genre slugs are never cut)."""
    rows = [
        [genre]
        + [
            f"{100 * value:.1f}" if value is not None else "-"
            for value in (table["accuracy"][genre][test_genre] for test_genre in table["test_genres"])
        ]
        for genre in table["train_genres"]
    ]
    return format_table(["train \\ test", *table["test_genres"]], rows)


def train_packed_here(runs: list[Any], model: str, *, bar_off_a_terminal: bool) -> list[Any]:
    """The runs trained at once in this process, a progress bar per run."""
    bars = [
        tqdm(
            total=run.total_steps or None,
            unit="step",
            desc=f"{model} on {run.config['train_genre']}",
            position=index,
            disable=False if bar_off_a_terminal else None,
        )
        for index, run in enumerate(runs)
    ]
    try:
        execute_packed_training_runs([run.pk for run in runs], bars=bars)
    finally:
        for bar in bars:
            bar.close()
    for run, bar in zip(runs, bars, strict=True):
        run.refresh_from_db()
        finish_bar(bar, run)
    return runs


class Command(BaseCommand):
    help = "Train one model per training genre and print the genre × genre accuracy table (MultiNLI Table 5)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--snapshot", type=int, required=True)
        parser.add_argument("--model", default="cbow")
        parser.add_argument("--config", default="{}", help="JSON; dropout defaults to 0.2 as in MultiNLI's Table 5")
        parser.add_argument("--genres", default="", help="comma-separated training genres (default: all in train)")
        parser.add_argument("--queue", action="store_true", help="send the runs to GPU nodes and wait for them")
        parser.add_argument(
            "--packed",
            action="store_true",
            help="train the genres' runs at once, one step for all (a GPU's way; each run keeps its own "
            "progress, checkpoint and results): in this process, or with --queue as one task on a GPU node",
        )
        parser.add_argument(
            "--bars-on-a-terminal-only",
            action="store_true",
            help="draw the training progress bars only when the output is a terminal (the demo's log)",
        )

    def handle(
        self, *args: Any, snapshot: Any, model: Any, config: Any, genres: Any, queue: Any, **options: Any
    ) -> None:
        if options["packed"] and model == "majority":
            raise CommandError("the majority baseline has nothing to train together; leave out --packed")
        try:
            config = {"dropout": 0.2, **parse_config_text(config)}
            snapshot, _ = validate_launch(snapshot, model, config=config)
            genres = [g.strip() for g in genres.split(",") if g.strip()] or train_genres(snapshot)
            if not genres:
                raise CommandError("the snapshot's train file names no genre")
            configs = [{**config, "train_genre": genre} for genre in genres]
            if queue and options["packed"]:
                runs = launch_packed_training_runs(snapshot, model, configs)
            else:
                runs = [launch_training_run(snapshot, model, config=c, enqueue=queue) for c in configs]
        except LaunchRefused as refused:
            raise refusal(refused) from refused
        if queue:
            runs = sorted(wait_for_runs([r.pk for r in runs]), key=lambda r: genres.index(r.config["train_genre"]))
        elif options["packed"]:
            runs = train_packed_here(runs, model, bar_off_a_terminal=not options["bars_on_a_terminal_only"])
        else:
            runs = [
                run_in_process(
                    r,
                    desc=f"{model} on {r.config['train_genre']}",
                    bar_off_a_terminal=not options["bars_on_a_terminal_only"],
                )
                for r in runs
            ]
        failed = [r for r in runs if r.status != RunStatus.DONE]
        if failed:
            raise CommandError("; ".join(f"run {r.pk} ({r.config['train_genre']}): {r.error}" for r in failed))
        table = build_matrix(runs)
        folder = Path(settings.DATA_DIR) / "genre_matrices"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"snapshot-{snapshot.pk}-{model}-runs-{runs[0].pk}-{runs[-1].pk}.json"
        path.write_text(json.dumps({"snapshot": snapshot.pk, "model": model, **table}, indent=2))
        for run in runs:
            run.results["genre_matrix_file"] = str(path)
            TrainingRun.objects.filter(pk=run.pk).update(results=run.results)
        self.stdout.write(f"{table['phase']} accuracy (%) of {model} per training genre; written to {path}")
        self.stdout.write(format_matrix(table))
