"""Convert stored checkpoints of the old format (torch.save pickles) into safetensors, once."""

from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from modeling.models import TrainingRun
from modeling.training.checkpoint import SUFFIX, CheckpointInvalid, convert_old_checkpoint
from modeling.training.services import convert_stored_checkpoint


class Command(BaseCommand):
    help = (
        "Rewrite checkpoints written by torch.save (before checkpoints were safetensors) as safetensors, so the "
        "platform can load them; it never unpickles a checkpoint itself. Each old file is read with "
        "torch.load(weights_only=True) ONLY: tensors and plain containers (dict, list, str, numbers) load, any other "
        "object (a planted program) is refused and its run keeps the old file, which the platform refuses to load. "
        "Without --file: every run with a stored checkpoint (or those named by --run); files already in safetensors "
        "are left alone. With --file: files of your own, each written beside it as <name>.safetensors."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", type=int, action="append", dest="runs", help="only this run (repeatable)")
        parser.add_argument("--file", action="append", dest="files", help="an old checkpoint file (repeatable)")

    def handle(self, *args: Any, runs: Any = None, files: Any = None, verbosity: Any = 1, **options: Any) -> None:
        if files:
            for name in files:
                self.convert_file(Path(name))
            return
        ids = TrainingRun.objects.exclude(checkpoint_name="").order_by("pk").values_list("pk", flat=True)
        if runs:
            ids = ids.filter(pk__in=runs)
        outcomes: Counter[str] = Counter()
        for run_id in tqdm(list(ids), desc="checkpoints", unit="run", disable=verbosity < 1):
            outcome = convert_stored_checkpoint(run_id)
            outcomes[outcome.split(":")[0]] += 1
            if outcome not in ("converted", "already safetensors"):
                self.stderr.write(f"run {run_id}: {outcome}")
        self.stdout.write(", ".join(f"{count} {what}" for what, count in sorted(outcomes.items())) or "no checkpoints")

    def convert_file(self, path: Path) -> None:
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        destination = path.with_suffix(SUFFIX)
        if destination.exists():
            raise CommandError(f"{destination} exists already; move it away first")
        try:
            info = convert_old_checkpoint(path, destination)
        except CheckpointInvalid as invalid:
            raise CommandError(f"{path}: {invalid}") from None
        self.stdout.write(f"{path} -> {destination} ({info.kind}, {len(info.vocab)} words)")
