"""python manage.py make_release SNAPSHOT_ID --out FOLDER [--license cc-by-sa-4.0]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from modeling.models import Snapshot
from modeling.release import ReleaseError, make_release


class Command(BaseCommand):
    help = "Write a finished snapshot as a release: Parquet per split and a Hugging Face dataset card (README.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("snapshot", type=int, help="The id of a finished snapshot (export_snapshot, the API).")
        parser.add_argument("--out", required=True, help="Folder to write into (created; must be empty).")
        parser.add_argument(
            "--license", default="cc-by-sa-4.0", help="The card's license id (SNLI/MultiNLI: cc-by-sa-4.0)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        snapshot = Snapshot.objects.filter(pk=options["snapshot"]).first()
        if snapshot is None:
            raise CommandError(f"no snapshot {options['snapshot']}")
        try:
            made = make_release(snapshot, options["out"], license_id=options["license"])
        except ReleaseError as error:
            raise CommandError(str(error)) from error
        for path, size in made["files"].items():
            self.stdout.write(f"{path}\t{size}")
