"""`python manage.py load_demo`: demo premises for every genre, demo accounts, studies and pairs.

Safe to run again: rows are keyed by stable ids, so a second run creates nothing.
"""

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from base.console import format_table
from crowd.models import Study
from demo.adversarial import STUDY as ADVERSARIAL_STUDY
from demo.adversarial import ensure_adversarial_demo
from demo.artifacts import DEMO_DRAFT, ensure_artifacts_demo, tag_untagged_pairs
from demo.content import RESEARCHER, VALIDATION_STUDY, WORKER, WRITING_STUDY, load_demo
from demo.mpe import DATASET as MPE_DATASET
from demo.mpe import MPE_STUDY, ensure_mpe_demo
from demo.qualification import ensure_qualification_demo
from demo.quality import ensure_quality_demo
from demo.recast import ensure_recast_demo
from demo.stopping import DATASET as STOPPING_DATASET
from demo.stopping import ensure_stopping_demo
from demo.training import ensure_demo_snapshot_and_runs

DEFAULT_SITE = "http://127.0.0.1:8000"
# The parts of the demo a flag leaves out (--no-training ...), and what each flag's help says it skips.
SKIPPABLE = {
    "training": "the demo snapshot and its small baseline runs",
    "artifacts": "the artifacts demo (a guessable writer's pairs, phenomenon tags, a monitor refresh, the nudge) "
    "and the recast demo (its own dataset)",
    "quality": "the quality demo (a flagged guesser's pairs, a catch trial, an unpaid bonus)",
    "recast": "the recast demo (DNC sentiment template: a two-way dataset with provenance)",
    "adversarial": "the adversarial study (round 1 written, verified and closed, round 2 open on a new CBOW)",
}


def prolific_ids(n: int) -> str:
    """The query string of the demo's n-th Prolific participant (one session each)."""
    return f"PROLIFIC_PID=demo-pid-{n}&STUDY_ID=demo-study&SESSION_ID=demo-session-{n}"


