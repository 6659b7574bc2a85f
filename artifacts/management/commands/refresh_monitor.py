"""python manage.py refresh_monitor [--dataset SLUG] [--folds K] [--json]"""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from artifacts.monitoring import refresh_monitor
from base.console import format_table
from base.long_tasks import JobStatus
from corpus.models import Dataset


class Command(BaseCommand):
    help = (
        "Refresh the artifact monitor: k-fold cross-validated hypothesis-only accuracy (bag-of-words "
        "logistic regression) against the majority class, overall, per genre and per writer; flags writers "
        "far more guessable than the crowd and stores the model for scoring drafts."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", help="Dataset slug (default: all datasets together).")
        parser.add_argument("--folds", type=int, default=5)
        parser.add_argument("--json", action="store_true", help="Print the stored figures as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = None
        if options["dataset"]:
            dataset = Dataset.objects.filter(slug=options["dataset"]).first()
            if dataset is None:
                raise CommandError(f"unknown dataset {options['dataset']!r}")
        if options["folds"] < 2:
            raise CommandError("--folds must be at least 2")
        refresh = refresh_monitor(dataset, folds=options["folds"])
        if refresh.status != JobStatus.DONE:
            raise CommandError(f"monitor refresh #{refresh.pk} failed: {refresh.error}")
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "overall": refresh.overall,
                        "per_genre": refresh.per_genre,
                        "flagged": [w for w in refresh.writers if w["flagged"]],
                    },
                    indent=2,
                )
            )
            return
        o = refresh.overall
        self.stdout.write(
            self.style.SUCCESS(
                f"refresh #{refresh.pk}: {refresh.pairs} pairs, {refresh.folds}-fold, {refresh.seconds:.1f} s\n"
                f"hypothesis-only accuracy {o['accuracy']:.4f} (95% CI {o['ci_low']:.4f}-{o['ci_high']:.4f}) "
                f"vs majority ({o['majority_label']}) {o['majority']:.4f}; {refresh.flagged} writer(s) flagged"
            )
        )
        if refresh.per_genre:
            table = format_table(
                ["genre", "hypotheses", "accuracy", "majority"],
                [
                    [genre or "(no genre)", figures["n"], f"{figures['accuracy']:.4f}", f"{figures['majority']:.4f}"]
                    for genre, figures in refresh.per_genre.items()
                ],
            )
            self.stdout.write("\n".join("  " + line for line in table.split("\n")))
