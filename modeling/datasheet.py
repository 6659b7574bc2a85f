"""The datasheet of a release (issue 42.4; Gebru et al., "Datasheets for Datasets"), filled from the
platform's own records rather than by hand: who wrote and validated the pairs and when, where the
premises come from, how people were paid, who was excluded, the stopping rule, the agreement
figures and the artifacts the monitor found. Only facts found in the data; no clock time, so the
same data always gives the same card.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from decimal import Decimal
from statistics import median
from typing import Any

from django.db.models import Count, Max, Min, Q

from artifacts.models import MonitorRefresh
from corpus.agreement import agreement_stats, coverage_sentences
from corpus.labels import AUTHOR_POSITION, LABELS_PER_PAIR
from corpus.models import Dataset, Genre, Pair, StoppingPolicy, ValidationLabel, Worker
from crowd.models import Study
from quality.models import QualificationTest

from .models import Snapshot
from .snapshots.selectors import pairs_for_export

BATCH_PAIRS = LABELS_PER_PAIR  # a validation batch holds five pairs (design card: "claims a batch of five")


def _date(value: Any) -> str | None:
    return value.date().isoformat() if value is not None else None


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


def datasheet_records(
    snapshot: Snapshot, manifest: Mapping[str, Any], pair_rows: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    """The facts of the card, read from the database for the snapshot's datasets and pairs."""
    slugs = list(snapshot.datasets) or sorted(Dataset.objects.values_list("slug", flat=True))
    datasets = list(Dataset.objects.filter(slug__in=slugs).order_by("slug"))
    pairs = pairs_for_export(snapshot.datasets, snapshot.filters)
    labels = ValidationLabel.objects.filter(pair__in=pairs.values("pk"))
    dates = pairs.aggregate(first=Min("created_at"), last=Max("created_at"))
    label_dates = labels.aggregate(first=Min("created_at"), last=Max("created_at"))
    seconds = sorted(
        value
        for value in labels.filter(position__gt=AUTHOR_POSITION, seconds__isnull=False).values_list(
            "seconds", flat=True
        )
        if value is not None
    )
    genres_seen = Counter(row.get("genre", "") for rows in pair_rows.values() for row in rows)
    genres = {
        genre.slug: {"name": genre.name, "family": genre.family.name, "matched": genre.is_training}
        for genre in Genre.objects.filter(slug__in=genres_seen).select_related("family").order_by("slug")
    }
    studies = list(Study.objects.filter(dataset__in=datasets).order_by("slug"))
    workers_in = Worker.objects.filter(Q(labels__pair__in=pairs.values("pk")) | Q(pairs__in=pairs.values("pk")))
    excluded = workers_in.filter(is_excluded=True).distinct()
    monitor = {}
    for dataset in datasets:
        latest = MonitorRefresh.objects.filter(dataset=dataset, status="done").order_by("-created_at").first()
        if latest is not None:
            monitor[dataset.slug] = {
                "pairs": latest.pairs,
                "overall": latest.overall,
                "flagged_writers": latest.flagged,
            }
    agreement = {}
    for dataset in datasets:
        stats = agreement_stats(dataset)
        alpha = stats["krippendorff_alpha"]["nominal"]
        agreement[dataset.slug] = {
            "pairs": stats["pairs"],
            "five_label_pairs": stats["five_label_pairs"],
            "fleiss_kappa": stats["fleiss_kappa"]["overall"],
            "alpha": alpha["alpha"],
            "alpha_pairs": alpha["pairs"],
            "individual_eq_gold": stats["individual_eq_gold"],
            "coverage": list(coverage_sentences(stats).values()),
        }
    return {
        "title": ", ".join(dataset.name for dataset in datasets) or "NLI pairs",
        "datasets": [
            {"slug": d.slug, "name": d.name, "label_scheme": d.label_scheme, "imported": d.is_imported}
            for d in datasets
        ],
        "genres": {slug: {**facts, "pairs": genres_seen[slug]} for slug, facts in genres.items()},
        "pairs_written": (_date(dates["first"]), _date(dates["last"])),
        "labels_given": (_date(label_dates["first"]), _date(label_dates["last"])),
        "writers": pairs.exclude(author__isnull=True).aggregate(n=Count("author", distinct=True))["n"],
        "validators": labels.filter(position__gt=AUTHOR_POSITION, worker__isnull=False).aggregate(
            n=Count("worker", distinct=True)
        )["n"],
        "median_seconds_per_label": median(seconds) if seconds else None,
        "payment": _payment(studies, median(seconds) if seconds else None),
        "qualification": [
            {"study": test.study.slug, "items": test.items.count(), "pass_mark": test.pass_mark}
            for test in QualificationTest.objects.filter(study__in=studies).select_related("study").order_by("pk")
        ],
        "excluded_workers": excluded.count(),
        "excluded_labels": labels.filter(worker__is_excluded=True).count(),
        "stopping_rules": [
            (policy.dataset.slug, policy.split, policy.rule)
            for policy in StoppingPolicy.objects.filter(dataset__in=datasets).select_related("dataset").order_by("pk")
        ],
        "stopped_early": manifest.get("stopping_rules") or {},
        "gold_sources": manifest.get("gold_sources") or {},
        "retired_pairs": Pair.objects.filter(dataset__in=datasets, adjudicated_label="-").count(),
        "agreement": agreement,
        "monitor": monitor,
    }


