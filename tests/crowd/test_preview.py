"""A researcher's preview of a study (crowd.preview): the researcher walks through
each kind of task as a participant, sees real items and the real checks' messages, and nothing of
it counts: statistics, gold labels and counters, costs, bonuses, snapshots, open claims and the
study's session counts are the same after the preview as before, on the demo's data. And only a
researcher can start one.

The demo (`load_demo --no-training --no-artifacts --no-adversarial`) is loaded once for the module
(tests.conftest.rows_for_the_module); each test sees it as one load leaves it.
"""

import re
from io import StringIO
from typing import cast

import pytest
from django.apps import apps
from django.contrib import admin
from django.core.management import call_command
from django.db.models import QuerySet
from django.test import RequestFactory
from django.urls import reverse
from django_stubs_ext import WithAnnotations

from annotation_site.wiring import CLAIM_MODELS
from corpus.agreement import agreement_stats
from corpus.models import Dataset, Pair, Worker
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from crowd.admin import StudyAdmin, StudyCounts
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from crowd.preview import PREVIEW_NOT_SAVED
from crowd.registry import registered
from crowd.selectors import completion_rows
from dashboard.queries.costs import cost_overview
from modeling.snapshots.services import create_snapshot, export_snapshot
from quality.bonuses import study_summaries, worker_totals
from tests.conftest import rows_for_the_module
from tests.present import present
from validation.forms import claim_field_name
from validation.models import GrammaticalityClaim, PremiseLabelClaim, ValidationClaim
from validation.premise_labels import mark_for_premise_labels

pytestmark = pytest.mark.django_db

BANNER = "nothing you do here is saved"
GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}
# Rows a preview leaves by design: its StudySession (never counted: is_preview), the researcher's
# worker (created on their first task), and the browser's login.
LEFT_BY_DESIGN = {"crowd.StudySession", "corpus.Worker", "sessions.Session"}
# Rows a reader keeps when it first reads them (the approval list's flags: quality.flag_rows; the
# workers table): their figures are compared as the readers show them ("approval_list").
LEFT_BY_DESIGN |= {
    "quality.WorkerFlagScope",
    "quality.WorkerFlagRow",
    "dashboard.WorkerTableScope",
    "dashboard.WorkerTableRow",
}


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker, tmp_path_factory):
    with rows_for_the_module(django_db_blocker, tmp_path_factory.mktemp("preview-demo")):
        call_command("load_demo", "--no-training", "--no-artifacts", "--no-adversarial", stdout=StringIO())
        # A per-premise study on the demo's MPE items, and grammaticality judgments asked of the
        # validation study's dataset: every kind of task the preview serves has items.
        mpe = Study.objects.get(slug="demo-mpe")
        mark_for_premise_labels(mpe.dataset)
        Study.objects.create(
            slug="demo-premises",
            name="Demo: captions one at a time",
            dataset=mpe.dataset,
            task_kind=TaskKind.PREMISE_LABELS,
            completion_code="PREMISE-DONE",
        )
        validation = Study.objects.get(slug="demo-validation")
        Dataset.objects.filter(pk=validation.dataset_id).update(grammaticality_judgments=3)
        yield


@pytest.fixture
def researcher_client(client, demo, make_researcher):
    client.force_login(make_researcher("previewer"))
    return client


def figures():
    """Everything a preview must leave as it was, as the readers see it."""
    datasets = list(Dataset.objects.order_by("slug").values_list("slug", flat=True))
    # The study admin's own counts (the list's "sessions" and "completed" columns).
    # The admin annotates its studies with their counts (StudyCounts); its get_queryset keeps ModelAdmin's type.
    studies = cast(
        "QuerySet[WithAnnotations[Study, StudyCounts]]",
        StudyAdmin(Study, admin.site).get_queryset(RequestFactory().get("/admin/crowd/study/")),
    )
    admin_counts = {study.slug: (study._sessions, study._completed) for study in studies}
    return {
        "rows": {
            model._meta.label: model._default_manager.count()
            for model in apps.get_models()
            if model._meta.label not in LEFT_BY_DESIGN
        },
        "statistics": {slug: agreement_stats(Scope.named(slug)) for slug in datasets},
        "pairs": list(
            Pair.objects.order_by("pk").values_list(
                "pk", "gold_label", "label_count", "entailment_votes", "neutral_votes", "contradiction_votes"
            )
        ),
        "gold_agrees_with_labels": recompute_gold(fix=False).disagreements,
        "costs": repr(cost_overview()),
        "bonuses": (repr(worker_totals()), repr(study_summaries())),
        "open_claims": sum(model._default_manager.filter(status=ClaimStatus.OPEN).count() for model in CLAIM_MODELS),
        "sessions": admin_counts,
        "approval_list": list(completion_rows(Study.objects.order_by("slug"), flagged=registered().worker_flags)),
        "tasks_done": list(
            StudySession.objects.filter(is_preview=False)
            .order_by("pk")
            .values_list("pk", "tasks_done", "completion_code")
        ),
    }


