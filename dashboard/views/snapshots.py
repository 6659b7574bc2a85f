from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods

from annotation_site.permissions import CREATE_SNAPSHOTS
from corpus.models import Split
from dashboard.queries import runs as queries
from dashboard.queries.common import datasets as all_datasets
from modeling.snapshots.services import request_snapshot

from .common import polled_ids, progress_json, render_page, researcher_required

SNAPSHOTS_SHOWN = 50


@researcher_required(post_permission=CREATE_SNAPSHOTS)
@require_http_methods(["GET", "POST"])
def snapshots(request: HttpRequest) -> HttpResponseBase:
    datasets = all_datasets()
    if request.method == "POST":
        chosen = request.POST.getlist("datasets")
        filters = {
            "splits": request.POST.getlist("splits"),
            "gold_only": request.POST.get("gold_only") == "on",
            "unvalidated_gold": request.POST.get("unvalidated_gold", "author"),
        }
        run = request.POST.get("aggregation_run", "")
        if run:  # off unless chosen: the files are then exactly MultiNLI's
            filters["aggregation_run"] = int(run) if run.isdigit() else run
        try:
            snapshot = request_snapshot(request.user, datasets=chosen, filters=filters)
        except ValidationError as error:
            problems = "; ".join(f"{field}: {', '.join(text)}" for field, text in error.message_dict.items())
            messages.error(request, f"Nothing was exported. {problems}.")
        else:
            snapshot = queries.snapshot(snapshot.pk) or snapshot  # in embedded mode the export has already run
            messages.success(
                request,
                f"Snapshot {snapshot.pk} of {', '.join(chosen) or 'all datasets'} is {snapshot.status}.",
            )
        return redirect("dashboard:snapshots")
    recent = queries.snapshots()[:SNAPSHOTS_SHOWN]
    aggregation_runs = queries.finished_aggregation_runs()
    return render_page(
        request,
        "dashboard/snapshots.html",
        "snapshots",
        datasets=datasets,
        snapshots=recent,
        splits=Split.values,
        aggregation_runs=aggregation_runs,
        embedded_queue=queries.embedded_queue(),
    )


@researcher_required
@require_GET
def snapshots_progress(request: HttpRequest) -> HttpResponseBase:
    """Live progress for the snapshot list: status, progress and the row re-rendered."""
    found = queries.snapshots(polled_ids(request))
    return progress_json(request, found, "dashboard/_snapshot_row.html", "snapshot")
