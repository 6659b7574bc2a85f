"""Builders for the consent tests: a validation study with pairs, arrivals by its Prolific link."""

from django.test import Client
from django.urls import reverse

from consent import services
from corpus.models import Label
from crowd.models import Study, StudySession, TaskKind
from tests.validation.validation_factories import make_dataset, make_pair

SHEET = "## What this study is for\n\nWe study how people judge sentences. Contact: lab@example.org."
STATEMENTS = ["I am 18 or older.", "I agree to take part."]


def validation_study(slug: str = "consent-study", *, pairs: int = 12, sheet: bool = True, **fields: object) -> Study:
    dataset = make_dataset(f"{slug}-data")
    for _ in range(pairs):
        make_pair(dataset, label=Label.NEUTRAL)
    study = Study.objects.create(
        slug=slug,
        name="Judge sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=3,
        completion_code="DONE-1",
        **fields,
    )
    if sheet:
        services.save_information_sheet(study, SHEET, STATEMENTS)
    return study


def arrive(client: Client, study: Study, participant: str = "5f1a2b3c4d5e6f7a8b9c0d1e") -> StudySession:
    """Open the study's Prolific link in this client; the visit's session."""
    client.get(
        reverse("study_entry", args=[study.slug]),
        {"PROLIFIC_PID": participant, "STUDY_ID": "60aa11bb22cc33dd44ee55ff", "SESSION_ID": f"s-{participant}"},
    )
    return StudySession.objects.get(study=study, worker__external_id=participant)


def agree(client: Client, study: Study, version: int = 1):
    return client.post(reverse("consent:sheet", args=[study.slug]), {"answer": "agree", "version": str(version)})