def snapshot_hash():
    return export_snapshot(create_snapshot(None)).content_hash


def start_preview(client, slug):
    response = client.post(reverse("study_preview_start", args=[slug]))
    assert response.status_code == 302, response.content.decode()[:500]
    return response["Location"]


def batch_of(location):
    return location.rstrip("/").rsplit("/", 1)[-1]


def preview_validation_batch(client, next_url, claims_of):
    """Open the next batch of the preview, see the banner, send it with every answer; returns the
    page after the submit (followed) and the batch's claims."""
    location = client.get(next_url)["Location"]
    page = client.get(location).content.decode()
    assert BANNER in page
    claims = claims_of(batch_of(location))
    assert claims, page[:2000]
    # The claims hold no place between the preview's requests.
    assert all(claim.status == ClaimStatus.RELEASED for claim in claims)
    return client.post(location, {claim_field_name(c): "entailment" for c in claims}, follow=True), claims


def test_a_preview_of_every_kind_of_task_changes_no_figure(researcher_client, settings):
    # The figures as computed now, not as the dashboard's cache kept them a few seconds: with the
    # cache, "after" read within its seconds would show "before" whatever the preview changed.
    settings.DASHBOARD_CACHE_SECONDS = 0
    client = researcher_client
    before_snapshot = snapshot_hash()
    before = figures()

    # Writing: a refused submit shows the real message; a good one is "saved", then not saved.
    next_task = start_preview(client, "demo-writing")
    task_url = client.get(next_task)["Location"]
    page = client.get(task_url).content.decode()
    assert BANNER in page and "Preview of “Demo: write three sentences”" in page
    refused = client.post(task_url, {**GOOD, "neutral": GOOD["entailment"].upper()}, follow=True)
    assert "same as your &#x27;definitely correct&#x27; sentence" in refused.content.decode()
    saved = client.post(task_url, GOOD, follow=True).content.decode()
    # Never "Saved, thank you." above "not saved".
    assert "Saved, thank you." not in saved and PREVIEW_NOT_SAVED in saved and BANNER in saved, re.findall(
        r"<li class=\"message[^>]*>[^<]*", saved
    )
    # The next task is another line.
    assert saved.count("writing") and client.get(reverse("writing_next"))["Location"] != task_url

    # Validation (with catch trials and bonuses in the demo study) and the grammaticality page beside it.
    start_preview(client, "demo-validation")
    for _ in range(2):
        response, _ = preview_validation_batch(
            client, reverse("validation:next"), lambda batch: list(ValidationClaim.objects.filter(batch=batch))
        )
        assert "Saved. Thank you!" not in response.content.decode()
        assert PREVIEW_NOT_SAVED in response.content.decode()
    page = client.get(reverse("validation:grammaticality")).content.decode()
    assert BANNER in page
    shown = list(GrammaticalityClaim.objects.filter(status=ClaimStatus.RELEASED).values_list("pair_id", flat=True))
    assert shown
    incomplete = client.post(reverse("validation:grammaticality"), {"shown": shown})
    assert incomplete.status_code == 400
    judged = client.post(
        reverse("validation:grammaticality"), {"shown": shown, **{f"grammar-{pk}": "none" for pk in shown}}, follow=True
    )
    assert "Saved. Thank you!" not in judged.content.decode() and "not saved" in judged.content.decode()

    # MPE judgments and per-premise labels.
    start_preview(client, "demo-mpe")
    response, _ = preview_validation_batch(
        client, reverse("validation:mpe-next"), lambda batch: list(ValidationClaim.objects.filter(batch=batch))
    )
    assert PREVIEW_NOT_SAVED in response.content.decode()
    start_preview(client, "demo-premises")
    response, _ = preview_validation_batch(
        client, reverse("validation:premise-next"), lambda batch: list(PremiseLabelClaim.objects.filter(batch=batch))
    )
    assert PREVIEW_NOT_SAVED in response.content.decode()

    ended = client.post(reverse("preview_end"), follow=True).content.decode()
    assert "nothing of it was saved" in ended and BANNER not in ended

    after = figures()
    for name in before:
        assert after[name] == before[name], name
    assert snapshot_hash() == before_snapshot
    # The preview's session never counted a task; the researcher's worker holds no claim at all.
    previews = StudySession.objects.filter(is_preview=True)
    assert previews.count() == 4 and {session.tasks_done for session in previews} == {0}
    researcher_worker = Worker.objects.get(user__username="previewer")
    # Each claim model has a `worker` of its own (TaskClaim, their base, leaves it to them).
    assert not any(model._default_manager.filter(**{"worker": researcher_worker}).exists() for model in CLAIM_MODELS)


