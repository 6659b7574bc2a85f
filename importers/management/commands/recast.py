"""python manage.py recast TEMPLATE SOURCE --dataset SLUG --split dev [--dry-run]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.models import Split
from importers import recast_rows, recast_templates
from importers.recast_service import PREVIEW_PAIRS, RecastRefused, dry_run, recast_into


class Command(BaseCommand):
    help = (
        "Recast rows of another resource (CSV/TSV with a header, or JSONL) into NLI pairs with a template: "
        "a shipped one by name (" + ", ".join(recast_templates.shipped_templates()) + ") or a template file. "
        "--dry-run prints the first pairs and saves nothing; otherwise every pair is saved with its "
        "provenance in one transaction."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("template")
        parser.add_argument("source")
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--split", required=True, choices=Split.values)
        parser.add_argument("--format", choices=["csv", "tsv", "jsonl"], help="Default: from the file's extension.")
        parser.add_argument("--fields", help="Comma-separated column names for a file without a header row.")
        parser.add_argument("--number-field", help="Add each row's 1-based position under this field (e.g. line).")
        parser.add_argument("--seed", type=int, default=0, help="Seed of the random names.")
        parser.add_argument("--dry-run", action="store_true", help="Show the first pairs; save nothing.")
        parser.add_argument("--limit", type=int, default=PREVIEW_PAIRS, help="Pairs a dry run shows.")

    def handle(self, *args: Any, **options: Any) -> None:
        fields = options["fields"].split(",") if options["fields"] else None
        try:
            rows = recast_rows.read_rows(options["source"], options["format"], fields, options["number_field"])
            if options["dry_run"]:
                preview = dry_run(
                    options["template"],
                    rows,
                    options["limit"],
                    options["split"],
                    options["seed"],
                    dataset=options["dataset"],
                )
                self.stdout.write(
                    f"Dry run of {preview.template}: first {len(preview.pairs)} pairs "
                    f"from {preview.rows_read} rows; nothing saved."
                )
                for pair in preview.pairs:
                    assert pair.provenance is not None  # recasting gives every pair its provenance
                    self.stdout.write(
                        f"  {pair.pair_id} [{pair.label}] {pair.context}\n      -> {pair.hypothesis}"
                        f"   ({pair.provenance.corpus} {pair.provenance.corpus_sent_id})"
                    )
                return
            report = recast_into(
                options["template"],
                rows,
                options["dataset"],
                options["split"],
                options["seed"],
                source=options["source"],
            )
        except (RecastRefused, recast_templates.RecastError, ValueError, OSError) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(self.style.SUCCESS(report.summary()))
