"""python manage.py agreement_stats [--dataset NAME] [--split S] [--json]"""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.agreement import adaptive_stopping_in_scope, agreement_stats, coverage_sentences
from corpus.management import DATA_COMMAND_CHECKS
from corpus.models import Dataset, Split
from corpus.scope import Scope

ROWS = [
    ("Pairs", "pairs", "count"),
    ("Pairs with all five labels", "five_label_pairs", "count"),
    ("Pairs w/ unanimous gold label", "unanimous", "pct"),
    ("Individual label = gold label", "individual_eq_gold", "pct"),
    ("Individual label = author's label", "individual_eq_author", "pct"),
    ("Gold label = author's label", "gold_eq_author", "pct"),
    ("Gold label != author's label", "gold_ne_author", "pct"),
    ("No gold label (no 3 labels match)", "no_gold", "pct"),
]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}%"


def _kappa(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


class Command(BaseCommand):
    requires_system_checks = DATA_COMMAND_CHECKS  # the models' checks only (corpus.management)
    help = "Validation agreement statistics (MultiNLI Table 2, SNLI Table 3, per-genre agreement) computed in SQL."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", help="Dataset slug (default: all datasets).")
        parser.add_argument("--split", choices=Split.values)
        parser.add_argument("--json", action="store_true", help="Print the statistics as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        dataset = options["dataset"]
        if dataset and not Dataset.objects.filter(slug=dataset).exists():
            raise CommandError(f"no dataset {dataset!r}")
        scope = Scope.named(dataset, options["split"])
        stats = agreement_stats(scope)
        if options["json"]:
            self.stdout.write(json.dumps(stats, indent=2))
            return
        out = self.stdout.write
        for title, key, kind in ROWS:
            value = stats[key]
            out(f"{title:<36} {value if kind == 'count' else _pct(value):>10}")
        out("Fleiss kappa")
        # Three-way: contradiction, entailment, neutral, overall; two-way and ordinal: their own categories.
        for name in sorted(stats["fleiss_kappa"], key=lambda name: (name == "overall", name)):
            out(f"  {name:<34} {_kappa(stats['fleiss_kappa'][name]):>10}")
        out("Krippendorff's alpha (every pair with at least two labels)")
        for metric, figure in stats["krippendorff_alpha"].items():
            out(
                f"  {metric + ' overall':<34} {_kappa(figure['alpha']):>10}   {figure['pairs']} pairs, {_pct(figure['share'])}"
            )
            for part in ("per_split", "per_genre"):
                for name, row in figure[part].items():
                    out(
                        f"  {metric + ' ' + name:<34} {_kappa(row['alpha']):>10}   {row['pairs']} pairs, {_pct(row['share'])}"
                    )
        rules = adaptive_stopping_in_scope(scope)
        if rules:
            out(
                f"Stopping rule {', '.join(rules)} in scope: only contested pairs take five labels, so read alpha, "
                "not kappa, as the corpus's agreement."
            )
        for sentence in coverage_sentences(stats).values():
            out(sentence)
        out("Gold labels")
        for label, count in stats["gold_counts"].items():
            out(f"  {label:<34} {count:>10}")
        out("Gold labels by source (crowd: 3 of 5; imported: the source file's, not validated)")
        for source, count in stats["gold_sources"].items():
            out(f"  {source:<34} {count:>10}")
        out(f"{'Genre':<20} {'pairs':>8} {'agreement':>10}")
        for genre, row in stats["per_genre"].items():
            out(f"{genre:<20} {row['pairs']:>8} {_pct(row['agreement']):>10}")
