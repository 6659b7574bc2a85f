"""Researcher pages of adversarial studies: the rounds and their figures, closing a round, the export.

Researchers only (staff); workers get 403 and anonymous visitors the login page.
"""

from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation_site.permissions import is_researcher
from corpus.models import Dataset, Split
from crowd.models import Study, TaskKind

from . import rounds, selectors
from .models import Round, RoundStatus


def researcher_required(view):
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_researcher(request.user):
            raise PermissionDenied("These pages are for researchers.")
        return view(request, *args, **kwargs)

    return wrapped


@researcher_required
def rounds_index(request):
    studies = Study.objects.filter(task_kind=TaskKind.ADVERSARIAL).order_by("slug")
    return render(request, "adversarial/rounds_index.html", {"studies": studies, "active": "adversarial"})


@researcher_required
def study_rounds(request, slug):
    study = get_object_or_404(Study, slug=slug, task_kind=TaskKind.ADVERSARIAL)
    context = {
        "study": study,
        "rounds": selectors.study_rounds(study),
        "datasets": Dataset.objects.filter(is_imported=False).order_by("slug"),
        "splits": [Split.TRAIN, Split.DEV, Split.TEST],
        "active": "adversarial",
    }
    return render(request, "adversarial/rounds.html", context)


@researcher_required
@require_POST
def close(request, slug, number):
    round_ = get_object_or_404(Round, study__slug=slug, number=number)
    next_dataset = None
    if request.POST.get("next_dataset"):
        next_dataset = Dataset.objects.filter(slug=request.POST["next_dataset"]).first()
        if next_dataset is None:
            messages.error(request, f"Unknown dataset {request.POST['next_dataset']!r}; nothing was changed.")
            return redirect("adversarial:rounds", slug=slug)
    try:
        rounds.close_round(round_, user=request.user, next_dataset=next_dataset)
    except rounds.RoundRefused as refused:
        messages.error(request, str(refused))
    else:
        messages.success(
            request,
            f"Round {number} is closing: its snapshot is exported, the next target trains on the gpu queue, "
            "and the next round opens on it when the run is done.",
        )
    return redirect("adversarial:rounds", slug=slug)


@researcher_required
@require_POST
def advance(request, slug):
    for round_ in Round.objects.filter(study__slug=slug, status=RoundStatus.CLOSING):
        rounds.advance_round(round_, user=request.user)
    return redirect("adversarial:rounds", slug=slug)


@researcher_required
def export(request, slug, number):
    round_ = get_object_or_404(Round, study__slug=slug, number=number)
    split = request.GET.get("split") or None
    if split is not None and split not in Split.values:
        raise Http404(f"Unknown split {split!r}; one of {', '.join(Split.values)}.")
    name = f"{slug}-r{number}{'-' + split if split else ''}.jsonl"
    response = StreamingHttpResponse(selectors.export_jsonl(round_, split), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
