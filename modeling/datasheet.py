"""The datasheet of a release (Gebru et al., "Datasheets for Datasets"), read from the
snapshot alone: a release made today and one made next month from the same snapshot
describe the same data, whatever happened to the database in between.

Two sources, both the snapshot's: its files, counted (`SplitTally`), and its manifest, with the
`provenance` the export wrote there (`snapshot_provenance`). A snapshot exported before the
manifest kept it gets a card that says so rather than one filled from today's database. No clock
time anywhere, so the same snapshot always gives the same card.
"""

import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from decimal import Decimal
from statistics import median
from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

from artifacts.models import MonitorRefresh
from corpus.agreement import fleiss_kappa_from_sums
from corpus.alpha import NOMINAL, ORDINAL, alpha_from_votes, votes_of
from corpus.labels import AUTHOR_POSITION, LABELS_PER_PAIR, ORDINAL_SCHEME, ORDINAL_VALUES
from corpus.models import (
    Adjudication,
    AdjudicationSource,
    Dataset,
    Genre,
    Pair,
    StoppingPolicy,
    ValidationLabel,
)
from crowd.models import Study
from quality.models import QualificationTest

from .snapshots.format import manifest_labels
from .snapshots.selectors import pairs_for_export

BATCH_PAIRS = LABELS_PER_PAIR  # a validation batch holds five pairs (design card: "claims a batch of five")
PROVENANCE_KEY = "provenance"


# --- At export time: the records the card needs that only the database holds ---------------------


def _payment(studies: Sequence[Study], seconds_per_label: float | None) -> list[dict[str, Any]]:
    """Per study: payment per task, and for validation studies the median hourly pay implied by the
    median seconds a label took (a task is a batch of five labels)."""
    rows = []
    for study in studies:
        row: dict[str, Any] = {
            "study": study.slug,
            "task": study.task_kind,
            "payment_per_task": f"{study.payment_per_task:.2f}",
            "currency": study.bonus_currency,
        }
        if study.task_kind == "validation" and seconds_per_label and study.payment_per_task > 0:
            hourly = study.payment_per_task / Decimal(seconds_per_label * BATCH_PAIRS) * 3600
            row["median_hourly_pay"] = f"{hourly:.2f}"
        rows.append(row)
    return rows


# The labels whose seconds the median is taken of: known and not zero.
TIMED = Q(seconds__isnull=False) & ~Q(seconds=0)


