"""python manage.py import_mpe FILE --dataset NAME [--split S] [--no-repair]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.models import Split
from importers.mpe_items import import_mpe_file
from importers.services import CorpusImportError


class Command(BaseCommand):
    help = (
        "Import an MPE TSV file (mpe_train.txt, mpe_dev.txt, mpe_test.txt) as multi-premise items with their "
        "five judgments and the file's gold labels. Malformed lines are reported by number; a line whose only "
        "defect is spaces where a tab belongs after the hypothesis (dev line 468) is repaired unless --no-repair."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--dataset", required=True, help="Dataset slug; created (multi-premise) if missing.")
        parser.add_argument("--split", choices=Split.values, help="Default: from the file name.")
        parser.add_argument("--no-repair", action="store_true", help="Skip lines with a broken separator instead.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = import_mpe_file(
                options["file"], options["dataset"], split=options["split"], repair=not options["no_repair"]
            )
        except CorpusImportError as error:
            raise CommandError(str(error)) from None
        style = self.style.SUCCESS if report.ok else self.style.WARNING
        self.stdout.write(style(report.summary()))
