"""python manage.py giveaway_words [--dataset SLUG] [--split S] [--genre G] [--worker ID] [--min-count N] [--top N] [--json]"""

import json
from typing import Any, TypeVar

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Model

from artifacts.selectors import giveaway_words_for
from base.console import format_table
from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP
from corpus.models import Dataset, Genre, Split, Worker
from corpus.scope import Scope

M = TypeVar("M", bound=Model)


def _get(model: type[M], field: str, value: object, what: str) -> M | None:
    if value is None:
        return None
    found = model._default_manager.filter(**{field: value}).first()  # `objects` (no model here has another)
    if found is None:
        raise CommandError(f"unknown {what} {value!r}")
    return found


class Command(BaseCommand):
    help = (
        "Give-away words (Poliak et al. 2018 §6): p(label | word) over hypotheses, per label with "
        "counts, for a dataset, a split, a genre or one writer."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset")
        parser.add_argument("--split", choices=Split.values)
        parser.add_argument("--genre")
        parser.add_argument("--worker", type=int, help="Worker id: that writer's hypotheses only.")
        parser.add_argument(
            "--min-count",
            type=int,
            default=DEFAULT_MIN_COUNT,
            help=f"Least hypotheses a word must be in (default {DEFAULT_MIN_COUNT}, the paper's).",
        )
        parser.add_argument("--top", type=int, default=DEFAULT_TOP, help=f"Words per label (default {DEFAULT_TOP}).")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["min_count"] < 1 or options["top"] < 1:
            raise CommandError("--min-count and --top must be at least 1")
        listing = giveaway_words_for(
            Scope.of_dataset(_get(Dataset, "slug", options["dataset"], "dataset"), options["split"]),
            genre=_get(Genre, "slug", options["genre"], "genre"),
            worker=_get(Worker, "pk", options["worker"], "worker"),
            min_count=options["min_count"],
            top=options["top"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(listing, indent=2))
            return
        self.stdout.write(f"{listing['hypotheses']} hypotheses; words in at least {listing['min_count']} of them")
        for label, words in listing["words"].items():
            self.stdout.write(f"\n{label} ({listing['per_label'][label]} hypotheses)")
            if words:
                table = format_table(
                    ["word", "p(l|w)", "with l", "count"],
                    [[w["word"], f"{w['p']:.3f}", w["label_count"], w["count"]] for w in words],
                )
                self.stdout.write("\n".join("  " + line for line in table.split("\n")))
            else:
                self.stdout.write("  (no word reaches the minimum count)")
