"""`manage.py retention [--dry-run]`: pseudonymise the personal data that outlived its study's retention."""

from typing import Any

from django.core.management.base import BaseCommand

from privacy.services import apply_retention


class Command(BaseCommand):
    help = "Pseudonymise what outlived its study's retention (the beat runs it daily); --dry-run says what it would do."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Count what would change; change nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(apply_retention(dry_run=options["dry_run"]).summary())
