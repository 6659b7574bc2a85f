"""The audit log's model and its API at the edges mutmut found unguarded (audit/models.py,
audit/api.py).

An entry is appended once and never changed or deleted, each refusal saying so; an entry reads in
the admin as its minute, who (the system when nobody), the action and the subject. The API hands a
user the entries of the teams where their role may export (an annotator's team's entries are not
theirs to read), and the entries of no team, narrowed by each filter the user set.
"""

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from audit.models import AuditEntry
from audit.services import record
from base.permissions import ensure_researcher_group
from teams.models import Membership, Role, Team

pytestmark = pytest.mark.django_db


def test_a_new_entry_is_stored_and_a_stored_one_is_never_changed() -> None:
    entry = AuditEntry(action="pair.gold", subject_type="corpus.pair", subject="pair 1", reason="first")
    entry.save()
    assert AuditEntry.objects.get().reason == "first"
    entry.reason = "rewritten"
    with pytest.raises(PermissionError, match=r"^The audit log is append-only: an entry is never changed\.$"):
        entry.save()
    assert AuditEntry.objects.get().reason == "first"


def test_a_new_entrys_save_passes_its_arguments_on_to_django() -> None:
    # An update forced on an entry never stored (by keyword, or by position as Django 5 still
    # takes it) is refused, and nothing is appended.
    with pytest.raises(ValueError, match="no primary key"), transaction.atomic():
        AuditEntry(action="pair.gold", subject_type="corpus.pair").save(update_fields=["reason"])
    deprecated = pytest.warns(DeprecationWarning, match="Passing positional arguments to save")
    with deprecated, pytest.raises(ValueError, match="no primary key"), transaction.atomic():
        AuditEntry(action="pair.gold", subject_type="corpus.pair").save(False, True)
    assert not AuditEntry.objects.exists()


def test_an_entry_is_never_deleted_and_its_refusal_says_so() -> None:
    entry = record("worker.excluded", subject_type="corpus.worker", subject_id=3, reason="kept")
    with pytest.raises(PermissionError, match=r"^The audit log is append-only: an entry is never deleted\.$"):
        entry.delete()
    assert AuditEntry.objects.filter(pk=entry.pk, reason="kept").exists()


def test_an_entry_reads_as_its_minute_who_what_and_on_what() -> None:
    at = datetime(2024, 3, 5, 9, 7, 59, tzinfo=UTC)
    entry = AuditEntry(at=at, actor="alice", action="worker.excluded", subject="worker w-1")
    assert str(entry) == "2024-03-05 09:07 alice worker.excluded worker w-1"
    by_nobody = AuditEntry(at=at, actor="", action="study.settings", subject="A study")
    assert str(by_nobody) == "2024-03-05 09:07 system study.settings A study"


@pytest.fixture
def teams() -> tuple[Team, Team, Team]:
    return (
        Team.objects.create(slug="exported", name="exported"),
        Team.objects.create(slug="annotated", name="annotated"),
        Team.objects.create(slug="foreign", name="foreign"),
    )


@pytest.fixture
def reader(django_user_model: Any, teams: tuple[Team, Team, Team]) -> Client:
    """A researcher of the first team and an annotator of the second, logged in."""
    exported, annotated, _ = teams
    user = django_user_model.objects.create_user("audit-reader", password="pw", is_staff=True)
    user.groups.add(ensure_researcher_group())
    Membership.objects.create(team=exported, user=user, role=Role.RESEARCHER)
    Membership.objects.create(team=annotated, user=user, role=Role.ANNOTATOR)
    client = Client()
    client.force_login(user)
    return client


def reasons(client: Client, **params: str) -> list[str]:
    answer = client.get(reverse("audit-entry-list"), params)
    assert answer.status_code == 200, answer.content
    return [row["reason"] for row in answer.json()["results"]]


def test_the_api_reads_only_the_teams_where_the_user_may_export_and_the_entries_of_no_team(
    reader: Client, teams: tuple[Team, Team, Team]
) -> None:
    exported, annotated, foreign = teams
    record("worker.excluded", team_id=exported.pk, subject_label="w", reason="exported-team")
    record("worker.excluded", team_id=annotated.pk, subject_label="w", reason="annotator-team")
    record("worker.excluded", team_id=foreign.pk, subject_label="w", reason="foreign-team")
    record("worker.readmitted", subject_label="w", reason="no-team")
    assert reasons(reader) == ["no-team", "exported-team"]


def test_each_api_filter_narrows_by_its_own_field(
    reader: Client, teams: tuple[Team, Team, Team], django_user_model: Any
) -> None:
    exported = teams[0].pk
    alice = django_user_model.objects.create_user("alice")
    bob = django_user_model.objects.create_user("bob")
    record("pair.gold", actor=alice, team_id=exported, subject_type="corpus.pair", datasets=["snli"], reason="a")
    record("worker.excluded", actor=bob, team_id=exported, subject_type="corpus.worker", datasets=["mnli"], reason="b")
    record("pair.withdrawn", actor=bob, team_id=exported, subject_type="corpus.pair", datasets=["mnli"], reason="c")
    assert reasons(reader) == ["c", "b", "a"]
    assert reasons(reader, action="pair.") == ["c", "a"]
    assert reasons(reader, actor="bob") == ["c", "b"]
    assert reasons(reader, subject_type="corpus.worker") == ["b"]
    assert reasons(reader, dataset="snli") == ["a"]
