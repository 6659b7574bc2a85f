"""The artifacts page: give-away words for a dataset, a genre or one writer (Poliak et al. 2018 §6)."""

from django import forms
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from artifacts import selectors
from artifacts.monitoring import nudge_effect
from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP
from dashboard.queries import artifacts as queries
from dashboard.queries.common import genres, workers

from .common import Scope, render_page, researcher_required


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
            scope.dataset,
            scope.split,
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
        jobs=selectors.latest_tagging_jobs(),
        nudges=nudge_effect(scope.dataset),
    )
