"""The qualification test page: keyboard-first like the validation task (static/js/validation.js).

Thin: the rules (tries, scoring, who is admitted) live in qualification.py.
"""

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from base.authenticated import AuthenticatedRequest
from crowd.access import Refusal
from crowd.arrival import current_study_session
from crowd.models import Study
from crowd.registry import consent_refusal, next_task_url
from crowd.services import browser_device, worker_for_user

from . import qualification
from .models import QualificationDrawItem
from .qualification import QualificationRefused

CHOICES = [
    ("entailment", "Definitely correct"),
    ("neutral", "Might be correct"),
    ("contradiction", "Definitely incorrect"),
]
KEYS = {value: str(number) for number, (value, _) in enumerate(CHOICES, 1)}
# A try's form: the draw's token, and one field per item named by the item's token.
TRY_FIELD = "try"
ANSWER_PREFIX = "answer-"


def _refused(
    request: HttpRequest, message: str, title: str = "Thank you for your time", status: int = 403
) -> HttpResponse:
    return render(request, "crowd/not_admitted.html", {"refusal": Refusal(message, title=title)}, status=status)


def _rows(
    items: Iterable[QualificationDrawItem], chosen: Mapping[str, object], missing: Collection[str]
) -> Iterator[dict[str, Any]]:
    for number, item in enumerate(items, 1):
        name = f"{ANSWER_PREFIX}{item.token}"
        yield {
            "number": number,
            "pair": item.reference.pair,
            "token": item.token,
            "name": name,
            "missing": item.token in missing,
            "options": [
                {
                    "value": value,
                    "text": text,
                    "key": KEYS[value],
                    "checked": chosen.get(name) == value,
                    "id": f"{name}-{KEYS[value]}",
                }
                for value, text in CHOICES
            ],
        }


def _answers(post: Mapping[str, str]) -> dict[str, str]:
    """{item token: label} of a submitted try (fields named `answer-<token>`)."""
    return {name[len(ANSWER_PREFIX) :]: value for name, value in post.items() if name.startswith(ANSWER_PREFIX)}


@login_required
@require_http_methods(["GET", "POST"])
def qualification_page(request: AuthenticatedRequest, slug: str) -> HttpResponse:
    study = get_object_or_404(Study, slug=slug)
    study_session = current_study_session(request)
    if study_session is None or study_session.study_id != study.pk:
        return _refused(
            request,
            "Please open this study from its link on the crowd platform.",
            title="Open the study from its link",
            status=400,
        )
    # The test is a task too: no try before the visit agreed to the study's information sheet.
    refusal = consent_refusal(request, study_session)
    if refusal is not None:
        return redirect(refusal.url) if refusal.url else _refused(request, refusal.message, title=refusal.title)
    worker = worker_for_user(request.user)
    test = qualification.test_for(study)
    if test is None or not qualification.is_ready(test):
        refusal = qualification.admission_check(study, worker)
        return _refused(request, refusal.message if refusal else "This study has no qualification test.")
    if qualification.has_passed(test, worker):
        return redirect(next_task_url(study.task_kind))
    device = browser_device(request)
    left = qualification.attempts_left(test, worker, device)
    if left == 0:
        return _refused(request, qualification.failed_message(test, qualification.last_attempt(test, worker)))

    error: str | None = None
    chosen: Mapping[str, object] = {}
    missing: Collection[str] = ()
    if request.method == "POST":
        chosen = request.POST
        try:
            result = qualification.submit_attempt(
                test, worker, request.POST.get(TRY_FIELD, ""), _answers(request.POST), device=device
            )
        except QualificationRefused as refused:
            error, missing = refused.message, refused.missing
        else:
            if result.passed:
                messages.success(request, "You passed the qualification test. Welcome to the study!")
                return redirect(next_task_url(study.task_kind))
            if result.attempts_left == 0:
                return _refused(request, qualification.failed_message(test, result.attempt), status=200)
            messages.info(request, qualification.failed_message(test, result.attempt))
            return redirect("qualification", slug=study.slug)
    draw = qualification.open_draw(test, worker, device)
    items = qualification.draw_items(draw)
    context = {
        "study": study,
        "test": test,
        "draw": draw,
        "try_field": TRY_FIELD,
        "rows": list(_rows(items, chosen, missing)),
        "error": error,
        "attempt_number": test.max_attempts - left + 1,
        "attempts_left": left,
        # The tries after this one (the page says "try 2 of 3", never a count that includes this try).
        "tries_after": left - 1,
        "needed": qualification.needed(test, len(items)),
    }
    return render(request, "quality/qualification.html", context, status=400 if error else 200)
