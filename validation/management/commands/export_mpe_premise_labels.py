"""python manage.py export_mpe_premise_labels --dataset NAME [--split dev] OUT"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Dataset, Split
from validation.premise_label_selectors import premise_label_progress, premise_label_rows, spe_table
from validation.premise_table import write_rows


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS
    help = (
        "Write the per-premise labels of a multi-premise dataset's marked items as TSV (item ID, premise "
        "index, source and text, hypothesis, the three judgments, consensus, the item's MPE gold label) and "
        "print MPE's Table 4 over the items whose four premises have three judgments."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out")
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--split", choices=Split.values)
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = Dataset.objects.filter(slug=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset {options['dataset']!r}")
        split = options["split"]
        total = premise_label_progress(dataset, split)["premise_pairs"]
        if not total:
            raise CommandError(
                f"no items of {dataset.slug}{' ' + split if split else ''} are marked for per-premise labels "
                "(manage.py mark_premise_labels)"
            )
        rows = tqdm(
            premise_label_rows(dataset, split),
            total=total,
            unit="pair",
            desc="premise labels",
            disable=options["no_progress"],
        )
        with open(options["out"], "w", encoding="utf-8", newline="") as stream:
            written = write_rows(rows, stream)
        self.stdout.write(self.style.SUCCESS(f"{written} premise-hypothesis pairs written to {options['out']}"))
        for line in spe_table(dataset, split).lines():
            self.stdout.write(line)
