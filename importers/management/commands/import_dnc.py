"""python manage.py import_dnc PATH [PATH ...] [--dataset SLUG]"""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from importers import dnc
from importers.dnc_import import DncImportError, import_dnc_file


class Command(BaseCommand):
    help = (
        "Import DNC recast data (*_data.json with its *_metadata.json) as premises, pairs, labels and provenance. "
        "A folder imports every *_data.json under it. One dataset per recast (dnc-sentiment, dnc-kg-relations, "
        "dnc-fw-negation ...) with the file's label scheme; each file is all or nothing; re-importing skips pairs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="*_data.json files or folders holding them.")
        parser.add_argument("--dataset", help="Dataset slug for every file (default: from each file's name).")

    def handle(self, *args: Any, **options: Any) -> None:
        files: list[Path] = []
        for path in map(Path, options["paths"]):
            files += dnc.find_dnc_files(path) if path.is_dir() else [path]
        if not files:
            raise CommandError("no *_data.json files found")
        failed = 0
        for path in files:
            try:
                report = import_dnc_file(path, dataset=options["dataset"])
            except DncImportError as error:
                failed += 1
                self.stderr.write(self.style.ERROR(f"{path}: nothing imported: {error}"))
                continue
            self.stdout.write(self.style.SUCCESS(report.summary()))
        if failed:
            raise CommandError(f"{failed} of {len(files)} file(s) could not be imported (see above)")
