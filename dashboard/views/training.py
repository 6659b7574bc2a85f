from django.contrib import messages
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from base.permissions import LAUNCH_TRAINING
from dashboard import charts, results
from dashboard.queries import runs as queries
from modeling.models import ModelKind, RunStatus, TrainingRun
from modeling.training.services import CancelRefused, LaunchRefused, cancel_training_run, launch_training_run
from teams import access

from .common import polled_ids, render_page, researcher_required

RUNS_SHOWN = 50
FINISHED = (RunStatus.DONE, RunStatus.FAILED)
# The form's names for the fields a launch can be refused on.
FIELD_NAMES = {"snapshot": "Snapshot", "model": "Model", "config": "Options"}


def training_page(
    request: HttpRequest, form: dict[str, str] | None = None, errors: list[str] | None = None
) -> HttpResponseBase:
    return render_page(
        request,
        "dashboard/training.html",
        "training",
        status=200 if errors is None else 400,
        snapshots=access.kept(queries.finished_snapshots(limit=RUNS_SHOWN), request.user, access.RESEARCH),
        models=ModelKind.choices,
        runs=access.scoped(queries.training_runs(), request.user, via="snapshot__team")[:RUNS_SHOWN],
        form=form or {"snapshot": "", "model": ModelKind.MAJORITY, "options": ""},
        errors=errors or [],
        embedded_queue=queries.embedded_queue(),
    )


@researcher_required(post_permission=LAUNCH_TRAINING)
@require_http_methods(["GET", "POST"])
def training(request: HttpRequest) -> HttpResponseBase:
    if request.method == "GET":
        return training_page(request)
    form = {key: request.POST.get(key, "") for key in ("snapshot", "model", "options")}
    try:
        run = launch_training_run(form["snapshot"], form["model"], config=form["options"], user=request.user)
    except LaunchRefused as refused:
        # Bad input: say what is wrong and give the researcher their form back as they typed it.
        errors = [
            f"{FIELD_NAMES[field]}: {message}"
            for field, messages_ in refused.message_dict.items()
            for message in messages_
        ]
        return training_page(request, form, errors)
    run = queries.training_run(run.pk) or run  # in embedded mode the run has already finished by now
    messages.success(request, f"Training run {run.pk} ({run.get_model_display()}) is {run.status}.")
    return redirect("dashboard:training_detail", run.pk)


@researcher_required(post_permission=LAUNCH_TRAINING)
@require_POST
def training_cancel(request: HttpRequest, run_id: int) -> HttpResponseBase:
    access.checked(
        queries.training_run(run_id), request.user, access.RESEARCH, "snapshot__team", "No such training run."
    )
    try:
        run = cancel_training_run(run_id, user=request.user)
    except CancelRefused as refused:
        messages.error(request, refused.message)
    else:
        messages.success(request, f"Training run {run.pk} is cancelled: {run.error}")
    return redirect("dashboard:training_detail", run_id)


def run_payload(run: TrainingRun, request: HttpRequest, detail: bool = False) -> dict[str, object]:
    template = "dashboard/_run_progress.html" if detail else "dashboard/_run_row.html"
    return {
        "id": run.pk,
        "status": run.status,
        "progress": run.progress,
        "epoch": run.epoch,
        "total_epochs": run.total_epochs,
        "step": run.step,
        "total_steps": run.total_steps,
        "loss": run.loss,
        "dev_accuracy": run.dev_accuracy,
        "finished": run.status in FINISHED,
        "html": render_to_string(template, {"run": run}, request),
    }


@researcher_required
@require_GET
def training_progress(request: HttpRequest) -> HttpResponseBase:
    detail = request.GET.get("view") == "detail"
    runs = access.scoped(queries.training_runs(polled_ids(request)), request.user, via="snapshot__team")
    return JsonResponse({"items": [run_payload(run, request, detail) for run in runs]})


@researcher_required
@require_GET
def training_detail(request: HttpRequest, run_id: int) -> HttpResponseBase:
    run = access.checked(
        queries.training_run(run_id), request.user, via="snapshot__team", missing="No such training run."
    )
    report = results.run_report(run)
    figures = {}
    if report.genre_matrix:
        figures["genre_matrix"] = charts.url("genre-matrix", charts.genre_matrix(report), f"run={run.pk}")
    if report.confusion:
        figures["confusion"] = charts.url("confusion", charts.confusion(report), f"run={run.pk}")
    return render_page(
        request,
        "dashboard/training_detail.html",
        "training",
        run=run,
        report=report,
        figures=figures,
        embedded_queue=queries.embedded_queue(),
    )
