"""python manage.py import_premises --genre fiction [--dataset collected] FILE..."""

import argparse
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from collection.premise_import import PremiseImportError, import_premises
from corpus.management import DATA_COMMAND_CHECKS


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS  # the models' checks only (corpus.management)
    help = (
        "Import premise sentences of one genre from plain text (paragraphs split into sentences) "
        "or JSONL (one premise a line under text / sentence1 / premise, optional promptID). "
        "Drops duplicates, short and non-narrative sentences and reports why."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--genre", required=True, help="Genre slug, e.g. fiction.")
        parser.add_argument(
            "--dataset",
            default=None,
            help="Dataset slug (default: settings.NLI['DEFAULT_DATASET']); created if missing.",
        )
        parser.add_argument(
            "--format",
            dest="file_format",
            choices=["auto", "text", "jsonl"],
            default="auto",
            help="auto: .jsonl/.ndjson files and files whose first line is a JSON object are JSONL.",
        )
        parser.add_argument(
            "--split",
            choices=["", "train", "dev", "test"],
            default="",
            help="Put the new premises in this split (default: none; assign_splits gives them one later).",
        )
        parser.add_argument("--batch-size", type=int, default=1000, help="Premises written per transaction.")
        parser.add_argument(
            "--jobs",
            type=int,
            default=1,
            help="Processes that split plain text into sentences (the slow part); same result.",
        )
        parser.add_argument(
            "--progress",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="Show a progress bar (default: when stderr is a terminal).",
        )

    def handle(
        self,
        *args: Any,
        files: Any,
        genre: Any,
        dataset: Any,
        file_format: Any,
        split: Any,
        batch_size: Any,
        jobs: Any,
        progress: Any,
        **options: Any,
    ) -> None:
        if batch_size < 1 or jobs < 1:
            raise CommandError("--batch-size and --jobs must be at least 1.")
        if progress is None:
            progress = sys.stderr.isatty()
        try:
            report = import_premises(
                files,
                genre=genre,
                dataset=dataset,
                progress=progress,
                batch_size=batch_size,
                file_format=file_format,
                jobs=jobs,
                split=split,
            )
        except PremiseImportError as error:
            raise CommandError(str(error)) from None
        for line in report.lines():
            self.stdout.write(line)
        if report.malformed:
            self.stderr.write(
                self.style.WARNING(f"{len(report.malformed)} malformed line(s) were skipped; see the list above.")
            )
