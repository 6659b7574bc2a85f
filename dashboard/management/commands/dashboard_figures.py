"""python manage.py dashboard_figures --dataset SLUG [--site http://host:port]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.models import Dataset
from dashboard.figures import figures_table


class Command(BaseCommand):
    help = "Print a dataset's headline figures exactly as the dashboard pages show them, with each page's address."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="dataset slug")
        parser.add_argument("--site", default="", help="the site's address, to print whole page addresses")

    def handle(self, *args: Any, dataset: Any, site: Any, **options: Any) -> None:
        found = Dataset.objects.filter(slug=dataset).first()
        if found is None:
            known = ", ".join(Dataset.objects.order_by("slug").values_list("slug", flat=True)) or "none yet"
            raise CommandError(f"No dataset '{dataset}' (known: {known}).")
        self.stdout.write(figures_table(found, site.rstrip("/")))
