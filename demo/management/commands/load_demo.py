"""`python manage.py load_demo`: demo premises for every genre, demo accounts, studies and pairs.

Safe to run again: rows are keyed by stable ids, so a second run creates nothing.
"""
from django.core.management.base import BaseCommand

from demo.artifacts import ensure_artifacts_demo
from demo.content import RESEARCHER, VALIDATION_STUDY, WORKER, WRITING_STUDY, load_demo
from demo.recast import ensure_recast_demo
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
            help="skip the artifacts demo (a guessable writer's pairs, phenomenon tags, a monitor refresh, the nudge) "
                 "and the recast demo (its own dataset)",
        )
        parser.add_argument("--no-recast", action="store_true",
                            help="skip the recast demo (DNC sentiment template: a two-way dataset with provenance)")
        parser.add_argument("--site", default=DEFAULT_SITE, help="the address the demo will be served at")
        parser.add_argument("--serving", action="store_true",
                            help="the server is started right after (make demo): say so instead of how to start it")

    def handle(self, *args, no_training=False, no_artifacts=False, no_recast=False, site=DEFAULT_SITE, serving=False,
               **options):
        site = site.rstrip("/")
        result = load_demo()
        dataset = result["dataset"]
        self.stdout.write(
            f"Dataset '{dataset.slug}': {result['premises']} demo premises; created now: "
            f"{result['content_rows']} genre/prompt rows, {result['pairs_created']} pairs, "
            f"{result['validation_labels_added']} validation labels."
        )
        # Like the artifacts demo, extra pairs beside the core demo: --no-artifacts leaves both out.
        if not (no_recast or no_artifacts):
            recast, recast_made = ensure_recast_demo()
            self.stdout.write(f"Dataset '{recast.slug}' (two-way, recast with the DNC sentiment template): "
                              f"{recast.pairs.count()} pairs, {recast_made} created now.")
        if not no_artifacts:
            self.stdout.write(ensure_artifacts_demo(dataset, stdout=self.stdout))
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
            f"  dashboard (researcher):   {site}/dashboard/",
            f"  artifacts (researcher):   {site}/dashboard/artifacts/?dataset={dataset.slug}  "
            f"(flagged writer: {site}/dashboard/workers/?dataset={dataset.slug}; phenomenon tags: corpus page)",
            "  the nudge: in the writing study, write a 'definitely incorrect' sentence with \"not\"",
            f"  recast pairs:             {site}/admin/corpus/pairprovenance/  (provenance); "
            f"{site}/dashboard/recast/ (preview and save a recast)",
            f"  two-way validation study: {site}/study/demo-recast-validation/?{PROLIFIC_IDS.replace('demo-pid-1', 'demo-pid-3').replace('demo-session-1', 'demo-session-3')}  (keys 1/2)",
            f"  grammaticality task:      {site}/validate/grammaticality/",
            f"  admin (researcher):       {site}/admin/",
        ]
        self.stdout.write(self.style.SUCCESS("\n".join(lines)))
