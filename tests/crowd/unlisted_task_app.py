"""A task app that nothing registers or lists, as a careless developer might add one: its pages
claim on GET, save on POST and answer JSON on a record endpoint. Mounted beside the site's URLs by
tests/crowd/test_preview_fail_closed.py (its URLconf), so the preview meets it as it would meet a
new app: under a module named nowhere in the composition root or crowd."""

from django.db import transaction
from django.db.models import F
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import include, path

from base.authenticated import AuthenticatedRequest
from collection.models import WritingClaim
from collection.services import create_written_pairs
from collection.writing_claims import claim_next_premise
from corpus.models import Dataset, Label, Premise
from crowd.arrival import current_study_session
from crowd.models import ClaimStatus
from crowd.services import worker_for_user

TEXTS = {
    Label.ENTAILMENT: "A boat departed early in the morning.",
    Label.NEUTRAL: "The boat carried tourists to an island.",
    Label.CONTRADICTION: "The boat never left the harbour.",
}


def task_next(request: AuthenticatedRequest, dataset: str) -> HttpResponse:
    """GET: claims the next premise of the dataset (a task page claims its item)."""
    claim = claim_next_premise(
        worker_for_user(request.user),
        dataset=get_object_or_404(Dataset, slug=dataset),
        study_session=current_study_session(request),
    )
    assert claim is not None
    return HttpResponse(str(claim.token))


def task_submit(request: AuthenticatedRequest, token: str) -> HttpResponse:
    """POST: writes three pairs for the claimed premise, submits the claim, then sends the browser on."""
    claim = get_object_or_404(WritingClaim, token=token, worker=worker_for_user(request.user), status=ClaimStatus.OPEN)
    with transaction.atomic():
        create_written_pairs(claim.premise, claim.worker, TEXTS)
        Premise.objects.filter(pk=claim.premise_id).update(writings_done=F("writings_done") + 1)
        claim.status = ClaimStatus.SUBMITTED
        claim.save(update_fields=["status"])
    return redirect("home")


def record(request: HttpRequest, premise: int) -> JsonResponse:
    """Any method but GET: a JSON record endpoint that counts on the premise (as a score or nudge
    recorder might)."""
    if request.method == "GET":
        return JsonResponse({"error": "POST"}, status=405)
    Premise.objects.filter(pk=premise).update(writings_done=F("writings_done") + 1)
    return JsonResponse({"recorded": True})


urlpatterns = [
    path("unlisted/<slug:dataset>/next/", task_next, name="unlisted_next"),
    path("unlisted/<uuid:token>/", task_submit, name="unlisted_submit"),
    path("unlisted/record/<int:premise>/", record, name="unlisted_record"),
    path("", include("annotation_site.urls")),
]