def test_a_preview_holds_no_place_between_its_pages(researcher_client):
    start_preview(researcher_client, "demo-validation")
    location = researcher_client.get(reverse("validation:next"))["Location"]
    claims = ValidationClaim.objects.filter(batch=batch_of(location))
    assert claims.exists() and not claims.filter(status=ClaimStatus.OPEN).exists()
    # The page still shows the batch as open (the claims are opened for each of the preview's requests).
    page = researcher_client.get(location).content.decode()
    # The hold's end message is there for the countdown to show, hidden while the hold runs.
    assert BANNER in page and 'data-hold-expired role="alert" hidden' in page


def test_only_a_researcher_can_start_a_preview(client, demo, make_worker):
    url = reverse("study_preview_start", args=["demo-validation"])
    assert client.post(url)["Location"].startswith(reverse("login"))
    worker = make_worker()
    client.force_login(worker.user)
    assert client.get(url).status_code == 403
    assert client.post(url).status_code == 403
    assert not StudySession.objects.filter(is_preview=True).exists()
    # A participant's own visit is never a preview: its submits count as ever.
    assert BANNER not in client.get(reverse("home")).content.decode()


def test_the_admin_offers_the_preview_and_counts_no_preview_session(researcher_client):
    start_preview(researcher_client, "demo-writing")
    researcher_client.get(reverse("writing_next"))
    page = researcher_client.get(reverse("admin:crowd_study_changelist")).content.decode()
    assert reverse("study_preview_start", args=["demo-writing"]) in page
    study = Study.objects.get(slug="demo-writing")
    row = present(re.search(r"<tr[^>]*>(?:(?!</tr>).)*demo-writing(?:(?!</tr>).)*</tr>", page, re.S)).group(0)
    sessions = study.sessions.filter(is_preview=False).count()
    assert f'<td class="field-session_count">{sessions}</td>' in row


def test_an_adversarial_preview_asks_the_model_and_keeps_nothing(client, make_researcher):
    """The adversarial task: the real model answers the preview's tries (its own HTTP server here),
    and no try, pair, task or claim is left once the preview ends."""
    from adversarial.models import AdversarialTask, AdversarialTry
    from tests.adversarial.helpers import ContractModel, adversarial_study, hypothesis_for

    model = ContractModel()
    try:
        study, _ = adversarial_study(slug="adv-preview", target_endpoint=model.url, max_tries=4)
        client.force_login(make_researcher("adversary"))
        before = figures()
        start_preview(client, study.slug)
        task_url = client.get(reverse("adversarial:next"))["Location"]
        assert BANNER in client.get(task_url).content.decode()
        task = AdversarialTask.objects.get(worker__user__username="adversary")
        try_url = reverse("adversarial:try", args=[task.writing_claim.token])
        answer = client.post(
            try_url, {"hypothesis": hypothesis_for(task.target_label, fooled=True)}, HTTP_ACCEPT="application/json"
        ).json()
        assert answer["model_fooled"] is True and model.requests == 1
        assert not AdversarialTry.objects.exists() and not Pair.objects.filter(dataset=study.dataset).exists()
        # The task page is the same task, still open, after the try that was not kept.
        assert BANNER in client.get(task_url).content.decode()
        client.post(reverse("preview_end"))
        assert figures() == before
    finally:
        model.close()
