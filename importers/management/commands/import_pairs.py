"""python manage.py import_pairs FILE --dataset NAME [--genre G] [--split S]"""

from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Split
from importers.services import CorpusImportError, import_pairs_file


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS  # the models' checks only (corpus.management)
    help = (
        "Import an SNLI/MultiNLI corpus file (JSONL, or TSV in the MultiNLI or GLUE layout) as premises, "
        "pairs and their labels. Malformed lines are reported with their numbers and skipped; pairs already "
        "present are skipped, so importing a file twice changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--dataset", required=True, help="Dataset slug; created (as imported) if missing.")
        parser.add_argument(
            "--genre", help="Genre slug for rows without a genre field (SNLI rows default to captions)."
        )
        parser.add_argument(
            "--split", choices=Split.values, help="Default: from the file name (*_dev*, *_test*, *_train*)."
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")
        parser.add_argument(
            "--no-tag",
            action="store_true",
            help="Do not tag the new pairs with phenomena now (the hourly sweep or `tag_pairs` does it later).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = import_pairs_file(
                options["file"],
                options["dataset"],
                genre=options["genre"],
                split=options["split"],
                progress=not options["no_progress"],
            )
        except CorpusImportError as error:
            raise CommandError(str(error)) from None
        style = self.style.SUCCESS if report.ok else self.style.WARNING
        self.stdout.write(style(report.summary()))
        if report.pairs_created and not options["no_tag"] and not settings.ARTIFACTS_ON_ARRIVAL:
            self._tag(options)

    def _tag(self, options: dict[str, Any]) -> None:
        """Without a broker nothing tags the new pairs in the background: tag them here, with a bar
        and a TaggingJob whose progress the dashboard shows (with a broker, the import queued that
        job for a worker). By command name: the tagger is another app's."""
        self.stdout.write("tagging the new pairs with phenomena (--no-tag to leave them for later)")
        try:
            call_command(
                "tag_pairs", dataset=options["dataset"], no_progress=options["no_progress"], stdout=self.stdout
            )
        except CommandError as error:  # the import stands; say why nothing was tagged
            self.stdout.write(self.style.WARNING(f"pairs imported but not tagged: {error}"))
