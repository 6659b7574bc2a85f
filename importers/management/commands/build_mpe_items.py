"""python manage.py build_mpe_items --source snli --target mpe-new [--split dev] [--threshold 0.5]"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.models import Dataset, Split
from importers import mpe
from importers.mpe_items import build_items_from_scenes, build_mpe_items, captions_from_file, scenes_with_captions
from importers.services import CorpusImportError


class Command(BaseCommand):
    help = (
        "Build multi-premise items from a caption dataset (SNLI): captions grouped by scene, four as premises, "
        "the hypotheses written for the others as candidates, kept when their word overlap is at most the "
        "threshold (MPE §4.1). Kept items wait for five judgments in the MPE task."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--source", required=True)
        parser.add_argument("--target", required=True)
        parser.add_argument("--split", choices=Split.values, default=Split.DEV)
        parser.add_argument("--threshold", type=float, default=mpe.OVERLAP_THRESHOLD)
        parser.add_argument(
            "--captions",
            help="More captions per scene: FLICKR30K's results_20130124.token (image.jpg#n TAB caption) or an MPE "
            "TSV; the source's hypotheses for the scenes' other captions are the candidates.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not Dataset.objects.filter(slug=options["source"]).exists():
            raise CommandError(f"no dataset {options['source']!r}")
        if not 0.0 <= options["threshold"] <= 1.0:
            raise CommandError("--threshold is a share between 0 and 1")
        try:
            if options["captions"]:
                try:
                    captions, problems = captions_from_file(options["captions"])
                except (OSError, UnicodeDecodeError, mpe.MpeFormatError) as error:
                    raise CommandError(f"cannot read {options['captions']}: {error}") from None
                for line, reason in problems[:20]:
                    self.stdout.write(self.style.WARNING(f"{options['captions']}, line {line}: {reason} (skipped)"))
                source = Dataset.objects.get(slug=options["source"])
                report = build_items_from_scenes(
                    scenes_with_captions(captions, source),
                    options["target"],
                    split=options["split"],
                    threshold=options["threshold"],
                    origin=f"built from {source.slug} and {options['captions']}"[:255],
                )
            else:
                report = build_mpe_items(
                    options["source"], options["target"], split=options["split"], threshold=options["threshold"]
                )
        except CorpusImportError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(self.style.SUCCESS(report.summary()))
