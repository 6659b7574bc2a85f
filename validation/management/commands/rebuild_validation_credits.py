"""python manage.py rebuild_validation_credits [--dataset slug]: the cost page's credit of each validated pair, recomputed."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Dataset
from validation.cost_tally import rebuild_with_credits


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS  # the models' checks only (corpus.management)
    help = (
        "Recompute which claim each validated pair is credited to (its latest submitted claim in a study "
        "session; validation.credits) and set the claims' flags to it (after a bulk load that went around "
        "the validation submit, or a study session deleted), then the cost page's validation tallies that "
        "follow them (validation.cost_tally)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", default=None, help="Dataset slug (default: every dataset).")

    def handle(self, *args: Any, dataset: Any, **options: Any) -> None:
        scope = Dataset.objects.get(slug=dataset) if dataset else None
        changed = rebuild_with_credits(scope)
        self.stdout.write(f"validation credits rebuilt; {changed} claims changed")
