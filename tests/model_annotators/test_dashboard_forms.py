"""The dashboard's model annotator forms: register a finished run or an endpoint (its key
sealed, never logged), start a labelling job and follow it, set a study's uses; every change in
the audit log, every object the user's team's (another team's ids answer 404)."""

import pytest
from django.urls import reverse

from audit.models import AuditEntry
from base.long_tasks import JobStatus
from base.permissions import ensure_researcher_group
from corpus.models import Label
from crowd.models import Study, TaskKind
from model_annotators.models import JobTask, LabellingJob, ModelAnnotator, ModelLabel, ModelUse
from modeling.models import RunStatus, Snapshot, TrainingRun
from teams.models import Membership, Role, Team
from tests import factories

from .conftest import API_KEY, answer, gold_pairs

pytestmark = pytest.mark.django_db


def study_of(dataset):
    return Study.objects.create(
        slug=f"s-{dataset.slug}", name="s", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="C"
    )


def endpoint_form(dataset, url, **extra):
    return {
        "kind": "endpoint",
        "name": "lab llm",
        "dataset": dataset.slug,
        "base_url": url,
        "model_name": "standin-7b",
        "temperature": "0.0",
        "api_key": API_KEY,
        "requests_per_minute": "6000",
        **extra,
    }


def test_a_researcher_registers_an_endpoint_starts_a_job_and_sets_the_uses(
    client, researcher, stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("dash-registered")
    pairs = gold_pairs(dataset, [Label.ENTAILMENT, Label.NEUTRAL], hypotheses=["A dog runs.", "A dog sleeps."])
    server = stand_in({"A dog runs.": answer("entailment"), "A dog sleeps.": answer("neutral")})
    client.force_login(researcher)
    page = reverse("dashboard:model_annotators")
    assert client.get(page).status_code == 200

    response = client.post(
        page,
        endpoint_form(
            dataset,
            server.url,
            prompt_system="You label pairs. Answer with one JSON object.",
            prompt_template="Premise: {premise}\nHypothesis: {hypothesis}\nLabel?",
        ),
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    annotator = ModelAnnotator.objects.get(name="lab llm")
    assert annotator.sealed_api_key and API_KEY not in annotator.sealed_api_key
    assert annotator.prompts.filter(task_kind="validation").latest("version").version == 2
    registered = AuditEntry.objects.get(action="model_annotator.registered")
    assert registered.after["api_key"] is True and API_KEY not in str(registered.after)
    assert AuditEntry.objects.filter(action="model_annotator.prompt_version").count() == 1
    html = client.get(page).content.decode()
    assert "lab llm" in html and "validation-v2" in html and API_KEY not in html

    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("dashboard:model_annotator_label", args=[annotator.pk]),
            {"task": JobTask.LABELS, "scope": "calibration", "limit": ""},
        )
    job = LabellingJob.objects.get(annotator=annotator)
    assert job.status == JobStatus.DONE, job.error
    assert ModelLabel.objects.filter(annotator=annotator, asked_with="validation-v2").count() == len(pairs)
    assert AuditEntry.objects.filter(action="model_annotator.job_started").count() == 1
    progress = client.get(reverse("dashboard:model_annotators_progress") + f"?ids={job.pk}").json()
    assert progress["items"][0]["finished"] and f'id="labelling-job-{job.pk}"' in progress["items"][0]["html"]

    study = study_of(dataset)
    uses = reverse("dashboard:model_uses", args=[study.slug])
    assert client.get(uses).status_code == 200
    response = client.post(
        uses,
        {
            "triage_annotator": annotator.pk,
            "vote_annotator": annotator.pk,
            "vote_min_accuracy": "0.97",
            "vote_min_calibration_pairs": "300",
            "adjudication_help": "on",
            "writing_checks_annotator": annotator.pk,
            "reason": "pilot of the model",
        },
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    use = ModelUse.objects.get(study=study)
    assert (use.triage_annotator, use.vote_annotator, use.writing_checks_annotator) == (annotator,) * 3
    assert (use.vote_min_accuracy, use.vote_min_calibration_pairs, use.adjudication_help) == (0.97, 300, True)
    changed = AuditEntry.objects.get(action="model_use.changed")
    assert changed.after["triage_annotator"] == annotator.pk and changed.reason == "pilot of the model"

    # Turning the vote off is audited as its own change; a threshold out of range changes nothing.
    client.post(uses, {"vote_min_accuracy": "0.97", "vote_min_calibration_pairs": "300", "adjudication_help": "on"})
    use.refresh_from_db()
    assert use.vote_annotator is None and use.triage_annotator is None and use.adjudication_help
    assert AuditEntry.objects.filter(action="model_use.changed").count() == 2
    client.post(uses, {"vote_min_accuracy": "0.2", "vote_min_calibration_pairs": "300"})
    use.refresh_from_db()
    assert use.vote_min_accuracy == 0.97 and AuditEntry.objects.filter(action="model_use.changed").count() == 2


def test_a_finished_run_is_registered_from_the_form(client, researcher):
    dataset = factories.dataset("dash-run")
    snapshot = Snapshot.objects.create(datasets=[dataset.slug])
    run = TrainingRun.objects.create(
        snapshot=snapshot,
        snapshot_hash="h",
        model="cbow",
        status=RunStatus.DONE,
        checkpoint_name="cbow-1.safetensors",
        remeasured_accuracy=0.6,  # only runs the platform scored itself may label (runs_fit_to_label)
    )
    unfinished = TrainingRun.objects.create(snapshot=snapshot, snapshot_hash="h", model="cbow")
    client.force_login(researcher)
    page = reverse("dashboard:model_annotators")

    refused = client.post(page, {"kind": "run", "dataset": dataset.slug, "training_run": unfinished.pk})
    assert refused.status_code == 200 and not ModelAnnotator.objects.exists()

    client.post(page, {"kind": "run", "dataset": dataset.slug, "training_run": run.pk})

    annotator = ModelAnnotator.objects.get()
    assert (annotator.kind, annotator.training_run, annotator.name) == ("run", run, f"cbow run {run.pk}")


def test_another_teams_objects_are_unknown_to_a_researcher(client, django_user_model, stand_in):
    team_a = Team.objects.create(slug="team-a", name="A")
    team_b = Team.objects.create(slug="team-b", name="B")
    dataset = factories.dataset("team-a-data")
    dataset.team = team_a
    dataset.save()
    study = study_of(dataset)
    Study.objects.filter(pk=study.pk).update(team=team_a)
    annotator = ModelAnnotator.objects.create(
        name="a-model", dataset=dataset, kind="endpoint", base_url="http://127.0.0.1:9/v1", model_name="m"
    )
    stranger = django_user_model.objects.create_user("stranger", password="pw", is_staff=True)
    stranger.groups.add(ensure_researcher_group())
    Membership.objects.create(team=team_b, user=stranger, role=Role.OWNER)
    client.force_login(stranger)

    assert client.get(reverse("dashboard:model_uses", args=[study.slug])).status_code == 404
    assert client.post(reverse("dashboard:model_uses", args=[study.slug]), {}).status_code == 404
    assert (
        client.post(reverse("dashboard:model_annotator_label", args=[annotator.pk]), {"task": "labels"}).status_code
        == 404
    )
    page = client.get(reverse("dashboard:model_annotators")).content.decode()
    assert "a-model" not in page and "team-a-data" not in page
    # The registration form does not take team A's dataset.
    response = client.post(reverse("dashboard:model_annotators"), endpoint_form(dataset, "http://127.0.0.1:9/v1"))
    assert response.status_code == 200 and ModelAnnotator.objects.count() == 1
    assert not LabellingJob.objects.exists() and not ModelUse.objects.exists()
    assert not AuditEntry.objects.filter(action__startswith="model_").exists()