def median_seconds(labels: QuerySet[ValidationLabel], *, timed_count: int | None = None) -> float | None:
    """statistics.median of the labels' seconds, unknown and zero left out (None when none is left),
    from the middle one or two the database hands over: the same float, without reading every label.
    `timed_count`: how many of `labels` are TIMED, when the caller counted them already."""
    timed = labels.filter(TIMED).order_by("seconds")
    count = timed.count() if timed_count is None else timed_count
    if not count:
        return None
    middle = timed.values_list("seconds", flat=True)[(count - 1) // 2 : count // 2 + 1]
    return median([value for value in middle if value is not None])


def snapshot_provenance(
    datasets: Sequence[str],
    filters: Mapping[str, Any],
    *,
    upper_id: int | None = None,
    genre_ids: Collection[int] | None = None,
) -> dict[str, Any]:
    """The platform's records about a snapshot's pairs (ids up to `upper_id`), kept in its manifest
    under PROVENANCE_KEY so that a release describes the data as it was exported: no dates, only
    what the same data always gives. `genre_ids`: those pairs' genres, when already counted."""
    slugs = list(datasets) or sorted(Dataset.objects.values_list("slug", flat=True))
    dataset_rows = list(Dataset.objects.filter(slug__in=slugs).order_by("slug"))
    pairs: QuerySet[Pair] = pairs_for_export(datasets, filters)
    pairs = pairs.filter(pk__lte=upper_id) if upper_id is not None else pairs.none()
    pair_ids = pairs.values("pk")
    labels = ValidationLabel.objects.filter(pair__in=pair_ids)
    validator_labels = labels.filter(position__gt=AUTHOR_POSITION)
    # One read of the validators' labels for both figures (COUNT DISTINCT leaves unknown workers out).
    validators = validator_labels.aggregate(timed=Count("pk", filter=TIMED), workers=Count("worker", distinct=True))
    seconds_per_label = median_seconds(validator_labels, timed_count=validators["timed"])
    of_pairs: Any = genre_ids if genre_ids is not None else pairs.values("premise__genre_id").order_by().distinct()
    genres = {
        genre.slug: {"name": genre.name, "family": genre.family.name, "matched": genre.is_training}
        for genre in Genre.objects.filter(pk__in=of_pairs).select_related("family").order_by("slug")
    }
    studies = list(Study.objects.filter(dataset__in=dataset_rows).order_by("slug"))
    monitor = {}
    for dataset in dataset_rows:
        latest = MonitorRefresh.objects.filter(dataset=dataset, status="done").order_by("-created_at", "-pk").first()
        if latest is not None:
            accuracy = (latest.overall or {}).get("accuracy")
            monitor[dataset.slug] = {"pairs": latest.pairs, "accuracy": accuracy, "flagged_writers": latest.flagged}
    provenance: dict[str, Any] = {
        "datasets": [
            {"slug": d.slug, "name": d.name, "label_scheme": d.label_scheme, "imported": d.is_imported}
            for d in dataset_rows
        ],
        "genres": genres,
        "writers": pairs.exclude(author__isnull=True).aggregate(n=Count("author", distinct=True))["n"],
        "validators": validators["workers"],
        "median_seconds_per_label": seconds_per_label,
        "payment": _payment(studies, seconds_per_label),
        "qualification": [
            {"study": test.study.slug, "items": test.items.count(), "pass_mark": test.pass_mark}
            for test in QualificationTest.objects.filter(study__in=studies).select_related("study").order_by("pk")
        ],
        "excluded_workers": labels.filter(excluded=True).values("worker_id").distinct().count(),
        "excluded_labels": labels.filter(excluded=True).count(),
        "stopping_policies": [
            [policy.dataset.slug, policy.split, policy.rule]
            for policy in StoppingPolicy.objects.filter(dataset__in=dataset_rows)
            .select_related("dataset")
            .order_by("dataset__slug", "split", "pk")
        ],
        "retired_pairs": Pair.objects.filter(
            dataset__in=dataset_rows, adjudicated_label="-", pk__lte=upper_id or 0
        ).count(),
        "monitor": monitor,
    }
    # Pairs whose gold a model's vote decided (a study turned it on, model_annotators.live_vote);
    # the key only where there are some, so a snapshot without any keeps the manifest it had.
    voted = sorted(model_vote_pair_ids(pairs))
    if voted:
        provenance["model_vote_pairs"] = voted
    return provenance


def model_vote_pair_ids(pairs: QuerySet[Pair]) -> list[str]:
    """The pairIDs of these pairs whose gold stands as a model's vote set it (their latest
    adjudication's source is model_vote and not withdrawn since)."""
    latest = Adjudication.objects.filter(pair=OuterRef("pk")).order_by("-created_at", "-pk").values("source")[:1]
    return list(
        pairs.exclude(adjudicated_label="")
        .annotate(decided_by=Subquery(latest))
        .filter(decided_by=AdjudicationSource.MODEL_VOTE)
        .values_list("pair_id", flat=True)
    )


# --- At release time: figures counted from the snapshot's pair files --------------------------------


class SplitTally:
    """Rows, genres, gold labels, datasets and agreement of one split file, counted row by row. A row
    only counts its (labels, gold) pattern, a few dictionary updates; `figures` sums the patterns."""

    def __init__(self, manifest: Mapping[str, Any]) -> None:
        self.ordinal = manifest.get("label_scheme") == ORDINAL_SCHEME
        # Ordinal rows carry the 1–5 ratings as their labels; the others the scheme's words.
        self.categories = tuple(str(v) for v in ORDINAL_VALUES) if self.ordinal else manifest_labels(manifest)
        self.rows = 0
        self.genres: Counter[str] = Counter()
        self.gold: Counter[str] = Counter()
        self.datasets: Counter[str] = Counter()
        self.patterns: Counter[tuple[tuple[str, ...], str]] = Counter()

    def add(self, row: Mapping[str, Any]) -> None:
        self.rows += 1
        gold = row.get("gold_label") or "-"
        self.genres[row.get("genre") or ""] += 1
        self.gold[gold] += 1
        self.datasets[row.get("dataset") or ""] += 1
        self.patterns[tuple(map(str, row.get("annotator_labels") or ())), gold] += 1

    def add_counts(
        self,
        rows: int,
        genres: Mapping[str, int],
        gold: Mapping[str, int],
        datasets: Mapping[str, int],
        patterns: Mapping[tuple[tuple[str, ...], str], int],
    ) -> None:
        """What `add` counts, already counted for many rows (the release counts a file's rows in Arrow)."""
        self.rows += rows
        self.genres.update(genres)
        self.gold.update(gold)
        self.datasets.update(datasets)
        self.patterns.update(patterns)

    def figures(self) -> dict[str, Any]:
        units: Counter[tuple[str, ...]] = Counter()
        five_label_pairs = labels_eq_gold = 0
        category_sums = [0] * len(self.categories)
        square_sums = [0] * len(self.categories)
        for (labels, gold), n in self.patterns.items():
            units[labels] += n
            if len(labels) == LABELS_PER_PAIR:
                five_label_pairs += n
                for index, category in enumerate(self.categories):
                    votes = labels.count(category)
                    category_sums[index] += votes * n
                    square_sums[index] += votes * votes * n
                labels_eq_gold += labels.count(gold) * n
        histogram: Counter[tuple[int, ...]] = Counter()
        for labels, n in units.items():
            histogram[votes_of(labels, self.categories)] += n
        alpha = alpha_from_votes(histogram.items(), len(self.categories), ORDINAL if self.ordinal else NOMINAL)
        kappa = fleiss_kappa_from_sums(five_label_pairs, LABELS_PER_PAIR, category_sums, square_sums)
        eq_gold = None
        if five_label_pairs and not self.ordinal:  # an ordinal row's gold is two-way, its labels ratings
            eq_gold = labels_eq_gold / (LABELS_PER_PAIR * five_label_pairs)
        return {
            "rows": self.rows,
            "genres": dict(sorted(self.genres.items())),
            "gold": dict(sorted(self.gold.items())),
            "datasets": dict(sorted(self.datasets.items())),
            "five_label_pairs": five_label_pairs,
            "fleiss_kappa": kappa,
            "alpha": alpha.alpha,
            "alpha_metric": ORDINAL if self.ordinal else NOMINAL,
            "alpha_pairs": alpha.pairs,
            "individual_eq_gold": eq_gold,
        }


# --- The card's text -----------------------------------------------------------------------------


def _figure(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def card_title(manifest: Mapping[str, Any]) -> str:
    provenance = manifest.get(PROVENANCE_KEY) or {}
    names = [d["name"] for d in provenance.get("datasets") or []]
    return ", ".join(names or manifest.get("datasets") or []) or "NLI pairs"


def datasheet_markdown(
    manifest: Mapping[str, Any],
    splits: Mapping[str, Mapping[str, int]],
    figures: Mapping[str, Mapping[str, Any]],
    file_hashes: Mapping[str, str],
    *,
    quality_flags: bool,
    dropped_columns: Sequence[str],
) -> str:
    """The card's text under the YAML header. `splits`: {config: {split: rows}}; `figures`: {split:
    SplitTally.figures()}; `file_hashes`: {release file: sha256}; `quality_flags`: whether the
    labels configuration keeps the per-annotator quality columns (`dropped_columns` when not)."""
    provenance: Mapping[str, Any] = manifest.get(PROVENANCE_KEY) or {}
    has_labels = "labels" in splits
    lines = [f"# {card_title(manifest)}", ""]
    lines += [
        "Natural language inference pairs (premise, hypothesis, label) collected or imported on the NLI annotation "
        "platform, exported as one snapshot and converted to Parquet. Every figure below is read from that "
        "snapshot (its manifest and its files), so this card describes exactly the files beside it.",
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        'pairs = load_dataset("path/to/this/folder")  # or, from the Hub: load_dataset("<owner>/<name>")',
        *(['labels = load_dataset("path/to/this/folder", "labels")  # one row per label'] if has_labels else []),
        "```",
        "",
        f"Split names are the snapshot's files' ({', '.join(f'`{s}`' for s in splits.get('pairs', {}))}); "
        "the configurations in the header name every file, so no split is renamed on loading.",
        "",
        "To publish: `huggingface-cli upload <owner>/<name> . --repo-type dataset` from this folder (nothing is "
        "uploaded by the platform).",
        "",
        "## Files and splits",
        "",
        "| configuration | split | rows | sha256 |",
        "|---|---|---|---|",
    ]
    for config, counts in splits.items():
        for split, rows in counts.items():
            sha = file_hashes.get(f"{config}/{split}.parquet", "")
            lines.append(f"| {config} | {split} | {rows:,} | `{sha[:16]}` |")
    lines += [
        "",
        f"Snapshot content hash: `{manifest.get('content_hash', '')}` ({manifest.get('content_hash_rule', '')}); "
        f"format {manifest.get('format', '')}.",
        "",
    ]
    lines += _filters(manifest)
    lines += _composition(manifest, provenance, figures)
    lines += _collection(manifest, provenance)
    lines += _agreement(figures)
    lines += _artifacts(provenance)
    lines += _personal(has_labels, quality_flags, dropped_columns)
    return "\n".join(lines)


def _filters(manifest: Mapping[str, Any]) -> list[str]:
    filters = manifest.get("filters") or {}
    lines = ["## Filters of the snapshot", ""]
    listed = [f"- `{key}`: `{json.dumps(value, ensure_ascii=False)}`" for key, value in sorted(filters.items())]
    lines += listed or ["- none"]
    return [*lines, ""]


def _composition(
    manifest: Mapping[str, Any], provenance: Mapping[str, Any], figures: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    lines = ["## Composition", ""]
    described = provenance.get("datasets")
    if described:
        for dataset in described:
            origin = (
                "imported from its released files" if dataset["imported"] else "written and validated on the platform"
            )
            lines.append(f"- **{dataset['name']}** (`{dataset['slug']}`): {dataset['label_scheme']} labels, {origin}.")
    else:
        lines.append(f"- Datasets: {', '.join(f'`{s}`' for s in manifest.get('datasets') or []) or 'all'}.")
    genres_known = provenance.get("genres") or {}
    lines += ["", "Pairs per split and premise source (genre):", ""]
    lines += ["| split | genre | prompt family | matched (a training genre) | pairs |", "|---|---|---|---|---|"]
    for split, figure in figures.items():
        for slug, rows in figure["genres"].items():
            known = genres_known.get(slug)
            name = f"{known['name']} (`{slug}`)" if known else f"`{slug}`"
            family = known["family"] if known else "n/a"
            matched = ("yes" if known["matched"] else "no") if known else "n/a"
            lines.append(f"| {split} | {name} | {family} | {matched} | {rows:,} |")
    lines += ["", "Gold labels per split (`-`: no label has a majority):", ""]
    golds = sorted({label for figure in figures.values() for label in figure["gold"]})
    lines += [f"| split | {' | '.join(golds)} |", "|---|" + "---|" * len(golds)]
    for split, figure in figures.items():
        lines.append(f"| {split} | " + " | ".join(f"{figure['gold'].get(label, 0):,}" for label in golds) + " |")
    sources = manifest.get("gold_sources") or {}
    lines += ["", f"Gold label sources: {', '.join(f'{k} {v:,}' for k, v in sources.items()) or 'n/a'}."]
    if "retired_pairs" in provenance:
        lines += ["", f"Pairs retired by a researcher (left out): {provenance['retired_pairs']:,}."]
    if provenance.get("model_vote_pairs"):
        lines += [
            "",
            f"Pairs whose gold label a model's vote decided (two human labels and a calibrated model agreeing; "
            f"their pairIDs are in the manifest's provenance.model_vote_pairs): {len(provenance['model_vote_pairs']):,}.",
        ]
    return [*lines, ""]


def _collection(manifest: Mapping[str, Any], provenance: Mapping[str, Any]) -> list[str]:
    lines = ["## Collection process", ""]
    if not provenance:
        lines += [
            "This snapshot was exported before its manifest kept the platform's records (names, payment, "
            "qualification, exclusions, stopping policies, the artifact monitor); they are left out here "
            "rather than read from a database that may have changed since.",
            "",
        ]
    else:
        lines.append(
            f"- Writers (workers with a pair): {provenance['writers']:,}; validators (workers with a validation "
            f"label): {provenance['validators']:,}."
        )
        lines.append(f"- Median seconds per validation label: {_figure(provenance['median_seconds_per_label'], 1)}.")
        for row in provenance["payment"]:
            hourly = (
                f", median hourly pay {row['median_hourly_pay']} {row['currency']}"
                if "median_hourly_pay" in row
                else ""
            )
            lines.append(
                f"- Study `{row['study']}` ({row['task']}): {row['payment_per_task']} {row['currency']} per task{hourly}."
            )
        if not provenance["payment"]:
            lines.append("- No paid study on the platform for these datasets.")
        for test in provenance["qualification"]:
            lines.append(
                f"- Qualification for `{test['study']}`: {test['items']} items, pass mark {test['pass_mark']:.0%}."
            )
        lines.append(
            f"- Excluded workers: {provenance['excluded_workers']:,}; their labels ({provenance['excluded_labels']:,}) "
            "count in no gold label and no figure."
        )
        rules = (
            ", ".join(f"{slug} {split}: {rule}" for slug, split, rule in provenance["stopping_policies"])
            or "fixed (five labels a pair)"
        )
        lines.append(f"- Stopping rule: {rules}.")
    stopped = manifest.get("stopping_rules") or {}
    for rule, counts in sorted(stopped.items()):
        lines.append(
            f"- Pairs on the {rule} rule: {counts.get('pairs', 0):,}, stopped early: {counts.get('stopped_early', 0):,}."
        )
    typing = manifest.get("typing_evidence")
    if typing:
        flags = ", ".join(f"{flag} {n:,}" for flag, n in sorted((typing.get("flags") or {}).items()))
        lines.append(
            f"- How hypotheses were written: {typing.get('recorded', 0):,} with a typing record, "
            f"{typing.get('with_evidence', 0):,} with the browser's evidence, {typing.get('flagged', 0):,} flagged"
            f"{f' ({flags})' if flags else ''}."
        )
    return [*lines, ""]


def _agreement(figures: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = ["## Agreement", ""]
    lines += [
        "Counted from each row's `annotator_labels` in the files (the author's label first; excluded workers' "
        "labels are not in them).",
        "",
        "| split | pairs | five-label pairs | Fleiss κ | Krippendorff's α | α's pairs | individual = gold |",
        "|---|---|---|---|---|---|---|",
    ]
    for split, f in figures.items():
        lines.append(
            f"| {split} | {f['rows']:,} | {f['five_label_pairs']:,} | {_figure(f['fleiss_kappa'])} | "
            f"{_figure(f['alpha'])} ({f['alpha_metric']}) | {f['alpha_pairs']:,} | {_figure(f['individual_eq_gold'])} |"
        )
    lines.append("")
    for split, f in figures.items():
        lines.append(
            f"{split}: Fleiss κ and individual = gold cover the {f['five_label_pairs']:,} pairs with all five labels "
            f"({_share(f['five_label_pairs'], f['rows'])}); Krippendorff's α ({f['alpha_metric']}) covers the "
            f"{f['alpha_pairs']:,} pairs with at least two labels ({_share(f['alpha_pairs'], f['rows'])})."
        )
    return [*lines, ""]


def _artifacts(provenance: Mapping[str, Any]) -> list[str]:
    lines = ["## Known artifacts", ""]
    monitor = provenance.get("monitor") or {}
    for slug, m in monitor.items():
        lines.append(
            f"- {slug}: a hypothesis-only classifier (the platform's artifact monitor) on {m['pairs']:,} pairs: "
            f"accuracy {_figure(m['accuracy'])}; writers flagged: {m['flagged_writers']}."
        )
    if not monitor:
        lines.append("- No artifact monitor result was recorded with this snapshot.")
    return [*lines, ""]


def _personal(has_labels: bool, quality_flags: bool, dropped_columns: Sequence[str]) -> list[str]:
    lines = ["## Personal information", ""]
    if not has_labels:
        lines.append(
            "No annotator appears in this release: it holds pairs only (the snapshot has no label-level file)."
        )
        return [*lines, ""]
    lines.append(
        "Annotators appear only as pseudonyms (`a1`, `a2`, … in the labels configuration), stable within this "
        "release and unrelated to any market's worker id. Labels of excluded workers are kept there, marked "
        "`excluded`."
    )
    lines.append("")
    if quality_flags:
        lines.append(
            "Per-annotator quality records (`flags`, `catch_trials_seen`, `catch_trials_matched`) are published, "
            "pseudonymously, at the researcher's request."
        )
    else:
        left = ", ".join(f"`{name}`" for name in dropped_columns) or "none"
        lines.append(f"Per-annotator quality records are not published (the default); columns left out: {left}.")
    return [*lines, ""]
