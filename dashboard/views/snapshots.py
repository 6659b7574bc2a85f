from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods

from collection.models import Dataset
from dashboard import services
from modeling.models import Snapshot

from .common import page_context, researcher_required

SNAPSHOTS_SHOWN = 50


@researcher_required
@require_http_methods(["GET", "POST"])
def snapshots(request):
    datasets = list(Dataset.objects.order_by("slug"))
    if request.method == "POST":
        known = {dataset.slug for dataset in datasets}
        chosen = request.POST.getlist("datasets")
        unknown = [slug for slug in chosen if slug not in known]
        if unknown:
            messages.error(request, f"Unknown dataset(s): {', '.join(unknown)}. Nothing was exported.")
        else:
            snapshot = services.start_snapshot(request.user, chosen)
            snapshot.refresh_from_db()
            messages.success(
                request,
                f"Snapshot {snapshot.pk} of {', '.join(chosen) or 'all datasets'} is {snapshot.status}.",
            )
        return redirect("dashboard:snapshots")
    recent = Snapshot.objects.select_related("created_by").prefetch_related("files")[:SNAPSHOTS_SHOWN]
    return render(request, "dashboard/snapshots.html", page_context(
        request, "snapshots", datasets=datasets, snapshots=recent,
    ))


@researcher_required
@require_GET
def snapshots_progress(request):
    """Live progress for the snapshot list: status, progress and the row re-rendered."""
    ids = [int(value) for value in request.GET.get("ids", "").split(",") if value.strip().isdigit()]
    found = Snapshot.objects.filter(pk__in=ids).select_related("created_by").prefetch_related("files")
    return JsonResponse({"items": [
        {
            "id": snapshot.pk,
            "status": snapshot.status,
            "progress": snapshot.progress,
            "finished": snapshot.status in ("done", "failed"),
            "html": render_to_string("dashboard/_snapshot_row.html", {"snapshot": snapshot}, request),
        }
        for snapshot in found
    ]})
