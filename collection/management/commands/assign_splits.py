"""python manage.py assign_splits --dev 2000 --test 2000 [--seed 0] [--dataset collected]  (pairs per genre)"""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from collection.splits import SplitAssignmentError, assign_splits
from corpus.management import DATA_COMMAND_CHECKS


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS  # the models' checks only (corpus.management)
    help = (
        "Assign each genre's premises to train / dev / test: premises holding N pairs per genre to dev and "
        "to test (unwritten premises count the pairs they will get), the rest of a training genre to train; "
        "held-out genres get dev and test only. Premises already written on keep their split. Same seed, "
        "same splits. One transaction."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dev", type=int, default=2000, help="Dev pairs per genre (MultiNLI: 2000).")
        parser.add_argument("--test", type=int, default=2000, help="Test pairs per genre (MultiNLI: 2000).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--dataset", default=None, help="Dataset slug (default: settings.NLI['DEFAULT_DATASET']).")

    def handle(self, *args: Any, dev: Any, test: Any, seed: Any, dataset: Any, **options: Any) -> None:
        try:
            report = assign_splits(dataset or settings.NLI["DEFAULT_DATASET"], dev=dev, test=test, seed=seed)
        except SplitAssignmentError as error:
            raise CommandError(str(error)) from None
        for line in report.lines():
            self.stdout.write(line)
