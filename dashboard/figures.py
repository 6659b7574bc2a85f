"""A dataset's headline figures for the console (`manage.py dashboard_figures`), from the selectors
and filters of their dashboard pages, so the console says what the dashboard shows
(tests/demo/test_demo_console.py compares them page by page)."""

from artifacts.selectors import monitor_overview, tag_figures
from base.console import format_table
from corpus.models import Dataset
from corpus.scope import Scope
from dashboard.queries.collection import collection_overview
from dashboard.queries.validation import validation_overview
from dashboard.templatetags.dashboard_tags import pct, thousands
from modeling.models import RunStatus, Snapshot, TrainingRun


def dataset_figures(dataset: Dataset, site: str = "") -> list[tuple[str, str, str]]:
    """[(page, figures, address)]; snapshots and training: its first done snapshot, runs on all genres."""
    scope = f"?dataset={dataset.slug}"
    of_dataset = Scope.of_dataset(dataset)
    overview = collection_overview(of_dataset)
    rows = [
        (
            "collection",
            f"{thousands(overview['totals']['premises'])} premises, {thousands(overview['totals']['pairs'])} pairs",
            f"{site}/dashboard/{scope}",
        )
    ]
    agreement = validation_overview(of_dataset)["agreement"]
    rows.append(
        (
            "validation",
            f"{thousands(agreement['five_label_pairs'])} pairs with all five labels",
            f"{site}/dashboard/validation/{scope}",
        )
    )
    tags = tag_figures(of_dataset)
    rows.append(
        ("corpus", f"{thousands(tags['tagged'])} pairs tagged with phenomena", f"{site}/dashboard/corpus/{scope}")
    )
    monitor = monitor_overview(of_dataset)
    if monitor["latest"] is not None:
        overall = monitor["latest"].overall
        flagged = ", ".join(writer["name"] for writer in monitor["flagged"]) or "none"
        rows.append(
            (
                "artifacts",
                f"hypothesis-only {pct(overall['accuracy'])} vs majority {pct(overall['majority'])} "
                f"over {thousands(monitor['latest'].pairs)} hypotheses; flagged: {flagged}",
                f"{site}/dashboard/artifacts/{scope}",
            )
        )
    snapshot = Snapshot.objects.filter(datasets=[dataset.slug], status="done").order_by("pk").first()
    if snapshot is not None:
        rows.append(
            ("snapshots", f"#{snapshot.pk}: {thousands(snapshot.row_count)} rows", f"{site}/dashboard/snapshots/")
        )
        runs = TrainingRun.objects.filter(snapshot=snapshot, status=RunStatus.DONE, config__train_genre=None).order_by(
            "pk"
        )
        if runs:
            rows.append(
                (
                    "training",
                    "dev accuracy "
                    + ", ".join(f"#{run.pk} {run.get_model_display()} {pct(run.dev_accuracy)}" for run in runs),
                    f"{site}/dashboard/training/",
                )
            )
    return rows


def figures_table(dataset: Dataset, site: str = "") -> str:
    return format_table(["page", "figures", "address"], dataset_figures(dataset, site), align="<<<")
