"""python manage.py fold_tallies: fold the maintained aggregates' deltas into one row per key."""

from typing import Any

from django.core.management.base import BaseCommand

from corpus import tallies
from corpus.management import DATA_COMMAND_CHECKS


class Command(BaseCommand):
    help = (
        "Fold the maintained aggregates (corpus.tallies): every delta row is replaced by one row per "
        "key, in one statement, while writers go on. The beat schedule folds them too (corpus.fold_tallies); "
        "recompute_gold checks and rebuilds them."
    )
    requires_system_checks = DATA_COMMAND_CHECKS

    def handle(self, *args: Any, **options: Any) -> None:
        rows = tallies.fold()
        self.stdout.write(f"maintained aggregates folded: {rows} rows after the fold")
