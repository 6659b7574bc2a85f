"""python manage.py recompute_gold [--dataset NAME] [--check]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Dataset
from corpus.recompute import recompute_gold


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS  # the models' checks only (corpus.management)
    help = (
        "Recompute every pair's label counters and gold label from the label table (labels of excluded "
        "workers left out, the earliest five that count): first report the pairs whose stored counters "
        "disagree and the pairs holding more than five labels that count, then fix the counters in short batches."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", help="Dataset slug (default: all datasets).")
        parser.add_argument(
            "--check",
            action="store_true",
            help="Only report; change nothing (exit 1 on disagreements or pairs with more than five labels that count).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["dataset"]
        dataset = Dataset.objects.filter(slug=slug).first() if slug else None
        if slug and dataset is None:
            raise CommandError(f"no dataset {slug!r}")
        report = recompute_gold(dataset=dataset, fix=not options["check"], lengths=True)
        style = self.style.WARNING if report.drifted else self.style.SUCCESS
        self.stdout.write(style(report.summary()))
        if options["check"] and report.drifted:
            raise CommandError(
                f"{report.disagreements} pairs disagree with the label table; "
                f"{report.overfull_pairs} pairs hold more than five labels that count"
            )
