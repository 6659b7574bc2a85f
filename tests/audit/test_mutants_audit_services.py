"""Writing the audit log (audit/services.py) at the edges mutmut found unguarded: an entry keeps
its values as JSON does (figures as figures, dates and decimals as text, rows by their id, sets as
lists), names its subject and a signed-in actor (never an anonymous one), cuts a long subject to
its column; a bulk action writes one entry per team, in team order (rows of no team first), with
the rows and datasets of that team; a redaction blanks the longest word first, in keys, lists and
texts alike, forgets the actor's id only when the actor's name was blanked, refuses blank words
and reasons, and records itself with the count."""

import datetime
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import DatabaseError, transaction

from audit.models import AuditEntry
from audit.services import REDACTED, record, record_batch, redact
from corpus.models import Dataset, Pair
from teams.models import Team, default_team_id
from tests import factories

pytestmark = pytest.mark.django_db


def test_an_entry_keeps_figures_as_figures_and_everything_else_as_json_text(researcher):
    day = datetime.date(2026, 1, 2)
    entry = record(
        "study.settings",
        subject_type="crowd.study",
        before={
            "none": None,
            "yes": True,
            "count": 3,
            "share": 0.5,
            "name": "x",
            "fee": Decimal("1.50"),
            "day": day,
            "ids": (1, 2),
            "kinds": {"a"},
            "frozen": frozenset({"b"}),
            "nested": {"fee": Decimal("2")},
            "who": researcher,
        },
    )

    stored = AuditEntry.objects.get(pk=entry.pk).before
    assert stored == {
        "none": None,
        "yes": True,
        "count": 3,
        "share": 0.5,
        "name": "x",
        "fee": "1.50",
        "day": "2026-01-02",
        "ids": [1, 2],
        "kinds": ["a"],
        "frozen": ["b"],
        "nested": {"fee": "2"},
        "who": researcher.pk,
    }
    assert stored["yes"] is True and entry.after == {}


def test_an_entry_names_its_subject_row_unless_told_otherwise(researcher):
    dataset = factories.dataset("named")

    by_row = record("dataset.renamed", actor=researcher, subject=dataset)
    told = record(
        "dataset.renamed", subject=dataset, subject_type="other.type", subject_id="given", subject_label="said"
    )

    assert (by_row.subject_type, by_row.subject_id, by_row.subject) == ("corpus.dataset", str(dataset.pk), str(dataset))
    assert (by_row.actor, by_row.actor_id) == (researcher.username, researcher.pk)
    assert (told.subject_type, told.subject_id, told.subject) == ("other.type", "given", "said")
    assert (told.actor, told.actor_id) == ("", None)
    assert (by_row.reason, by_row.before, by_row.after, by_row.team_id) == ("", {}, {}, None)


def test_an_anonymous_visitor_or_a_participant_without_a_login_is_recorded_as_the_system(make_worker):
    anonymous = record("study.settings", actor=AnonymousUser(), subject_type="crowd.study")
    participant = record("study.settings", actor=make_worker(), subject_type="crowd.study")

    assert (anonymous.actor, anonymous.actor_id) == ("", None)
    assert (participant.actor, participant.actor_id) == ("", None)


def test_a_long_subject_is_cut_to_its_column_and_datasets_are_listed_once_in_order():
    entry = record(
        "study.settings",
        subject_type="crowd.study",
        subject_id="i" * 80,
        subject_label="s" * 250,
        datasets=["mnli", "snli", "mnli"],
    )

    stored = AuditEntry.objects.get(pk=entry.pk)
    assert (stored.subject_id, stored.subject) == ("i" * 64, "s" * 200)
    assert stored.dataset_slugs == ["mnli", "snli"]


def pairs_of(dataset: Dataset, count: int) -> None:
    premise = factories.premise(dataset)
    for _ in range(count):
        factories.pair(dataset, premise, ["entailment"])


def test_a_bulk_action_writes_one_entry_per_team_in_team_order_with_its_own_rows_and_datasets(researcher):
    later = Team.objects.create(slug="later", name="Later")
    earlier = Team.objects.create(slug="earlier", name="Earlier")
    assert earlier.pk > later.pk
    pairs_of(factories.dataset("l-one", team=later), 2)
    pairs_of(factories.dataset("l-two", team=later), 1)
    pairs_of(factories.dataset("e-one", team=earlier), 1)

    record_batch(
        "adjudication.sent",
        Pair.objects.filter(dataset__team__in=[later, earlier]),
        actor=researcher,
        reason="typed elsewhere",
        token="tok",
    )

    entries = list(AuditEntry.objects.filter(action="adjudication.sent").order_by("id"))
    assert [
        (e.team_id, e.after, e.dataset_slugs, e.subject, e.subject_id, e.subject_type, e.reason, e.actor)
        for e in entries
    ] == [
        (
            later.pk,
            {"rows": 3, "batch": "tok"},
            ["l-one", "l-two"],
            "3 rows (batch tok)",
            "tok",
            "corpus.pair",
            "typed elsewhere",
            researcher.username,
        ),
        (
            earlier.pk,
            {"rows": 1, "batch": "tok"},
            ["e-one"],
            "1 rows (batch tok)",
            "tok",
            "corpus.pair",
            "typed elsewhere",
            researcher.username,
        ),
    ]


