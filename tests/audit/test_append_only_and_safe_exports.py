"""The audit log's own walls (docs/audit.md): its exports open in a spreadsheet as text, never as
formulas, as every other CSV of typed text does (base.spreadsheet_safe); its table refuses UPDATE,
DELETE and TRUNCATE whoever asks, but for the one redaction door (audit.services.redact)."""

import csv
import io
from collections.abc import Callable
from typing import Any, cast

import pytest
from django.contrib.admin.sites import site
from django.db import DatabaseError, connection, transaction
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from audit import services as audit
from audit.models import AuditEntry
from base.spreadsheet_safe import FORMULA_STARTS, safe_cell
from crowd.models import Study, StudySession, TaskKind
from tests import factories

pytestmark = pytest.mark.django_db

FORMULA = '=HYPERLINK("http://x","y")'


def csv_cells(text):
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def test_every_formula_start_is_quoted_and_figures_are_left_alone():
    for start in FORMULA_STARTS:
        assert safe_cell(f"{start}1+1") == f"'{start}1+1"
    assert safe_cell("a =1+1") == "a =1+1"
    assert safe_cell(-3) == -3 and safe_cell(0.5) == 0.5 and safe_cell(None) is None
    assert safe_cell({"reason": FORMULA}) == str({"reason": FORMULA})  # a dict's text starts with "{"


def test_the_audit_csv_carries_a_typed_formula_as_text_in_every_field(client, researcher):
    audit.record(
        "worker.excluded",
        actor=researcher,
        subject_type="corpus.worker",
        subject_id=FORMULA,
        subject_label=FORMULA,
        reason=FORMULA,
        after={"note": FORMULA},
    )
    audit.record("worker.readmitted", subject_type="corpus.worker", subject_label="-2+3", reason="@SUM(A1)")
    client.force_login(researcher)
    text = client.get(reverse("dashboard:audit_csv")).content.decode()
    cells = csv_cells(text)
    assert not [cell for cell in cells if cell.startswith(FORMULA_STARTS)], text
    assert cells.count("'" + FORMULA) == 3  # subject id, subject and reason, each kept whole
    assert "'-2+3" in cells and "'@SUM(A1)" in cells


def test_a_participants_typed_session_id_leaves_the_completions_csv_as_text(researcher, make_worker):
    study = Study.objects.create(
        slug="typed",
        name="typed",
        dataset=factories.dataset("typed"),
        task_kind=TaskKind.VALIDATION,
        completion_code="C",
    )
    StudySession.objects.create(
        study=study,
        worker=make_worker(external_id="+CMD|' /C calc'!A0"),
        external_session_id=FORMULA,
        completed_at=timezone.now(),
    )
    request = RequestFactory().post("/")
    request.user = researcher
    response = cast(Any, site._registry[Study]).export_completions(request, Study.objects.filter(pk=study.pk))
    cells = csv_cells(response.content.decode())
    assert "'" + FORMULA in cells and "'+CMD|' /C calc'!A0" in cells
    assert not [cell for cell in cells if cell.startswith(FORMULA_STARTS)]


def test_an_entry_is_refused_update_delete_and_truncate_through_the_orm_and_raw_sql():
    entry = audit.record("study.settings", subject_type="crowd.study", subject_id=1, reason="kept")
    attempts: list[Callable[[], object] | str] = [
        lambda: AuditEntry.objects.filter(pk=entry.pk).update(reason="rewritten"),
        lambda: AuditEntry.objects.filter(pk=entry.pk).delete(),
        "UPDATE audit_auditentry SET reason = 'rewritten'",
        "DELETE FROM audit_auditentry",
        "TRUNCATE audit_auditentry",
        # Saying "redaction" does not open DELETE, nor an UPDATE that makes it another entry.
        "SET LOCAL audit.allow_redaction = on; DELETE FROM audit_auditentry",
        "SET LOCAL audit.allow_redaction = on; UPDATE audit_auditentry SET action = 'other'",
        "SET LOCAL audit.allow_redaction = on; UPDATE audit_auditentry SET team_id = 99",
    ]
    for attempt in attempts:
        with pytest.raises(DatabaseError), transaction.atomic():
            if callable(attempt):
                attempt()
            else:
                with connection.cursor() as cursor:
                    cursor.execute(attempt)
    entry = AuditEntry.objects.get(pk=entry.pk)
    assert (entry.reason, entry.action, entry.team_id) == ("kept", "study.settings", None)


def test_a_redaction_blanks_a_persons_words_records_itself_and_shuts_the_door_again(researcher):
    said = audit.record(
        "worker.excluded",
        subject_type="corpus.worker",
        subject_id=7,
        subject_label="worker ann@example.org",
        reason="ann@example.org guessed",
        after={"email": "ann@example.org", "labels": 3},
    )
    other = audit.record("worker.excluded", subject_type="corpus.worker", subject_id=8, reason="bob guessed")
    with pytest.raises(ValueError):
        audit.redact(AuditEntry.objects.all(), ["ann@example.org"], actor=researcher, reason=" ")
    with transaction.atomic():
        changed = audit.redact(
            AuditEntry.objects.all(), ["ann@example.org"], actor=researcher, reason="erasure request 12"
        )
        # Still inside the same transaction: the door is shut again.
        with pytest.raises(DatabaseError), transaction.atomic():
            AuditEntry.objects.filter(pk=other.pk).update(reason="rewritten")
    assert changed == 1
    said = AuditEntry.objects.get(pk=said.pk)
    assert (said.subject, said.reason) == ("worker [redacted]", "[redacted] guessed")
    assert said.after == {"email": "[redacted]", "labels": 3}
    assert (said.action, said.subject_id) == ("worker.excluded", "7")
    assert AuditEntry.objects.get(pk=other.pk).reason == "bob guessed"
    (entry,) = AuditEntry.objects.filter(action="audit.redacted")
    assert entry.reason == "erasure request 12" and "ann@example.org" not in str(entry.after)
    assert entry.actor == researcher.username


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_leaves_an_entry_behind():
    audit.record("study.settings", subject_type="crowd.study", subject_id=1, reason="left behind")
    assert AuditEntry.objects.filter(reason="left behind").exists()


@pytest.mark.django_db(transaction=True)
def test_the_flush_between_tests_still_empties_the_log():
    # The suite's flush turns triggers off (tests/conftest.py, `_flush_by_delete`); the log's
    # refusal of DELETE and TRUNCATE must not leave the entry of the test above to this one.
    assert not AuditEntry.objects.filter(reason="left behind").exists()
