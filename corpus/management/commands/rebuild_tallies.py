"""python manage.py rebuild_tallies [NAME ...] [--dataset SLUG] [--check]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus import tallies
from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Dataset


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS  # the models' checks only (corpus.management)
    help = (
        "Count each maintained tally afresh from what it follows (corpus: the pairs and premises; tag: the "
        "phenomenon tags; hypothesis: the pairs and writing claims, the cost page's count), report where the "
        "tally differs, and rebuild it from the count (after a bulk load that went around the writers, or a "
        "study session deleted). Writers need not stop. recompute_gold checks the corpus's with the counters."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", help=f"Tallies, of {', '.join(tallies.MAINTAINED)} (default: all).")
        parser.add_argument("--dataset", help="Dataset slug (default: all datasets).")
        parser.add_argument("--check", action="store_true", help="Only report; change nothing (exit 1 on drift).")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["dataset"]
        dataset = Dataset.objects.filter(slug=slug).first() if slug else None
        if slug and dataset is None:
            raise CommandError(f"no dataset {slug!r}")
        if unknown := set(options["names"]) - set(tallies.MAINTAINED):
            raise CommandError(f"no tally {', '.join(sorted(unknown))}; the tallies: {', '.join(tallies.MAINTAINED)}")
        drifting = []
        for name in options["names"] or tallies.MAINTAINED:
            report = tallies.check_and_rebuild(dataset, tallies.MAINTAINED[name], repair=not options["check"])
            self.stdout.write((self.style.WARNING if report.keys else self.style.SUCCESS)(report.summary()))
            if report.keys:
                drifting.append(f"the {name} tally differs from {report.source} on {report.keys} keys")
        if options["check"] and drifting:
            raise CommandError("; ".join(drifting))
