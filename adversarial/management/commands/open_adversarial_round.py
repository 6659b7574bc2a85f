"""Open round 1 of an adversarial study on a finished run's checkpoint or an external endpoint."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.models import Dataset
from crowd.models import Study, TaskKind
from modeling.models import TrainingRun

from ...rounds import RoundRefused, open_first_round
from ...services import study_settings


class Command(BaseCommand):
    help = "Open the first round of an adversarial writing study (docs/adversarial.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", required=True, help="slug of a study of kind 'adversarial'")
        parser.add_argument("--dataset", required=True, help="slug of the dataset holding the round's premises")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--run", type=int, help="id of a finished training run (its checkpoint is the target)")
        target.add_argument("--endpoint", help="URL of an external model (the JSON contract)")
        parser.add_argument("--next-model", default="esim", help="model the next targets are trained as")

    def handle(self, *args: Any, **options: Any) -> None:
        study, dataset, run, endpoint = options["study"], options["dataset"], options["run"], options["endpoint"]
        found = Study.objects.filter(slug=study, task_kind=TaskKind.ADVERSARIAL).first()
        if found is None:
            raise CommandError(f"No adversarial study {study!r}.")
        premises = Dataset.objects.filter(slug=dataset).first()
        if premises is None:
            raise CommandError(f"No dataset {dataset!r}.")
        target_run = None
        if run is not None:
            target_run = TrainingRun.objects.filter(pk=run).first()
            if target_run is None:
                raise CommandError(f"No training run {run}.")
        try:
            round_ = open_first_round(
                found, premises, target_run=target_run, target_endpoint=endpoint or "", next_model=options["next_model"]
            )
        except RoundRefused as refused:
            raise CommandError(str(refused)) from None
        study_settings(found)
        self.stdout.write(f"Round {round_.number} of {found.slug} is open on {round_.target_description}.")
