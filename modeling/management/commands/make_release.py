"""python manage.py make_release SNAPSHOT_ID [--name NAME | --out FOLDER] [--license cc-by-sa-4.0] [--quality-flags]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from modeling.models import Snapshot
from modeling.release import DEFAULT_LICENSE, ReleaseError, default_release_name, make_release, publish_release


class Command(BaseCommand):
    help = (
        "Write a done snapshot as a release: Parquet per split and a Hugging Face dataset card (README.md), "
        "into the releases storage under NAME/ (default snapshot-<id>) or, with --out, into a local folder."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "snapshot", type=int, help="The id of a done snapshot (export_snapshot, the API, the dashboard)."
        )
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--name", help="The release's name in the releases storage (default snapshot-<id>).")
        where.add_argument("--out", help="A local folder to write into instead (created; must be empty).")
        parser.add_argument(
            "--license", default=DEFAULT_LICENSE, help="The card's license id (SNLI/MultiNLI: cc-by-sa-4.0)."
        )
        parser.add_argument(
            "--quality-flags",
            action="store_true",
            help="Publish the per-annotator quality columns (flags, catch trials) of the label rows, pseudonymous. "
            "Off by default; the card says which.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        snapshot = Snapshot.objects.filter(pk=options["snapshot"]).first()
        if snapshot is None:
            raise CommandError(f"no snapshot {options['snapshot']}")
        chosen = {"license_id": options["license"], "quality_flags": options["quality_flags"]}
        try:
            if options["out"]:
                made = make_release(snapshot, options["out"], **chosen)
                where = options["out"]
            else:
                made = publish_release(snapshot, options["name"] or default_release_name(snapshot), **chosen)
                where = f"the releases storage, {made['name']}/"
        except ReleaseError as error:
            raise CommandError(str(error)) from error
        for path, size in made["files"].items():
            self.stdout.write(f"{path}\t{size}")
        self.stdout.write(f"written to {where}")
