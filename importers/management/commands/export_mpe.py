"""python manage.py export_mpe --dataset NAME [--split S] OUT"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.models import Dataset, Split
from importers.mpe_items import export_mpe
from importers.services import CorpusImportError


class Command(BaseCommand):
    help = "Write a multi-premise dataset (or one split of it) as MPE TSV: captions with provenance, counts, gold."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out")
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--split", choices=Split.values)

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = Dataset.objects.filter(slug=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset {options['dataset']!r}")
        try:
            written = export_mpe(dataset, options["out"], split=options["split"])
        except CorpusImportError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(self.style.SUCCESS(f"{written} items written to {options['out']}"))
