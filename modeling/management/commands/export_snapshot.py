"""Export a snapshot synchronously: `python manage.py export_snapshot [--dataset NAME ...] --out DIR`."""

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from modeling.snapshots.files import copy_snapshot_files
from modeling.snapshots.format import read_manifest
from modeling.snapshots.services import (
    FILTER_KEYS,
    UNVALIDATED_GOLD_CHOICES,
    ExportRefused,
    create_snapshot,
    export_snapshot,
)


class Command(BaseCommand):
    help = "Create a snapshot, export it in the MultiNLI format (JSONL + TSV per split) and copy it to --out."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", action="append", default=[], help="Dataset slug (repeatable; default all).")
        parser.add_argument("--genre", action="append", default=[], help="Genre slug to keep (repeatable).")
        parser.add_argument("--split", action="append", default=[], choices=["train", "dev", "test"])
        parser.add_argument("--gold-only", action="store_true", help="Leave out pairs whose gold label is '-'.")
        parser.add_argument("--min-labels", type=int, default=0, help="Keep pairs with at least this many labels.")
        parser.add_argument(
            "--unvalidated-gold",
            choices=UNVALIDATED_GOLD_CHOICES,
            default="author",
            help="Gold label of train pairs never sent to validation (SNLI/MultiNLI: the author's); "
            "author-all: of such pairs in every split (recast data such as DNC).",
        )
        parser.add_argument(
            "--full-agreement",
            action="store_true",
            help="Keep only pairs whose labels (3 or more) all agree (DNC's test-set rule).",
        )
        parser.add_argument(
            "--drop-ungrammatical",
            action="store_true",
            help="Leave out pairs whose hypothesis most grammaticality judges found to have major issues.",
        )
        parser.add_argument(
            "--drop-test-fours",
            action="store_true",
            help="DNC's test-set rule for ordinal data: leave out of the test split the not-entailed pairs rated 4.",
        )
        parser.add_argument(
            "--label-rows",
            action="store_true",
            help="Add labels.jsonl: one row per label, annotators pseudonymous (modeling/snapshots/label_rows.py).",
        )
        parser.add_argument(
            "--typing-flags",
            action="store_true",
            help="Add the typing flags of the author's hypothesis to labels.jsonl (turns on --label-rows).",
        )
        parser.add_argument("--out", required=True, help="Folder to copy the files into (created; must be empty).")

    def handle(self, *args: Any, **options: Any) -> None:
        out = Path(options["out"])
        if out.exists() and any(out.iterdir()):
            raise CommandError(f"{out} is not empty; choose a new folder so no older file is mixed in")
        # Each filter option is named as its filter (--gold-only: gold_only), but for the plural lists.
        filters = {"genres": options["genre"], "splits": options["split"]}
        filters.update({key: options[key] for key in FILTER_KEYS if key in options})
        try:
            snapshot = create_snapshot(None, datasets=options["dataset"], filters=filters)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {', '.join(v)}" for k, v in exc.message_dict.items())) from exc
        bar = tqdm(total=None, unit="pair", desc=f"snapshot {snapshot.pk}", disable=options["verbosity"] == 0)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            export_snapshot(snapshot, progress=progress)
        except ExportRefused as exc:
            raise CommandError(str(exc)) from exc
        except Exception as exc:
            raise CommandError(f"export failed, snapshot {snapshot.pk} marked failed: {exc}") from exc
        finally:
            bar.close()
        copy_snapshot_files(snapshot, out)  # from the snapshot storage, wherever it keeps them
        manifest = read_manifest(out)
        self.stdout.write(f"snapshot {snapshot.pk}: {manifest['rows']} pairs, content hash {manifest['content_hash']}")
        for entry in manifest["files"]:
            self.stdout.write(
                f"  {entry['name']:<24} {entry['rows']:>9} rows {entry['bytes']:>12} bytes  {entry['sha256'][:16]}"
            )
        self.stdout.write(f"written to {out}")
