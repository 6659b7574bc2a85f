"""python manage.py tag_pairs [--dataset SLUG] [--retag] [--batch-size N] [--processes N]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from artifacts.phenomenon_tagger import TaggerUnavailable
from artifacts.services import get_tagger, run_tagging_job, start_tagging
from base.long_tasks import JobStatus
from corpus.models import Dataset


class Command(BaseCommand):
    help = (
        "Tag pairs with MultiNLI's linguistic phenomena (spaCy's PTB tagger and the §4 word lists). "
        "By default only pairs without tags; the job and its progress are recorded as a TaggingJob."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", help="Dataset slug (default: all datasets).")
        parser.add_argument("--retag", action="store_true", help="Tag again pairs that already have tags.")
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument(
            "--processes",
            type=int,
            default=None,
            help="Tagging processes beside this one, which reads the pairs and stores their tags meanwhile "
            "(0: tag in this process; default: one for a job of ARTIFACTS_TAGGING_PROCESS_MIN_PAIRS, 20,000, or more).",
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = None
        if options["dataset"]:
            dataset = Dataset.objects.filter(slug=options["dataset"]).first()
            if dataset is None:
                known = ", ".join(Dataset.objects.order_by("slug").values_list("slug", flat=True)) or "none"
                raise CommandError(f"unknown dataset {options['dataset']!r}; known: {known}")
        try:
            tagger = get_tagger()
        except TaggerUnavailable as error:
            raise CommandError(str(error)) from None
        job = start_tagging(dataset, retag=options["retag"], queue=False)
        if job.status != JobStatus.QUEUED:
            raise CommandError(f"tagging job #{job.pk} for this scope is already {job.status}; wait for it to finish")
        with tqdm(total=job.total, unit="pair", disable=options["no_progress"]) as bar:
            job = run_tagging_job(
                job.pk,
                tagger=tagger,
                batch_size=options["batch_size"],
                processes=options["processes"],
                on_batch=bar.update,
            )
        if job.status == JobStatus.FAILED:
            raise CommandError(job.error)
        self.stdout.write(self.style.SUCCESS(f"tagged {job.done} pairs with {job.tagger} (job #{job.pk})"))