class Command(BaseCommand):
    help = "Load demo premises (every genre), accounts, Prolific studies and written pairs. Idempotent."

    def add_arguments(self, parser: CommandParser) -> None:
        for part, skipped in SKIPPABLE.items():
            parser.add_argument(f"--no-{part}", action="store_true", help=f"skip {skipped}")
        parser.add_argument("--site", default=DEFAULT_SITE, help="the address the demo will be served at")
        parser.add_argument(
            "--serving",
            action="store_true",
            help="the server is started right after (make demo): say so instead of how to start it",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        no_training, no_artifacts, no_quality, no_recast, no_adversarial = (options[f"no_{part}"] for part in SKIPPABLE)
        site, serving = options["site"].rstrip("/"), options["serving"]
        self.stdout.write(
            "Loading the demo: premises for every genre, accounts, studies, written and validated pairs..."
        )
        result = load_demo()
        dataset = result["dataset"]
        if not (result["content_rows"] or result["pairs_created"] or result["validation_labels_added"]):
            self.stdout.write("  already loaded: nothing created.")
        self.stdout.write(ensure_mpe_demo())
        self.stdout.write(ensure_stopping_demo())
        # Like the artifacts demo, extra pairs beside the core demo: --no-artifacts leaves both out.
        if not (no_recast or no_artifacts):
            recast, recast_made = ensure_recast_demo()
            self.stdout.write(
                f"Dataset '{recast.slug}' (two-way, recast with the DNC sentiment template): "
                f"{recast.pairs.count()} pairs, {recast_made} created now."
            )
        draft = None
        if not no_artifacts:
            draft = ensure_artifacts_demo(dataset, stdout=self.stdout)["draft"]
        qualified = aggregation = None
        if not no_quality:
            self.stdout.write(ensure_quality_demo(dataset))
            qualified, test, aggregation = ensure_qualification_demo(dataset, RESEARCHER[0])
            self.stdout.write(
                f"Qualified study '{qualified.slug}' with a {test.items.count()}-item test; "
                f"aggregation run {aggregation.pk} ({aggregation.status}, {aggregation.pair_count} pairs)."
            )
        if not no_artifacts:
            tag_untagged_pairs(self.stdout)  # the quality demo's pairs: the snapshot exports their parses
        if not no_training:
            self.stdout.write("Exporting a demo snapshot and training small baselines on it (seconds)...")
            ensure_demo_snapshot_and_runs(dataset, RESEARCHER[0], stdout=self.stdout)
            if not no_adversarial:
                self.stdout.write(ensure_adversarial_demo(RESEARCHER[0]))
                if not no_artifacts:
                    tag_untagged_pairs(self.stdout)
        # Every figure below is the dashboard's, from the same selectors (dashboard/figures.py).
        self.stdout.write(f"\nThe demo dataset '{dataset.slug}', as the dashboard shows it:")
        call_command("dashboard_figures", "--dataset", dataset.slug, "--site", site, stdout=self.stdout)
        if draft is not None:
            self.stdout.write(
                f"The nudge is on for the study '{WRITING_STUDY['slug']}': the draft \"{DEMO_DRAFT}\" "
                f"written as a contradiction scores p={draft:.2f} (/artifacts/score/)."
            )
        validation = Study.objects.get(slug=VALIDATION_STUDY["slug"])
        signed = f"&sig={validation.link_signature()}" if validation.require_signed_link else ""
        links = [
            ("site", f"{site}/"),
            ("researcher login", f"{RESEARCHER[0]} / {RESEARCHER[1]}"),
            ("worker login", f"{WORKER[0]} / {WORKER[1]}"),
            ("Prolific writing study", f"{site}/study/{WRITING_STUDY['slug']}/?{prolific_ids(1)}"),
            ("Prolific validation study", f"{site}/study/{VALIDATION_STUDY['slug']}/?{prolific_ids(2)}{signed}"),
            ("dashboard (researcher)", f"{site}/dashboard/"),
            ("artifacts (researcher)", f"{site}/dashboard/artifacts/?dataset={dataset.slug}"),
            ("flagged writers", f"{site}/dashboard/workers/?dataset={dataset.slug}"),
            ("the nudge", "in the writing study, write a 'definitely incorrect' sentence with \"not\""),
            ("MPE judgment task (worker)", f"{site}/validate/mpe/next/"),
            ("Prolific MPE study", f"{site}/study/{MPE_STUDY['slug']}/?{prolific_ids(5)}  (keys 1/2/3)"),
            ("MPE items and adjudication", f"{site}/dashboard/mpe/?dataset={MPE_DATASET}"),
            ("recast pairs (provenance)", f"{site}/admin/corpus/pairprovenance/"),
            ("recast preview and save", f"{site}/dashboard/recast/"),
            ("two-way validation study", f"{site}/study/demo-recast-validation/?{prolific_ids(4)}  (keys 1/2)"),
            ("grammaticality task", f"{site}/validate/grammaticality/"),
            ("decided stopping rule (savings)", f"{site}/dashboard/validation/?dataset={STOPPING_DATASET}"),
            ("stopping rules (settings)", f"{site}/dashboard/stopping/"),
            ("cost per gold label (the decided study)", f"{site}/dashboard/costs/"),
        ]
        if qualified is not None and aggregation is not None:
            links += [
                ("flagged guesser (quality)", f"{site}/dashboard/workers/"),
                ("catch trials", f"{site}/dashboard/label/"),
                ("unpaid bonus", f"{site}/dashboard/bonuses/"),
                ("qualified study (test first)", f"{site}/study/{qualified.slug}/?{prolific_ids(3)}"),
                ("aggregation run", f"{site}/dashboard/aggregation/{aggregation.pk}/"),
            ]
        if not (no_training or no_adversarial):
            links += [
                ("adversarial study (round 2)", f"{site}/study/{ADVERSARIAL_STUDY['slug']}/?{prolific_ids(6)}"),
                ("adversarial rounds", f"{site}/dashboard/adversarial/{ADVERSARIAL_STUDY['slug']}/"),
            ]
        links.append(("admin (researcher)", f"{site}/admin/"))
        opening = (
            "The demo is ready; the server starts now. Open:"
            if serving
            else "The demo is ready. Start the server (python manage.py runserver) and open:"
        )
        table = format_table(None, links, align="<<")
        self.stdout.write(self.style.SUCCESS("\n".join(["", opening, *("  " + line for line in table.split("\n"))])))
