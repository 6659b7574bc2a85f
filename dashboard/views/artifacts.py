"""The artifacts page: give-away words for a dataset, a genre or one writer (Poliak et al. 2018 §6)."""

import functools

from django import forms
from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_POST

from artifacts import selectors
from artifacts.models import MonitorRefresh
from artifacts.monitoring import REFRESH_TASK, nudge_effect
from artifacts.services import start_tagging
from base.task_queue import enqueue
from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP
from corpus.models import Dataset
from dashboard.queries import artifacts as queries
from dashboard.queries.common import genres, workers
from dashboard.queries.imports import running_jobs, waiting_text
from dashboard.queries.runs import embedded_queue

from .common import Scope, redirect_back, render_page, researcher_required


class GiveawayForm(forms.Form):
    genre = forms.ModelChoiceField(queryset=genres(), to_field_name="slug", required=False)
    worker = forms.ModelChoiceField(queryset=workers(), required=False, widget=forms.NumberInput)
    min_count = forms.IntegerField(
        min_value=1, initial=DEFAULT_MIN_COUNT, required=False, help_text="least hypotheses a word must be in"
    )
    top = forms.IntegerField(min_value=1, max_value=200, initial=DEFAULT_TOP, required=False)


@researcher_required
def artifacts(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request)
    form = GiveawayForm(request.GET or None)
    listing = None
    if not request.GET or form.is_valid():
        data = form.cleaned_data if request.GET else {}
        listing = queries.giveaway_words(
            scope.within,
            genre=data.get("genre"),
            worker=data.get("worker"),
            min_count=data.get("min_count"),
            top=data.get("top"),
        )
    return render_page(
        request,
        "dashboard/artifacts.html",
        "artifacts",
        scope,
        form=form,
        listing=listing,
        jobs=selectors.latest_tagging_jobs(scope.teams_within),
        nudges=nudge_effect(scope.within),
        embedded_queue=embedded_queue(),
    )


def datasets_acted_on(scope: Scope) -> list[Dataset | None]:
    """What a job started from the page acts on: the dataset chosen; with none chosen, every dataset
    for a superuser (one job, as the command runs it), else each dataset of the user's teams, so a
    lab never tags or refits on another lab's pairs."""
    if scope.dataset is not None:
        return [scope.dataset]
    if scope.teams is None:
        return [None]
    return list(scope.datasets)


@researcher_required
@require_POST
def start_tagging_job(request: HttpRequest) -> HttpResponseBase:
    """Tag the scope's untagged pairs (`manage.py tag_pairs` from the page)."""
    scope = Scope(request)
    targets = datasets_acted_on(scope)
    if not targets:
        messages.error(request, "Your teams have no dataset to tag yet.")
        return redirect_back(request, "dashboard:artifacts")
    running = running_jobs(scope.teams_within)  # other teams' imports by number only
    jobs = [start_tagging(dataset) for dataset in targets]
    described = ", ".join(f"#{job.pk} ({job.total} pairs)" for job in jobs)
    noun = "Tagging job" if len(jobs) == 1 else "Tagging jobs"
    messages.success(
        request, f"{noun} {described} {'is' if len(jobs) == 1 else 'are'} queued: {waiting_text(running)}."
    )
    return redirect_back(request, "dashboard:artifacts")


@researcher_required
@require_POST
def refresh_artifact_monitor(request: HttpRequest) -> HttpResponseBase:
    """Refit the artifact monitor on the scope (`manage.py refresh_monitor` from the page): the
    writing page's nudge has a model from the first few hundred pairs."""
    scope = Scope(request)
    targets = datasets_acted_on(scope)
    if not targets:
        messages.error(request, "Your teams have no dataset to refit the monitor on yet.")
        return redirect_back(request, "dashboard:artifacts")
    running = running_jobs(scope.teams_within)  # other teams' imports by number only
    for dataset in targets:
        pk = dataset.pk if dataset else None
        transaction.on_commit(functools.partial(enqueue, REFRESH_TASK, pk, MonitorRefresh.Trigger.COMMAND))
    names = ", ".join(dataset.slug for dataset in targets if dataset) or "all datasets"
    messages.success(
        request,
        f"The monitor's refresh on {names} is queued: {waiting_text(running)}. Its result shows below once it ran.",
    )
    return redirect_back(request, "dashboard:artifacts")
