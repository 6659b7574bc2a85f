"""Choose which pairs get four validation labels: all of dev/test, and a share of train."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Dataset
from validation import services


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS  # the models' checks only (corpus.management)
    help = (
        "Mark a dataset's dev and test pairs, and a reproducible random share of its train pairs, "
        "as needing four validation labels."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="Dataset slug.")
        parser.add_argument(
            "--train-fraction",
            type=float,
            default=None,
            help="Share of train pairs (0-1) to validate; kept on the dataset. Default: the dataset's current share.",
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed of the train sample (default 0).")
        parser.add_argument("--no-dev-test", action="store_true", help="Leave dev and test pairs as they are.")

    def handle(
        self, *args: Any, dataset: Any, train_fraction: Any, seed: Any, no_dev_test: Any, **options: Any
    ) -> None:
        try:
            dataset = Dataset.objects.get(slug=dataset)
        except Dataset.DoesNotExist:
            known = ", ".join(Dataset.objects.values_list("slug", flat=True)) or "none yet"
            raise CommandError(f"No dataset '{dataset}'. Known datasets: {known}.") from None
        if train_fraction is None:
            train_fraction = dataset.train_validation_fraction
        if not 0.0 <= train_fraction <= 1.0:
            raise CommandError(f"--train-fraction must be between 0 and 1, not {train_fraction}.")
        if not no_dev_test:
            marked = services.mark_dev_test_for_validation(dataset)
            self.stdout.write(f"dev/test: {marked} pairs newly marked for validation")
        report = services.sample_train_for_validation(
            dataset, train_fraction, seed=seed, progress=options.get("verbosity", 1) > 0
        )
        self.stdout.write(
            f"train: {report['newly_marked']} pairs newly marked; {report['already_marked'] + report['newly_marked']}"
            f" of {report['train_pairs']} train pairs now need validation (share {train_fraction:g}, seed {seed})"
        )
