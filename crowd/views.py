"""Worker pages of the crowd app: home, arrival by a study link, the completion page.

Views stay thin: arrival rules live in arrival.py, writes in services.py.
"""

from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from base.permissions import is_researcher
from corpus.models import Dataset, Worker

from . import access, arrival, preview, selectors
from .models import Study, StudySession, TaskKind
from .registry import admission_refusal, consent_refusal, launch_refusal, next_task_url, registered
from .services import DEVICE_SESSION_KEY, browser_device, device_of, note_device


def completion_page(request: HttpRequest, study_session: StudySession) -> HttpResponse:
    """The page with the session's own completion code, once its tasks are done, in the browser
    that did the work. Where the market allows, it sends the participant back."""
    if study_session.is_complete and study_session.code_is_held:
        # Held for a researcher (until released): a neutral word, never the reason. An MTurk
        # assignment waiting for MTurk to list it is submitted all the same (without its code).
        return_kind, return_to = selectors.completion_return(study_session)
        held: dict[str, Any] = {"study": study_session.study}
        if return_kind == "mturk" and study_session.code_shown_in(browser_device(request)):
            held.update(mturk_action=return_to[0], mturk_fields=return_to[1])
        return render(request, "crowd/completion_held.html", held)
    if not study_session.completion_code:
        # Never a code for unfinished work (the views call this only for complete sessions).
        return redirect(next_task_url(study_session.study.task_kind))
    if not study_session.code_shown_in(browser_device(request)):
        # Only the browser that did the work sees the code: knowing the ids is not enough.
        return render(request, "crowd/completion_elsewhere.html", {"study": study_session.study})
    return_kind, return_to = selectors.completion_return(study_session)
    context = {
        "study_session": study_session,
        "study": study_session.study,
        "return_kind": return_kind,
        "return_url": return_to if return_kind == "url" else None,
        "mturk_action": return_to[0] if return_kind == "mturk" else None,
        "mturk_fields": return_to[1] if return_kind == "mturk" else None,
    }
    return render(request, "crowd/completion.html", context)


