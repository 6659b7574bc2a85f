"""Model annotators on the dashboard: register one, start its jobs and follow them, set a study's
uses. Every row is the user's teams' (foreign ids answer 404); the writes are
model_annotators.services', audited there."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from base.long_tasks import JobStatus
from dashboard.forms_model_annotators import ModelUseForm, RegisterAnnotatorForm, StartJobForm
from dashboard.queries import model_annotators as queries
from model_annotators import services
from model_annotators.models import AnnotatorKind, ModelAnnotator
from model_annotators.scope import task_kind_of

from .common import polled_ids, progress_json, render_page, researcher_required


def _errors(error: ValidationError) -> str:
    if hasattr(error, "message_dict"):
        return "; ".join(m for ms in error.message_dict.values() for m in ms)
    return "; ".join(error.messages)


@researcher_required
@require_http_methods(["GET", "POST"])
def model_annotators(request: HttpRequest) -> HttpResponseBase:
    form = RegisterAnnotatorForm(request.POST or None, user=request.user)
    if request.method == "POST":
        if form.is_valid():
            try:
                annotator = _register(form, request.user)
            except ValidationError as error:
                messages.error(request, "Nothing was registered. " + _errors(error))
            else:
                messages.success(request, f"Model annotator {annotator.name} registered on {annotator.dataset.slug}.")
                return redirect("dashboard:model_annotators")
        else:
            messages.error(request, "Nothing was registered: see the form.")
    return render_page(
        request,
        "dashboard/model_annotators.html",
        "model_annotators",
        form=form,
        annotators=queries.annotators(request.user),
        job_form=StartJobForm(),
        jobs=queries.jobs(request.user),
        studies=queries.studies_with_uses(request.user),
    )


def _register(form: RegisterAnnotatorForm, user: object) -> ModelAnnotator:
    data = form.cleaned_data
    dataset, study = data["dataset"], data.get("study")
    with transaction.atomic():
        if data["kind"] == AnnotatorKind.RUN:
            return services.register_run(
                dataset, data["training_run"], name=data.get("name", ""), study=study, user=user
            )
        annotator = services.register_endpoint(
            dataset,
            name=data["name"],
            base_url=data["base_url"],
            model_name=data["model_name"],
            temperature=data.get("temperature") or 0.0,
            api_key=data.get("api_key") or "",
            study=study,
            requests_per_minute=data.get("requests_per_minute") or 60,
            user=user,
        )
        if data.get("prompt_template"):
            services.new_prompt_version(
                annotator,
                task_kind_of(annotator),
                system=data.get("prompt_system") or "",
                template=data["prompt_template"],
                user=user,
            )
    return annotator


@researcher_required
@require_POST
def start_job(request: HttpRequest, annotator_id: int) -> HttpResponseBase:
    annotator = queries.annotator_to_act_on(request.user, annotator_id)
    form = StartJobForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Nothing was started: choose what to do and on which pairs.")
        return redirect("dashboard:model_annotators")
    try:
        job = services.start_labelling(
            annotator,
            scope=form.cleaned_data["scope"],
            limit=form.cleaned_data.get("limit"),
            task=form.cleaned_data["task"],
            user=request.user,
        )
    except ValidationError as error:
        messages.error(request, "Nothing was started. " + _errors(error))
        return redirect("dashboard:model_annotators")
    status = queries.job(job.pk).status  # in the embedded mode it has run already
    messages.success(request, f"Job {job.pk} of {annotator.name} is {status}.")
    return redirect("dashboard:model_annotators")


@researcher_required
@require_GET
def jobs_progress(request: HttpRequest) -> HttpResponseBase:
    finished = (JobStatus.DONE, JobStatus.FAILED)
    jobs = queries.jobs(request.user, polled_ids(request))
    return progress_json(request, jobs, "dashboard/_labelling_job_row.html", "job", finished)


@researcher_required
@require_http_methods(["GET", "POST"])
def study_uses(request: HttpRequest, slug: str) -> HttpResponseBase:
    study, use = queries.study_and_uses(request.user, slug)
    form = ModelUseForm(request.POST or None, instance=use, study=study)
    if request.method == "POST" and form.is_valid():
        uses = {name: form.cleaned_data[name] for name in services.USES}
        try:
            services.set_model_use(study, user=request.user, reason=form.cleaned_data.get("reason", ""), **uses)
        except ValidationError as error:
            messages.error(request, "Nothing was changed. " + _errors(error))
        else:
            messages.success(request, f"The model uses of {study.slug} are saved.")
            return redirect("dashboard:model_annotators")
    return render_page(request, "dashboard/model_uses.html", "model_annotators", study=study, form=form)
