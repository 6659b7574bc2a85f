"""`python manage.py worker_flags [--dataset slug] [--auto-exclude]`: the quality flags, in words.
--auto-exclude excludes only the flagged workers of studies that opted in (`Study.auto_exclude_flagged`)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.models import Dataset, WorkerExclusion
from corpus.scope import Scope
from quality.selectors import worker_quality
from quality.services import auto_exclude_flagged


class Command(BaseCommand):
    help = "List workers flagged by the quality checks; optionally exclude those in opted-in studies."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", help="slug of one dataset (default: all)")
        parser.add_argument(
            "--auto-exclude", action="store_true", help="exclude flagged workers of studies with auto_exclude_flagged"
        )

    def handle(self, *args: Any, dataset: Any = None, auto_exclude: Any = False, **options: Any) -> None:
        chosen = None
        if dataset:
            chosen = Dataset.objects.filter(slug=dataset).first()
            if chosen is None:
                raise CommandError(f"There is no dataset '{dataset}'.")
        rows = worker_quality(Scope.of_dataset(chosen))
        flagged = [row for row in rows if row.flags]
        self.stdout.write(f"{len(rows)} workers, {len(flagged)} flagged")
        excluded_somewhere = set(WorkerExclusion.objects.values_list("worker_id", flat=True))
        for row in flagged:
            state = " (excluded in a team)" if row.worker.pk in excluded_somewhere else ""
            self.stdout.write(f"{row.worker} [id {row.worker.pk}]{state}: {row.labels_given} labels")
            for flag in row.flags:
                self.stdout.write(f"    {flag.kind}: {flag.reason}")
        if auto_exclude:
            outcomes = auto_exclude_flagged()
            if not outcomes:
                self.stdout.write("Nobody excluded: no flagged worker took part in a study that opted in.")
            for outcome in outcomes:
                self.stdout.write(
                    self.style.WARNING(
                        f"Excluded {outcome.changed} worker(s) in team {', '.join(map(str, outcome.teams))}; "
                        f"gold labels recounted ({outcome.pairs_fixed} pairs changed); "
                        "their pairs are back in the validation pool."
                    )
                )
