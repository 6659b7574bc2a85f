"""`python manage.py load_demo`: demo premises for every genre, demo accounts, studies and pairs.

Safe to run again: rows are keyed by stable ids, so a second run creates nothing.
"""
from django.core.management.base import BaseCommand

from demo.artifacts import ensure_artifacts_demo
from demo.content import RESEARCHER, VALIDATION_STUDY, WORKER, WRITING_STUDY, load_demo
from demo.mpe import DATASET as MPE_DATASET
from demo.mpe import ensure_mpe_demo
from demo.qualification import ensure_qualification_demo
from demo.quality import ensure_quality_demo
from demo.training import ensure_demo_snapshot_and_runs

DEFAULT_SITE = "http://127.0.0.1:8000"
PROLIFIC_IDS = "PROLIFIC_PID=demo-pid-1&STUDY_ID=demo-study&SESSION_ID=demo-session-1"


class Command(BaseCommand):
    help = "Load demo premises (every genre), accounts, Prolific studies and written pairs. Idempotent."

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-training", action="store_true", help="skip the demo snapshot and its small baseline runs"
        )
        parser.add_argument(
            "--no-artifacts", action="store_true",
            help="skip the artifacts demo (a guessable writer's pairs, phenomenon tags, a monitor refresh, the nudge)",
        )
        parser.add_argument(
            "--no-quality", action="store_true",
            help="skip the quality demo (a flagged guesser's pairs, a catch trial, an unpaid bonus)",
        )
        parser.add_argument("--site", default=DEFAULT_SITE, help="the address the demo will be served at")
        parser.add_argument("--serving", action="store_true",
                            help="the server is started right after (make demo): say so instead of how to start it")

    def handle(self, *args, no_training=False, no_artifacts=False, no_quality=False, site=DEFAULT_SITE, serving=False,
               **options):
        site = site.rstrip("/")
        result = load_demo()
        dataset = result["dataset"]
        self.stdout.write(
            f"Dataset '{dataset.slug}': {result['premises']} demo premises; created now: "
            f"{result['content_rows']} genre/prompt rows, {result['pairs_created']} pairs, "
            f"{result['validation_labels_added']} validation labels."
        )
        self.stdout.write(ensure_mpe_demo())
        if not no_artifacts:
            self.stdout.write(ensure_artifacts_demo(dataset, stdout=self.stdout))
        if not no_quality:
            self.stdout.write(ensure_quality_demo(dataset))
            qualified, test, aggregation = ensure_qualification_demo(dataset, RESEARCHER[0])
            self.stdout.write(
                f"Qualified study '{qualified.slug}' with a {test.items.count()}-item test; "
                f"aggregation run {aggregation.pk} ({aggregation.status}, {aggregation.pair_count} pairs)."
            )
        if not no_training:
            self.stdout.write("Exporting a demo snapshot and training small baselines on it (seconds)...")
            snapshot, runs = ensure_demo_snapshot_and_runs(dataset, RESEARCHER[0], stdout=self.stdout)
            self.stdout.write(f"Snapshot {snapshot.pk} ({snapshot.row_count} pairs); {len(runs)} new training runs.")
        lines = [
            "",
            "The demo is ready; the server starts now. Open:" if serving else
            "The demo is ready. Start the server (python manage.py runserver) and open:",
            f"  {site}/",
            f"  researcher login: {RESEARCHER[0]} / {RESEARCHER[1]}",
            f"  worker login:     {WORKER[0]} / {WORKER[1]}",
            f"  Prolific writing study:   {site}/study/{WRITING_STUDY['slug']}/?{PROLIFIC_IDS}",
            f"  Prolific validation study: {site}/study/{VALIDATION_STUDY['slug']}/?{PROLIFIC_IDS.replace('demo-pid-1', 'demo-pid-2').replace('demo-session-1', 'demo-session-2')}",
            f"  qualified study (test first): {site}/study/{qualified.slug}/?{PROLIFIC_IDS.replace('demo-pid-1', 'demo-pid-3').replace('demo-session-1', 'demo-session-3')}",
            f"  dashboard (researcher):   {site}/dashboard/",
            f"  aggregation (researcher): {site}/dashboard/aggregation/{aggregation.pk}/",
            f"  artifacts (researcher):   {site}/dashboard/artifacts/?dataset={dataset.slug}  "
            f"(flagged writer: {site}/dashboard/workers/?dataset={dataset.slug}; phenomenon tags: corpus page)",
            "  the nudge: in the writing study, write a 'definitely incorrect' sentence with \"not\"",
            f"  MPE judgment task (worker): {site}/validate/mpe/next/",
            f"  MPE items, statistics and adjudication queue (researcher): {site}/dashboard/mpe/?dataset={MPE_DATASET}",
            f"  quality (researcher):     {site}/dashboard/workers/ (flagged guesser), {site}/dashboard/label/ "
            f"(catch trials), {site}/dashboard/bonuses/ (unpaid bonus)",
            f"  admin (researcher):       {site}/admin/",
        ]
        self.stdout.write(self.style.SUCCESS("\n".join(lines)))
