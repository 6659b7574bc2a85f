"""python manage.py export_dnc --dataset SLUG --split dev --out FOLDER"""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.models import Dataset, Split
from importers.dnc_import import export_dnc


class Command(BaseCommand):
    help = (
        "Write a dataset's split in DNC's JSON format: FOLDER/<name>_data.json and, when the pairs have "
        "provenance, FOLDER/<name>_metadata.json (name: --name, default recast_<dataset>). For the MultiNLI "
        "format, make a snapshot (manage.py snapshot): its manifest states the label scheme."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--split", required=True, choices=Split.values)
        parser.add_argument("--out", required=True, help="Folder to write into (created if missing).")
        parser.add_argument("--name", help="File name stem (default: recast_<dataset without dnc->).")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            dataset = Dataset.objects.get(slug=options["dataset"])
        except Dataset.DoesNotExist:
            raise CommandError(f"no dataset {options['dataset']!r}") from None
        out = Path(options["out"])
        out.mkdir(parents=True, exist_ok=True)
        stem = options["name"] or "recast_" + dataset.slug.removeprefix("dnc-").replace("-", "_")
        data_path, metadata_path = out / f"{stem}_data.json", out / f"{stem}_metadata.json"
        n = export_dnc(dataset, options["split"], data_path, metadata_path)
        written = [data_path] + ([metadata_path] if metadata_path.exists() else [])
        self.stdout.write(self.style.SUCCESS(f"{n} pairs -> {', '.join(map(str, written))}"))