def home(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return render(request, "home.html", {})
    worker = Worker.objects.filter(user=request.user).first()
    study_session = arrival.current_study_session(request)
    context = {
        "is_researcher": is_researcher(request.user),
        "worker": worker,
        "counts": selectors.worker_task_counts(worker),
        "study_session": study_session,
        "task_links": task_links(study_session),
    }
    return render(request, "home.html", context)


TASK_BUTTON_TEXT = {
    TaskKind.WRITING: "Next writing task",
    TaskKind.VALIDATION: "Next validation task",
    TaskKind.MPE_JUDGMENT: "Next judgment task",
    TaskKind.PREMISE_LABELS: "Next caption task",
}


def task_links(study_session: StudySession | None) -> list[dict[str, str]]:
    """The task buttons (URL and text) a worker may follow: inside a study visit only its own kind (the others
    would answer 'not part of your study'), outside one writing and validation."""
    kinds = (
        [TaskKind(study_session.study.task_kind)]
        if study_session is not None
        else [TaskKind.WRITING, TaskKind.VALIDATION]
    )
    links = [{"url": reverse(next_task_url(kind)), "text": TASK_BUTTON_TEXT[kind]} for kind in kinds]
    # DNC's grammaticality task, where the study's dataset (outside a study: any dataset) asks for
    # judgments: a validation study offers it beside its batches, so a participant finds it without its URL.
    if study_session is None:
        offers = Dataset.objects.filter(grammaticality_judgments__gt=0).exists()
    else:
        study = study_session.study
        offers = study.task_kind == TaskKind.VALIDATION and study.dataset.grammaticality_judgments > 0
    if offers:
        links.append({"url": reverse(registered().grammaticality_url), "text": GRAMMATICALITY_BUTTON_TEXT})
    return links


GRAMMATICALITY_BUTTON_TEXT = "Judge the grammar of sentences"


@require_http_methods(["GET", "POST"])
def study_entry(request: HttpRequest, slug: str) -> HttpResponse:
    """Arrival by a study link. An anonymous visitor is logged in as the link's worker at once
    (market workers have no password), unless that worker was seen in another browser before.
    Someone already logged in as another account, or a browser new to a participant id seen
    elsewhere, is asked first, and only a POST switches: a GET never changes who is logged in."""
    study = get_object_or_404(Study, slug=slug)
    if not study.is_active:
        return render(request, "crowd/study_closed.html", {"study": study}, status=410)
    if launch_refusal(study) is not None:
        # A paid study whose ids nobody verifies takes nobody (its pre-launch check says why).
        return render(request, "crowd/study_not_open.html", {"study": study}, status=403)
    params = request.POST if request.method == "POST" else request.GET
    if arrival.is_mturk_preview(params):
        return render(
            request, "crowd/study_preview.html", {"study": study, "description": selectors.task_description(study)}
        )
    try:
        arrival.check_link_signature(study, params)
        visit = arrival.parse_arrival(params)
    except arrival.ArrivalError as error:
        return render(request, "crowd/study_error.html", {"study": study, "problem": str(error)}, status=400)

    # Checked before anything is created: a stranger to the list or a blocked worker leaves no
    # account or session behind.
    known = Worker.objects.filter(market=visit.market, external_id=visit.worker_id).first()
    refusal = access.block_list_refusal(study, known) or access.closed_list_refusal(study, known)
    if refusal is not None:
        return _refused(request, refusal)

    switch_confirmed = request.method == "POST" and request.POST.get("switch") == "yes"
    device = device_of(request)
    if arrival.bound_to_another_browser(study, visit, device):
        # An open link: the id is kept to its first browser, with or without a confirmed switch.
        return render(request, "crowd/study_other_browser.html", {"study": study}, status=403)
    if not switch_confirmed:
        hidden = {name: value for name, value in params.items() if name not in ("csrfmiddlewaretoken", "switch")}
        # Signed in as another account than the link's worker: asked before switching.
        link_worker = Worker.objects.filter(market=visit.market, external_id=visit.worker_id)
        if request.user.is_authenticated and not link_worker.filter(user=request.user).exists():
            return render(request, "crowd/study_switch.html", {"study": study, "hidden": hidden})
        if not request.user.is_authenticated and arrival.seen_in_another_browser(visit, device):
            # A participant id opened in another browser before: the id alone (a shared or
            # guessed link) does not make this browser that participant without asking.
            return render(request, "crowd/study_switch.html", {"study": study, "hidden": hidden, "elsewhere": True})
    try:
        started = arrival.start_study_session(study, visit, claim_models=registered().claim_models, device=device)
    except arrival.ArrivalError as error:
        return render(request, "crowd/study_error.html", {"study": study, "problem": str(error)}, status=400)
    study_session = started.session
    user = study_session.worker.user
    if request.user != user:
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        request.session[DEVICE_SESSION_KEY] = device  # logging in from another account empties the session
    request.session[arrival.SESSION_KEY] = study_session.pk
    if started.released_claims:
        messages.info(
            request,
            "You opened this study again in a new session: the unfinished task of your earlier session "
            "was given back, and only work done from now on counts for this session.",
        )
    refusal = admission_refusal(study, study_session.worker)
    if refusal is not None:
        response = redirect(refusal.url) if refusal.url else _refused(request, refusal)
    else:
        response = redirect(next_task_url(study.task_kind))
    # One browser under several participant ids is linked for researchers: likely one person.
    return note_device(request, response, study_session.worker)


def _refused(request: HttpRequest, refusal: access.Refusal, next_url: str | None = None) -> HttpResponse:
    return render(request, "crowd/not_admitted.html", {"refusal": refusal, "next_url": next_url}, status=403)


def task_refusal_page(request: HttpRequest, study_session: StudySession | None, task_kind: str) -> HttpResponse | None:
    """The page to show instead of a task of `task_kind`, or None when the visit may take it: a
    visit is spent on its own study's kind of task, only once it agreed to the study's information
    sheet and did not withdraw, and only while the worker is admitted to the study."""
    if study_session is None:
        return None
    # Asked first, a researcher's preview included (it reads the sheet as a participant would).
    refusal = consent_refusal(request, study_session)
    if refusal is not None:
        return redirect(refusal.url) if refusal.url else _refused(request, refusal)
    refusal = access.closed_visit_refusal(study_session)
    if refusal is not None:
        return _refused(request, refusal)
    refusal = access.other_kind_refusal(study_session, task_kind)
    if refusal is not None:
        return _refused(request, refusal, next_url=reverse(next_task_url(study_session.study.task_kind)))
    if study_session.is_preview:
        return None  # a researcher's preview: the study's list and test are not theirs to pass
    refusal = admission_refusal(study_session.study, study_session.worker)
    if refusal is not None:
        return redirect(refusal.url) if refusal.url else _refused(request, refusal)
    return None


def task_visit(request: HttpRequest, task_kind: str) -> tuple[StudySession | None, HttpResponse | None]:
    """The first steps of every task's "next" view: (the visit's study session of `task_kind` or
    None, the page to show instead of a task or None). Instead: a refusal (`task_refusal_page`),
    or the completion page once the session's tasks are done."""
    refused = task_refusal_page(request, arrival.current_study_session(request), task_kind)
    if refused is not None:
        return None, refused
    study_session = arrival.current_study_session(request, task_kind=task_kind)
    if study_session is not None and study_session.is_complete:
        return study_session, completion_page(request, study_session)
    return study_session, None


@require_http_methods(["GET", "POST"])
def preview_start(request: HttpRequest, slug: str) -> HttpResponse:
    """A researcher walks through the study as a participant, with nothing saved (crowd.preview).
    A GET asks (it changes nothing); the POST starts the preview at the study's next task."""
    if not is_researcher(request.user):
        if not request.user.is_authenticated:
            return redirect(f"{reverse('login')}?next={request.path}")
        raise PermissionDenied("Only researchers can preview a study.")
    # Another team's study answers as an unknown slug does: its pairs and premises are its team's.
    study = selectors.previewable_study(request.user, slug)
    if request.method == "GET":
        back = request.GET.get("back", "")
        back = back if preview.is_a_page_of_this_site(request, back) else ""
        return render(request, "crowd/researcher_preview.html", {"study": study, "back": back})
    preview.start_preview(request, study, claim_models=registered().claim_models, started_from=request.POST.get("back"))
    return redirect(next_task_url(study.task_kind))


@require_http_methods(["POST"])
def preview_end(request: HttpRequest) -> HttpResponse:
    """Leave the preview and go back to the page it was started from, else to the study's admin page."""
    started_from = preview.preview_started_from(request)
    study = preview.end_preview(request, claim_models=registered().claim_models)
    if study is not None and is_researcher(request.user):
        messages.info(request, f"Preview of “{study.name}” ended: nothing of it was saved.")
        return redirect(started_from or reverse("admin:crowd_study_change", args=[study.pk]))
    return redirect("home")