def test_rows_of_no_team_come_before_every_teams_rows_in_a_bulk_action(researcher):
    first_team = default_team_id()
    record("pair.gold", subject_type="corpus.pair", team_id=first_team)
    record("pair.gold", subject_type="corpus.pair", team_id=None)
    record("pair.gold", subject_type="corpus.pair", team_id=None)

    record_batch(
        "audit.exported",
        AuditEntry.objects.filter(action="pair.gold"),
        actor=researcher,
        reason="export",
        token="t",
        team="team_id",
        dataset="subject_type",
    )

    entries = AuditEntry.objects.filter(action="audit.exported").order_by("id")
    assert [(e.team_id, e.after["rows"], e.dataset_slugs) for e in entries] == [
        (None, 2, ["corpus.pair"]),
        (first_team, 1, ["corpus.pair"]),
    ]


def said(**fields: Any) -> AuditEntry:
    return record("worker.excluded", subject_type="corpus.worker", subject_id=7, **fields)


def test_a_redaction_blanks_the_longest_word_first_in_keys_lists_and_texts(researcher):
    entry = said(
        subject_label="ann and ann@example.org",
        reason="ann@example.org guessed",
        before={"ann@example.org": ["ann", 3, {"x": "ann"}], "n": 1},
    )

    changed = redact(
        AuditEntry.objects.filter(pk=entry.pk), ["ann", "ann@example.org", " "], actor=researcher, reason="erasure"
    )

    stored = AuditEntry.objects.get(pk=entry.pk)
    assert changed == 1
    assert stored.subject == f"{REDACTED} and {REDACTED}"
    assert stored.reason == f"{REDACTED} guessed"
    assert stored.before == {REDACTED: [REDACTED, 3, {"x": REDACTED}], "n": 1}


def test_a_full_name_is_blanked_whole_before_the_surname_it_contains(researcher):
    entry = said(reason="Ann Zed guessed, said Zed")

    redact(AuditEntry.objects.filter(pk=entry.pk), ["Zed", "Ann Zed"], actor=researcher, reason="erasure")

    assert AuditEntry.objects.get(pk=entry.pk).reason == f"{REDACTED} guessed, said {REDACTED}"


def test_a_redaction_forgets_the_actors_id_only_when_it_blanks_the_actors_name(django_user_model, researcher):
    ann = django_user_model.objects.create_user(username="ann")
    named = said(actor=ann, reason="ann's call")
    mentioned = said(actor=researcher, reason="about ann")

    assert (
        redact(AuditEntry.objects.filter(pk__in=[named.pk, mentioned.pk]), ["ann"], actor=researcher, reason="erasure")
        == 2
    )

    named = AuditEntry.objects.get(pk=named.pk)
    mentioned = AuditEntry.objects.get(pk=mentioned.pk)
    assert (named.actor, named.actor_id) == (REDACTED, None)
    assert (mentioned.actor, mentioned.actor_id) == (researcher.username, researcher.pk)


def test_a_redaction_counts_only_the_entries_it_changed_and_records_that_count(researcher):
    said(reason="ann guessed")
    said(reason="bob guessed")
    said(reason="ann again")

    changed = redact(
        AuditEntry.objects.filter(action="worker.excluded"), ["ann"], actor=researcher, reason="erasure 12"
    )

    assert changed == 2
    (entry,) = AuditEntry.objects.filter(action="audit.redacted")
    assert (entry.subject_type, entry.subject, entry.after, entry.reason) == (
        "audit.auditentry",
        "2 entries",
        {"entries": 2},
        "erasure 12",
    )
    assert (entry.actor, entry.actor_id) == (researcher.username, researcher.pk)


@pytest.mark.parametrize("words", [[], ["", "  "]])
def test_a_redaction_of_no_word_is_refused_and_changes_nothing(researcher, words):
    said(reason="ann guessed")

    with pytest.raises(ValueError) as refused:
        redact(AuditEntry.objects.all(), words, actor=researcher, reason="erasure")

    assert str(refused.value) == "Name at least one word to redact."
    assert not AuditEntry.objects.filter(action="audit.redacted").exists()


@pytest.mark.parametrize("reason", ["", "   "])
def test_a_redaction_without_a_reason_is_refused_and_changes_nothing(researcher, reason):
    entry = said(reason="ann guessed")

    with pytest.raises(ValueError) as refused:
        redact(AuditEntry.objects.all(), ["ann"], actor=researcher, reason=reason)

    assert str(refused.value) == "Say why the entries are redacted (e.g. the erasure request it answers)."
    assert AuditEntry.objects.get(pk=entry.pk).reason == "ann guessed"


def test_the_redaction_door_is_shut_again_before_the_redaction_returns(researcher):
    other = said(reason="bob guessed")
    with transaction.atomic():
        redact(AuditEntry.objects.none(), ["ann"], actor=researcher, reason="erasure")
        with pytest.raises(DatabaseError), transaction.atomic():
            AuditEntry.objects.filter(pk=other.pk).update(reason="rewritten")
    assert AuditEntry.objects.get(pk=other.pk).reason == "bob guessed"
