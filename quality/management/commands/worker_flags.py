"""`python manage.py worker_flags [--dataset slug] [--auto-exclude]`: the quality flags, in words.

Prints every flagged worker with each flag's reason and figures (quality/selectors.py). With
--auto-exclude, excludes the flagged workers who took part in a study that opted in
(`Study.auto_exclude_flagged`); nobody else is ever excluded without a researcher.
"""

from django.core.management.base import BaseCommand, CommandError

from corpus.models import Dataset
from quality.selectors import worker_quality
from quality.services import auto_exclude_flagged


class Command(BaseCommand):
    help = "List workers flagged by the quality checks; optionally exclude those in opted-in studies."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", help="slug of one dataset (default: all)")
        parser.add_argument(
            "--auto-exclude", action="store_true", help="exclude flagged workers of studies with auto_exclude_flagged"
        )

    def handle(self, *args, dataset=None, auto_exclude=False, **options):
        scope = None
        if dataset:
            scope = Dataset.objects.filter(slug=dataset).first()
            if scope is None:
                raise CommandError(f"There is no dataset '{dataset}'.")
        rows = worker_quality(scope)
        flagged = [row for row in rows if row.flags]
        self.stdout.write(f"{len(rows)} workers, {len(flagged)} flagged")
        for row in flagged:
            state = " (excluded)" if row.worker.is_excluded else ""
            self.stdout.write(f"{row.worker} [id {row.worker.pk}]{state}: {row.labels_given} labels")
            for flag in row.flags:
                self.stdout.write(f"    {flag.kind}: {flag.reason}")
        if auto_exclude:
            outcome = auto_exclude_flagged()
            if outcome is None:
                self.stdout.write("Nobody excluded: no flagged worker took part in a study that opted in.")
            else:
                report = outcome.recompute_report  # None when nobody changed
                self.stdout.write(
                    self.style.WARNING(
                        f"Excluded {outcome.changed} worker(s); gold labels recomputed "
                        f"({report.fixed if report else 0} pairs changed); their pairs are back in the validation pool."
                    )
                )
