"""Reads of the adversarial rounds pages: the studies, a study's rounds, the datasets a next round
may collect into (a round's figures are `adversarial.selectors`)."""

from typing import Any

from django.conf import settings
from django.shortcuts import get_object_or_404

from adversarial import rounds
from adversarial.models import Round, RoundStatus
from corpus.models import Dataset
from crowd.models import Study, TaskKind
from teams import access


def adversarial_studies(user: Any) -> list[Study]:
    """The adversarial studies of the user's teams (teams.access; every team's for a superuser)."""
    return list(access.scoped(Study.objects.filter(task_kind=TaskKind.ADVERSARIAL), user).order_by("slug"))


def adversarial_study(slug: str) -> Study:
    return get_object_or_404(Study, slug=slug, task_kind=TaskKind.ADVERSARIAL)


def collected_datasets() -> list[Dataset]:
    return list(Dataset.objects.filter(is_imported=False).order_by("slug"))


def dataset_named(slug: str) -> Dataset | None:
    return Dataset.objects.filter(slug=slug).first()


def round_of(slug: str, number: int | str) -> Round:
    return get_object_or_404(Round, study__slug=slug, number=number)


def closing_rounds(slug: str) -> list[Round]:
    return list(Round.objects.filter(study__slug=slug, status=RoundStatus.CLOSING))


def advance_interval_seconds() -> float | None:
    """How often the schedule advances closing rounds (Celery beat, or the embedded mode's thread:
    base/embedded_beat.py run the same entry); None when no entry does."""
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        if entry["task"] == rounds.ADVANCE_TASK:
            return float(entry["schedule"])  # type: ignore[arg-type] # the project's entries are seconds
    return None
