from pathlib import PurePosixPath

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from base.permissions import CREATE_SNAPSHOTS
from corpus.models import Split
from dashboard.queries import runs as queries
from dashboard.queries.common import datasets as all_datasets
from modeling.release import (
    DEFAULT_LICENSE,
    ReleaseError,
    default_release_name,
    open_release_file,
    publish_release,
    release_files,
    release_team,
    releases,
)
from modeling.snapshots.services import request_snapshot
from teams import access

from .common import polled_ids, progress_json, render_page, researcher_required

SNAPSHOTS_SHOWN = 50
RELEASES_SHOWN = 50
# The snapshot form's options that are a ticked box (each kept in the filters only when true).
TICKED_OPTIONS = ("label_rows", "typing_flags")


@researcher_required(post_permission=CREATE_SNAPSHOTS)
@require_http_methods(["GET", "POST"])
def snapshots(request: HttpRequest) -> HttpResponseBase:
    datasets = access.kept(all_datasets(), request.user, access.RESEARCH)
    if request.method == "POST":
        chosen = request.POST.getlist("datasets")
        filters = {
            "splits": request.POST.getlist("splits"),
            "gold_only": request.POST.get("gold_only") == "on",
            "unvalidated_gold": request.POST.get("unvalidated_gold", "author"),
            **{option: request.POST.get(option) == "on" for option in TICKED_OPTIONS},
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
                request, f"Snapshot {snapshot.pk} of {', '.join(chosen) or 'all datasets'} is {snapshot.status}."
            )
        return redirect("dashboard:snapshots")
    recent = access.scoped(queries.snapshots(), request.user)[:SNAPSHOTS_SHOWN]
    aggregation_runs = access.kept(queries.finished_aggregation_runs(), request.user, attr="dataset.team_id")
    return render_page(
        request,
        "dashboard/snapshots.html",
        "snapshots",
        datasets=datasets,
        snapshots=recent,
        splits=Split.values,
        aggregation_runs=aggregation_runs,
        embedded_queue=queries.embedded_queue(),
        finished_snapshots=access.kept(queries.finished_snapshots(), request.user, access.RESEARCH),
        # The releases of the user's teams (a release's team: its snapshot's, teams.access).
        releases=[
            (release.name, release_files(release.name))
            for release in access.kept(releases(), request.user)[-RELEASES_SHOWN:]
        ],
        default_license=DEFAULT_LICENSE,
    )


@researcher_required(post_permission=CREATE_SNAPSHOTS)
@require_POST
def release(request: HttpRequest) -> HttpResponseBase:
    """Make a release of a done snapshot into the releases storage (modeling.release.publish_release)."""
    chosen = request.POST.get("snapshot", "")
    snapshot = queries.snapshot(int(chosen)) if chosen.isdigit() else None
    if snapshot is None or not access.may(request.user, snapshot.team_id, access.RESEARCH):
        messages.error(request, f"No release was made: there is no snapshot {chosen!r}.")
        return redirect("dashboard:snapshots")
    name = request.POST.get("name", "").strip() or default_release_name(snapshot)
    quality_flags = request.POST.get("quality_flags") == "on"
    try:
        made = publish_release(
            snapshot,
            name,
            license_id=request.POST.get("license", "").strip() or DEFAULT_LICENSE,
            quality_flags=quality_flags,
            by=request.user,
        )
    except ReleaseError as error:
        messages.error(request, f"No release was made: {error}")
    else:
        configs = ", ".join(f"{config} ({', '.join(splits)})" for config, splits in made["splits"].items())
        flags = "with" if quality_flags else "without"
        messages.success(
            request,
            f"Release {made['name']} of snapshot {snapshot.pk}: {configs}; {flags} per-annotator quality flags.",
        )
    return redirect(reverse("dashboard:snapshots") + "#releases")


@researcher_required
@require_GET
def release_file(request: HttpRequest) -> HttpResponseBase:
    """A release's file, read from the releases storage (whichever host made it): ?release=NAME&path=PATH."""
    name, path = request.GET.get("release", ""), request.GET.get("path", "")
    missing = f"no file {path!r} in a release named {name!r}"
    try:
        # Another team's release is as unknown as a missing one (its team: its snapshot's).
        access.require(request.user, release_team(name), access.EXPORT, missing)
        opened = open_release_file(name, path)
    except ReleaseError:
        opened = None
    if opened is None:
        raise Http404(missing)
    return FileResponse(opened, as_attachment=True, filename=f"{name}-{'-'.join(PurePosixPath(path).parts)}")


@researcher_required
@require_GET
def snapshots_progress(request: HttpRequest) -> HttpResponseBase:
    found = access.scoped(queries.snapshots(polled_ids(request)), request.user)
    return progress_json(request, found, "dashboard/_snapshot_row.html", "snapshot")
