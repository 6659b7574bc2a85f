"""Retention: what outlived its study's retention is pseudonymised, a dry run
changes nothing, and a run that stopped half-way finishes on the next without doing anything twice."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from audit.models import AuditEntry
from authorship.models import WritingEvidence
from corpus.models import Worker
from crowd.models import DeviceSighting, Study, StudySession
from privacy import services
from privacy.services import PSEUDONYM_PREFIX, apply_retention, pseudonym
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def expired(make_worker):
    factories.genre("fiction")
    dataset = factories.dataset("kept-a-while")
    study = Study.objects.create(slug="old", name="Old", dataset=dataset, completion_code="OLD", is_active=False)
    people = []
    for number in range(3):
        worker = make_worker(username=f"prolific-OLD{number}")
        Worker.objects.filter(pk=worker.pk).update(market="prolific", external_id=f"OLD{number}")
        session = StudySession.objects.create(
            study=study, worker=worker, external_session_id=f"S{number}", device=f"dev{number}"
        )
        ended = timezone.now() - timedelta(days=study.personal_data_retention_days + 1)
        StudySession.objects.filter(pk=session.pk).update(started_at=ended, completed_at=ended)
        DeviceSighting.objects.create(device=f"dev{number}", worker=worker)
        WritingEvidence.objects.create(
            worker=worker,
            study_session=session,
            field_name="hypothesis",
            keystrokes=40,
            typing_ms=9000,
            flags=["pasted"],
            flagged=True,
        )
        people.append(worker)
    return study, people


def test_a_dry_run_says_what_it_would_change_and_changes_nothing(expired):
    report = apply_retention(dry_run=True)
    assert report.changed["corpus.Worker.external_id"] == 3
    assert not AuditEntry.objects.filter(action="privacy.retention_applied").exists()
    assert report.changed["crowd.StudySession.device"] == 3
    assert Worker.objects.filter(external_id__startswith=PSEUDONYM_PREFIX).count() == 0
    call_command("retention", "--dry-run")
    assert StudySession.objects.filter(device__startswith=PSEUDONYM_PREFIX).count() == 0


def test_expired_ids_are_hashed_and_typing_reduced_to_flags(expired):
    apply_retention()
    assert sorted(Worker.objects.values_list("external_id", flat=True)) == sorted(
        pseudonym(f"OLD{number}") for number in range(3)
    )
    assert all(value.startswith(PSEUDONYM_PREFIX) for value in DeviceSighting.objects.values_list("device", flat=True))
    evidence = WritingEvidence.objects.all()
    assert {(row.keystrokes, row.typing_ms, row.flagged, tuple(row.flags)) for row in evidence} == {
        (0, 0, True, ("pasted",))
    }
    assert apply_retention().changed == {}  # nothing left: a second run does nothing
    entries = AuditEntry.objects.filter(action="privacy.retention_applied")
    assert entries.exists() and sum(sum(entry.after.values()) for entry in entries) >= 6


def test_a_study_still_running_or_within_its_days_keeps_everything(expired):
    study, _ = expired
    Study.objects.filter(pk=study.pk).update(is_active=True)
    assert apply_retention().changed == {}
    Study.objects.filter(pk=study.pk).update(is_active=False, personal_data_retention_days=400)
    assert apply_retention().changed == {}


def test_a_run_killed_half_way_finishes_on_the_next_without_double_work(expired, monkeypatch):
    monkeypatch.setattr(services, "RETENTION_BATCH", 1)
    real = services._retire_identity
    calls = {"n": 0}

    def dies_on_the_second(worker):
        calls["n"] += 1
        if calls["n"] == 2:
            raise SystemExit("killed")
        return real(worker)

    monkeypatch.setattr(services, "_retire_identity", dies_on_the_second)
    with pytest.raises(SystemExit):
        apply_retention()
    assert Worker.objects.filter(external_id__startswith=PSEUDONYM_PREFIX).count() == 1
    monkeypatch.setattr(services, "_retire_identity", real)
    report = apply_retention()
    assert report.changed["corpus.Worker.external_id"] == 2  # the two left, not the one done
    assert Worker.objects.filter(external_id__startswith=PSEUDONYM_PREFIX).count() == 3
    # Hashed once: a hash of a hash would differ from the id's own.
    assert sorted(Worker.objects.values_list("external_id", flat=True)) == sorted(
        pseudonym(f"OLD{number}") for number in range(3)
    )