def _figure(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def datasheet_markdown(
    records: Mapping[str, Any], manifest: Mapping[str, Any], splits: Mapping[str, Mapping[str, int]]
) -> str:
    """The card's text under the YAML header."""
    r = records
    lines = [f"# {r['title']}", ""]
    lines += [
        "Natural language inference pairs (premise, hypothesis, label) collected or imported on the NLI annotation "
        "platform, exported from one snapshot and converted to Parquet. Every figure below is read from the "
        "platform's records at release time.",
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        'pairs = load_dataset("parquet", data_dir="pairs")  # or, from the Hub: load_dataset("<owner>/<name>")',
        *(['labels = load_dataset("<owner>/<name>", "labels")  # one row per label'] if "labels" in splits else []),
        "```",
        "",
        "To publish: `huggingface-cli upload <owner>/<name> . --repo-type dataset` from this folder (nothing is "
        "uploaded by the platform).",
        "",
        "## Files and splits",
        "",
        "| configuration | split | rows |",
        "|---|---|---|",
    ]
    for config, counts in splits.items():
        lines += [f"| {config} | {split} | {rows:,} |" for split, rows in counts.items()]
    lines += ["", f"Snapshot content hash: `{manifest.get('content_hash', '')}`.", ""]
    lines += ["## Composition", ""]
    for dataset in r["datasets"]:
        origin = "imported from its released files" if dataset["imported"] else "written and validated on the platform"
        lines.append(f"- **{dataset['name']}** (`{dataset['slug']}`): {dataset['label_scheme']} labels, {origin}.")
    lines += ["", "Premise sources (genres) and their prompt families:", ""]
    lines += ["| genre | prompt family | matched (in train) | pairs |", "|---|---|---|---|"]
    for slug, genre in r["genres"].items():
        lines.append(
            f"| {genre['name']} (`{slug}`) | {genre['family']} | {'yes' if genre['matched'] else 'no'} | {genre['pairs']:,} |"
        )
    lines += [
        "",
        f"Gold label sources: {', '.join(f'{k} {v:,}' for k, v in r['gold_sources'].items()) or 'n/a'}. "
        f"Pairs retired by a researcher (left out): {r['retired_pairs']:,}.",
        "",
    ]
    lines += ["## Collection process", ""]
    lines.append(
        f"- Pairs created: {r['pairs_written'][0] or 'n/a'} to {r['pairs_written'][1] or 'n/a'}; "
        f"labels given: {r['labels_given'][0] or 'n/a'} to {r['labels_given'][1] or 'n/a'}."
    )
    lines.append(
        f"- Writers (workers with a pair): {r['writers']:,}; validators (workers with a validation label): {r['validators']:,}."
    )
    lines.append(f"- Median seconds per validation label: {_figure(r['median_seconds_per_label'], 1)}.")
    for row in r["payment"]:
        hourly = (
            f", median hourly pay {row['median_hourly_pay']} {row['currency']}" if "median_hourly_pay" in row else ""
        )
        lines.append(
            f"- Study `{row['study']}` ({row['task']}): {row['payment_per_task']} {row['currency']} per task{hourly}."
        )
    if not r["payment"]:
        lines.append("- No paid study on the platform for these datasets.")
    for test in r["qualification"]:
        lines.append(
            f"- Qualification for `{test['study']}`: {test['items']} items, pass mark {test['pass_mark']:.0%}."
        )
    lines.append(
        f"- Excluded workers: {r['excluded_workers']:,}; their labels ({r['excluded_labels']:,}) count in no gold "
        "label and no figure (the labels configuration keeps them, marked `excluded`)."
    )
    rules = (
        ", ".join(f"{slug} {split}: {rule}" for slug, split, rule in r["stopping_rules"])
        or "fixed (five labels a pair)"
    )
    lines.append(f"- Stopping rule: {rules}.")
    lines += ["", "## Agreement", ""]
    lines += [
        "| dataset | pairs | five-label pairs | Fleiss κ | Krippendorff's α | α's pairs | individual = gold |",
        "|---|---|---|---|---|---|---|",
    ]
    for slug, a in r["agreement"].items():
        lines.append(
            f"| {slug} | {a['pairs']:,} | {a['five_label_pairs']:,} | {_figure(a['fleiss_kappa'])} | {_figure(a['alpha'])} "
            f"| {a['alpha_pairs']:,} | {_figure(a['individual_eq_gold'])} |"
        )
    for slug, a in r["agreement"].items():
        lines += ["", f"{slug}: " + " ".join(a["coverage"])]
    lines += ["", "## Known artifacts", ""]
    for slug, m in r["monitor"].items():
        overall = m["overall"] or {}
        accuracy = overall.get("accuracy")
        lines.append(
            f"- {slug}: a hypothesis-only classifier (the platform's artifact monitor) on {m['pairs']:,} pairs: "
            f"accuracy {_figure(accuracy)}; writers flagged: {m['flagged_writers']}."
        )
    if not r["monitor"]:
        lines.append("- The artifact monitor has not been run on these datasets.")
    lines += [
        "",
        "## Personal information",
        "",
        "Annotators appear only as pseudonyms (`a1`, `a2`, … in the labels configuration), stable within this "
        "release and unrelated to any market's worker id.",
        "",
    ]
    return "\n".join(lines)
