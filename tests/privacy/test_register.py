"""The register of personal data names every field that looks personal, and
docs/privacy.md names every registered field."""

import re
from pathlib import Path

from django.apps import apps

from corpus.models import Worker
from crowd.models import StudySession
from privacy.register import NOT_PERSONAL, REGISTER, registered_names

DOCS = Path(__file__).resolve().parents[2] / "docs" / "privacy.md"
LOOKS_PERSONAL = re.compile(
    r"(external|participant|_pid$|device|agent|(^|_)ip(_|$)|address|email|cookie|username|first_name|last_name|phone)"
)
FREE_TEXT_NAMES = re.compile(r"(text|message|hypothesis|note|comment|feedback|reason|explanation|answer|summary)")
FRAMEWORK = {"admin", "contenttypes", "sessions", "authtoken", "django_celery_beat", "django_celery_results"}


def participant_models():
    """Models whose rows a participant makes: they hang from a worker or a study session."""
    return {
        model
        for model in apps.get_models()
        for field in model._meta.concrete_fields
        if field.is_relation and field.related_model in (Worker, StudySession)
    }


def unregistered_personal_looking_fields():
    known = registered_names() | set(NOT_PERSONAL)
    written_by_participants = participant_models()
    found = []
    for model in apps.get_models():
        if model._meta.app_label in FRAMEWORK:
            continue
        for field in model._meta.concrete_fields:
            name = f"{model._meta.label}.{field.name}"
            text_like = field.get_internal_type() in ("TextField", "CharField", "JSONField")
            looks = LOOKS_PERSONAL.search(field.name) or field.get_internal_type() in (
                "GenericIPAddressField",
                "EmailField",
            )
            free_text = model in written_by_participants and text_like and FREE_TEXT_NAMES.search(field.name)
            if (looks or free_text) and name not in known and f"{model._meta.label}.*" not in known:
                found.append(name)
    return found


def test_every_field_that_looks_personal_is_registered_or_said_not_to_be():
    assert unregistered_personal_looking_fields() == [], (
        "Register these in privacy/register.py (or add them to NOT_PERSONAL with the reason)"
    )


def test_every_registered_field_exists():
    for entry in REGISTER:
        model = apps.get_model(entry.model)
        if entry.field != "*":
            model._meta.get_field(entry.field)


def test_docs_name_every_registered_field():
    text = DOCS.read_text(encoding="utf-8")
    missing = [name for name in sorted(registered_names()) if f"`{name}`" not in text]
    assert missing == []
