"""python manage.py mark_premise_labels --dataset NAME [--split dev]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Dataset, Split
from validation.premise_labels import PremiseLabelRefused, mark_for_premise_labels


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS
    help = (
        "Ask for three per-premise (single-premise) labels on every premise of a multi-premise dataset's "
        "items, or of one split (MPE §5.2 did this for dev). Marking twice adds nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--split", choices=Split.values)

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = Dataset.objects.filter(slug=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset {options['dataset']!r}")
        try:
            result = mark_for_premise_labels(dataset, split=options["split"])
        except PremiseLabelRefused as refused:
            raise CommandError(refused.message) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"{result['items']} items in scope; {result['premise_pairs']} premise-hypothesis pairs newly marked "
                "for three judgments each"
            )
        )
