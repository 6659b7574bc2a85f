"""python manage.py rebuild_hypothesis_tally [--dataset slug]: the cost page's hypothesis count, recounted."""

from django.core.management.base import BaseCommand

from collection.hypothesis_tally import rebuild
from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Dataset


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS  # the models' checks only (corpus.management)
    help = (
        "Recount the hypotheses written per study, split and genre (collection.hypothesis_tally) from the "
        "pairs and writing claims, and replace the maintained count by it (after a bulk load that went "
        "around the writing submit, or a study session deleted). Writers need not stop."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", default=None, help="Dataset slug (default: every dataset).")

    def handle(self, *args, dataset, **options):
        scope = Dataset.objects.get(slug=dataset) if dataset else None
        differing = rebuild(scope)
        self.stdout.write(f"hypothesis tally rebuilt; {differing} keys differed from a fresh count")
