"""Probabilistic aggregation on the dashboard: launch a run, follow it, read where the models and
the majority-vote gold disagree, and the workers ranked by estimated skill."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods

from base.long_tasks import JobStatus
from corpus.scope import Scope as CorpusScope
from corpus.selectors import excluded_workers
from dashboard.queries import runs as queries
from dashboard.queries.common import datasets as all_datasets
from quality import aggregation_runs
from teams import access

from .common import polled_ids, progress_json, render_page, researcher_required

RUNS_SHOWN = 50
PAIRS_PER_PAGE = 50
WORKERS_SHOWN = 200
METHOD_NAMES = {"dawid_skene": "Dawid–Skene", "mace": "MACE", "glad": "GLAD"}


@researcher_required
@require_http_methods(["GET", "POST"])
def aggregation(request: HttpRequest) -> HttpResponseBase:
    # Only the teams' datasets where the user may research: another team's slug is as unknown as a typo.
    datasets = access.kept(all_datasets(), request.user, access.RESEARCH)
    if request.method == "POST":
        dataset = next((d for d in datasets if d.slug == request.POST.get("dataset")), None)
        if dataset is None:
            messages.error(request, "Nothing was started: choose one of your teams' datasets.")
            return redirect("dashboard:aggregation")
        try:
            run = aggregation_runs.request_aggregation(request.user, dataset, request.POST.getlist("methods"))
        except ValidationError as error:
            messages.error(
                request, "Nothing was started. " + "; ".join(m for ms in error.message_dict.values() for m in ms)
            )
            return redirect("dashboard:aggregation")
        run = queries.aggregation_run(run.pk) or run  # in the embedded mode it has run already
        messages.success(request, f"Aggregation run {run.pk} of {dataset.slug} is {run.status}.")
        return redirect("dashboard:aggregation")
    runs = access.scoped(queries.aggregation_runs(), request.user, via="dataset__team")[:RUNS_SHOWN]
    return render_page(
        request,
        "dashboard/aggregation.html",
        "aggregation",
        datasets=datasets,
        runs=runs,
        methods=[
            (method, METHOD_NAMES[method], method in aggregation_runs.DEFAULT_METHODS)
            for method in aggregation_runs.METHODS
        ],
    )


@researcher_required
@require_GET
def aggregation_progress(request: HttpRequest) -> HttpResponseBase:
    runs = access.scoped(queries.aggregation_runs(polled_ids(request)), request.user, via="dataset__team")
    finished = (JobStatus.DONE, JobStatus.FAILED)
    return progress_json(request, runs, "dashboard/_aggregation_row.html", "run", finished)


@researcher_required
@require_GET
def aggregation_detail(request: HttpRequest, run_id: int) -> HttpResponseBase:
    run = access.checked(
        queries.aggregation_run(run_id), request.user, via="dataset__team", missing="No such aggregation run."
    )
    method = request.GET.get("method", "dawid_skene")
    if method not in run.methods:
        method = "dawid_skene"
    page = Paginator(aggregation_runs.disagreements(run, method), PAIRS_PER_PAGE).get_page(request.GET.get("page"))
    method_figures = [
        {"method": name, "name": METHOD_NAMES.get(name, name), **run.figures.get(name, {})} for name in run.methods
    ]
    return render_page(
        request,
        "dashboard/aggregation_detail.html",
        "aggregation",
        run=run,
        method=method,
        method_name=METHOD_NAMES.get(method, method),
        methods=[(name, METHOD_NAMES.get(name, name)) for name in run.methods],
        method_figures=method_figures,
        page=page,
        workers=aggregation_runs.ranked_workers(run, method, limit=WORKERS_SHOWN),
        excluded=excluded_workers(CorpusScope.of_dataset(run.dataset)),  # by the run's dataset's team
        skill_meaning=run.figures.get(method, {}).get("skill_meaning", ""),
    )
