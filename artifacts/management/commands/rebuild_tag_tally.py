"""python manage.py rebuild_tag_tally [--dataset SLUG] [--check]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from artifacts.tag_tally import check_and_rebuild
from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Dataset


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS
    help = (
        "Count the phenomenon tags per dataset, split, genre and gold label, report where the maintained "
        "tag tally (the corpus page's tag figures) differs, and rebuild it from the count. The word tally "
        "and the other maintained aggregates are recompute_gold's."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", help="Dataset slug (default: all datasets).")
        parser.add_argument("--check", action="store_true", help="Only report; change nothing (exit 1 on drift).")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = None
        if options["dataset"]:
            dataset = Dataset.objects.filter(slug=options["dataset"]).first()
            if dataset is None:
                raise CommandError(f"no dataset {options['dataset']!r}")
        report = check_and_rebuild(dataset, repair=not options["check"])
        self.stdout.write((self.style.WARNING if report.keys else self.style.SUCCESS)(report.summary()))
        if options["check"] and report.keys:
            raise CommandError(f"the tag tally differs from the tags on {report.keys} keys")
