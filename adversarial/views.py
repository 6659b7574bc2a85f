"""The adversarial writing task's pages: the next task, the task (tries and the reason), a try.

Plain forms, so the page works by keyboard alone and without script: Enter sends the hypothesis,
the model's answer is on the next page at once, and a fooled try puts the focus on the reason. A
client that asks for JSON (Accept: application/json) gets the try's answer as JSON instead.
"""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from authorship.networks import note_network
from authorship.services import study_action
from base.authenticated import AuthenticatedRequest
from collection import holds as writing_holds
from collection.views import renew_hold_then
from corpus.labels import LABELS
from crowd.holds import hold_view, record_no_task
from crowd.models import ClaimStatus, TaskKind
from crowd.services import worker_for_user
from crowd.views import task_visit

from . import services, targets
from .models import AdversarialTask, AdversarialTry, Round, RoundStatus, TaskState

LABEL_WORDS = {
    "entailment": "definitely correct",
    "neutral": "might be correct",
    "contradiction": "definitely incorrect",
}
# The same as a clause, so the page reads "a sentence that might be correct", never "that is might be".
LABEL_CLAUSES = {
    "entailment": "is definitely correct",
    "neutral": "might be correct",
    "contradiction": "is definitely incorrect",
}


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


@login_required
def adversarial_next(request: AuthenticatedRequest) -> HttpResponse:
    study_session, instead = task_visit(request, TaskKind.ADVERSARIAL)
    if instead is not None:
        return instead
    if study_session is None:
        # No free oracle: the model is asked only inside a study's claimed task.
        return render(request, "adversarial/no_study.html", status=403)
    task = services.claim_adversarial_task(worker_for_user(request.user), study_session)
    if task is None:
        # Between rounds (one closing: its data exported, the next model training) say so, not
        # "every line has been taken", so a participant knows the study goes on.
        closing = Round.objects.filter(study=study_session.study, status=RoundStatus.CLOSING).exists()
        if not closing:
            record_no_task(study_session)  # this visit now waits: no line of the study is renewed meanwhile
        return render(request, "collection/no_tasks.html", {"study_session": study_session, "between_rounds": closing})
    return redirect("adversarial:task", token=task.writing_claim.token)


def _task_or_404(request: AuthenticatedRequest, token: uuid.UUID) -> AdversarialTask:
    try:
        return services.task_for_worker(worker_for_user(request.user), token)
    except AdversarialTask.DoesNotExist:
        raise Http404("No such task of yours.") from None


def _confidence(attempt: AdversarialTry) -> int:
    return round(100 * float(attempt.probabilities.get(attempt.predicted_label, 0.0)))


@login_required
def adversarial_task(
    request: AuthenticatedRequest,
    token: uuid.UUID,
    errors: dict[str, list[str]] | None = None,
    text: str = "",
    status: int = 200,
) -> HttpResponse:
    task = _task_or_404(request, token)
    claim = task.writing_claim
    if task.state == TaskState.DONE or claim.status != ClaimStatus.OPEN:
        return redirect("adversarial:next")
    settings = services.study_settings(task.round.study)
    tries = [
        {
            "number": t.number,
            "hypothesis": t.hypothesis,
            "predicted": LABEL_WORDS.get(t.predicted_label, t.predicted_label),
            "confidence": _confidence(t),
            "fooled": t.model_fooled,
        }
        for t in task.tries.order_by("number")
    ]
    context = {
        "task": task,
        "premise": claim.premise,
        "target_words": LABEL_WORDS[task.target_label],
        "target_clause": LABEL_CLAUSES[task.target_label],
        "tries": tries,
        "last": tries[-1] if tries else None,
        "tries_left": settings.max_tries - len(tries),
        "max_tries": settings.max_tries,
        "needs_reason": task.state == TaskState.REASON,
        "expired": claim.expires_at <= timezone.now() and task.state == TaskState.WRITING,
        # The line is held while the worker writes tries (a reason is taken after the time too).
        "hold": hold_view([claim], timezone.now(), minutes=writing_holds.claim_minutes(claim.study_session)),
        "errors": errors or {},
        "text": text,
        "study_session": claim.study_session,
        "typing_action": study_action(claim.study_session),
        # A refused try comes back with the record of how it was typed (static/js/typing_evidence.js).
        "typing_evidence": request.POST.get("typing_evidence", "") if errors else "",
    }
    return render(request, "adversarial/task.html", context, status=status)


@login_required
@require_POST
def adversarial_renew(request: AuthenticatedRequest, token: uuid.UUID) -> HttpResponse:
    """ "More time" or "Get this line back" on the task's writing claim (collection.holds)."""
    _task_or_404(request, token)
    return renew_hold_then(request, token, {"task": "adversarial:task", "next": "adversarial:next"})


@login_required
@require_POST
def adversarial_try(request: AuthenticatedRequest, token: uuid.UUID) -> HttpResponse:
    worker = worker_for_user(request.user)
    note_network(request, worker)  # the example's verifiers are kept apart from it (verification.Ties)
    text = request.POST.get("hypothesis", "")
    if not request.session.session_key:
        request.session.save()
    session_key = request.session.session_key
    assert session_key is not None  # saved above when it had none
    try:
        result = services.make_try(
            worker, token, text, session_key, typing_evidence=request.POST.get("typing_evidence")
        )
    except AdversarialTask.DoesNotExist:
        raise Http404("No such task of yours.") from None
    except ValidationError as error:
        return _refused(request, token, error.message_dict, text, 400)
    except services.RateLimited as error:
        return _refused(request, token, {"hypothesis": [str(error)]}, text, 429)
    except (services.AdversarialRefused, targets.TargetUnavailable) as error:
        status = 503 if isinstance(error, targets.TargetUnavailable) else 409
        return _refused(request, token, {"hypothesis": [str(error)]}, text, status)
    attempt = result.attempt
    if _wants_json(request):
        return JsonResponse(
            {
                "try": attempt.number,
                "predicted_label": attempt.predicted_label,
                "probabilities": {label: attempt.probabilities[label] for label in LABELS},
                "model_fooled": attempt.model_fooled,
                "tries_left": result.tries_left,
                "task_done": result.task.state == TaskState.DONE,
            }
        )
    if result.task.state == TaskState.DONE:
        messages.info(request, "The model got all your tries right; thank you. Here is the next premise.")
        return redirect("adversarial:next")
    return redirect("adversarial:task", token=token)


def _refused(
    request: AuthenticatedRequest, token: uuid.UUID, errors: dict[str, list[str]], text: str, status: int
) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"errors": errors}, status=status)
    return adversarial_task(request, token, errors=errors, text=text, status=status)


@login_required
@require_http_methods(["POST"])
def adversarial_reason(request: AuthenticatedRequest, token: uuid.UUID) -> HttpResponse:
    worker = worker_for_user(request.user)
    try:
        services.give_reason(worker, token, request.POST.get("reason", ""))
    except AdversarialTask.DoesNotExist:
        raise Http404("No such task of yours.") from None
    except ValidationError as error:
        return _refused(request, token, error.message_dict, request.POST.get("reason", ""), 400)
    except services.AdversarialRefused as error:
        messages.info(request, str(error))
        return redirect("adversarial:next")
    messages.success(request, "Saved, thank you: you fooled the model. Verifiers will check the example.")
    return redirect("adversarial:next")
