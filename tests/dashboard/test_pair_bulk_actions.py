"""The pair browser's filters and bulk actions: pairs found by writer,
study and flag, "retire all pairs of this writer" in one step with its count, and its undo; a
bulk action never takes every pair by an empty form."""

import html
from pathlib import Path

import pytest
from django.urls import reverse

from audit.models import AuditEntry
from authorship.models import WritingEvidence
from collection.models import WritingClaim
from corpus.models import Adjudication, Label, Pair, Split
from corpus.scope import Scope
from crowd.models import Study, StudySession, TaskKind
from dashboard.models import PairBulkAction
from dashboard.queries.pairs import PairFilters, matching_pairs
from modeling.models import SnapshotExclusion
from modeling.snapshots.selectors import pairs_for_export
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests import factories
from validation import adjudication
from validation.models import AdjudicationRequest

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value


@pytest.fixture
def two_writers(make_worker):
    dataset = factories.dataset("bulk")
    paster, honest = make_worker(external_id="PASTER1"), make_worker(external_id="HONEST1")
    study = Study.objects.create(slug="ws", name="WS", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="C")
    pasted = []
    for writer in (paster, honest):
        session = StudySession.objects.create(study=study, worker=writer, external_session_id=f"s-{writer.pk}")
        for _ in range(3):
            premise = factories.premise(dataset, split=Split.TRAIN)
            WritingClaim.objects.create(
                worker=writer,
                premise=premise,
                study_session=session,
                status="submitted",
                expires_at="2030-01-01T00:00Z",
            )
            pair = factories.pair(dataset, premise, [E], author=writer)
            if writer == paster:
                WritingEvidence.objects.create(
                    pair=pair, worker=writer, field_name="entailment", flags=["pasted"], flagged=True
                )
                pasted.append(pair)
    factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [N])  # written outside the study
    return dataset, paster, honest, pasted


def test_the_browser_finds_pairs_by_writer_study_and_typing_flag(two_writers):
    dataset, _, _, pasted = two_writers
    assert matching_pairs(Scope.of_dataset(dataset), PairFilters(writer="PASTER1")).count() == 3
    assert matching_pairs(Scope.of_dataset(dataset), PairFilters(study="ws")).count() == 6
    assert set(matching_pairs(Scope.of_dataset(dataset), PairFilters(flag="typing"))) == set(pasted)


def test_retire_all_pairs_of_a_writer_in_one_step_with_its_count_and_undo(client, researcher, two_writers):
    _, _, _, pasted = two_writers
    client.force_login(researcher)
    page = client.get(reverse("dashboard:pairs"), {"dataset": "bulk", "writer": "PASTER1"}).content.decode()
    assert "Retire all 3 pairs of writer PASTER1" in page
    response = client.post(
        reverse("dashboard:pairs_bulk"),
        {"dataset": "bulk", "writer": "PASTER1", "action": "retire", "reason": "pasted hypotheses", "expected": "3"},
        follow=True,
    )
    assert "3 pairs of writer PASTER1 are retired" in response.content.decode()
    assert set(Pair.objects.filter(gold_label="-", adjudicated_label="-")) == set(pasted)
    assert Adjudication.objects.filter(reason="pasted hypotheses").count() == 3
    assert 'id="bulk-history"' in response.content.decode()
    token = PairBulkAction.objects.get().token
    assert f'data-undo="{token}"' in response.content.decode()
    response = client.post(reverse("dashboard:pairs_bulk_undo"), {"token": token}, follow=True)
    assert "Undone: 3 pairs" in response.content.decode()
    assert not Pair.objects.filter(adjudicated_label="-").exists()


def test_a_bulk_action_without_a_filter_changes_nothing(client, researcher, two_writers):
    client.force_login(researcher)
    response = client.post(reverse("dashboard:pairs_bulk"), {"action": "retire", "reason": "all"}, follow=True)
    assert "Choose the pairs with the filters first" in response.content.decode()
    assert not Adjudication.objects.exists()


def test_send_the_filtered_pairs_to_adjudication_with_their_count_an_audit_entry_and_undo(
    client, researcher, two_writers
):
    dataset, _, _, pasted = two_writers
    client.force_login(researcher)
    page = client.get(reverse("dashboard:pairs"), {"dataset": "bulk", "flag": "typing"}).content.decode()
    assert "Send 3 pairs to adjudication" in page
    response = client.post(
        reverse("dashboard:pairs_bulk"),
        {"dataset": "bulk", "flag": "typing", "action": "adjudicate", "reason": "typed elsewhere?", "expected": "3"},
        follow=True,
    )
    assert "3 pairs matching the filters are sent to adjudication" in response.content.decode()
    sent = adjudication.queue(Scope.of_dataset(dataset), adjudication.SENT_FILTER)
    assert set(sent) == set(pasted)
    assert adjudication.queue_counts(Scope.of_dataset(dataset))[adjudication.SENT_FILTER] == 3
    entry = AuditEntry.objects.get(action="adjudication.sent")
    assert (entry.after["rows"], entry.reason, entry.dataset_slugs) == (3, "typed elsewhere?", ["bulk"])
    # The adjudication page offers the queue, with the reason a researcher gave.
    queue_page = client.get(reverse("dashboard:adjudication"), {"dataset": "bulk", "queue": "sent"}).content.decode()
    assert pasted[0].pair_id in queue_page
    assert queue_page.count("Sent from the pair browser: “typed elsewhere?”") == 3
    # A decided pair leaves the queue; sending again leaves the decided and already-sent pairs alone.
    adjudication.decide(pasted[0], E, researcher=researcher, reason="fine")
    assert adjudication.queue(Scope.of_dataset(dataset), adjudication.SENT_FILTER).count() == 2
    token = PairBulkAction.objects.get().token
    response = client.post(reverse("dashboard:pairs_bulk_undo"), {"token": token}, follow=True)
    assert "Undone: 3 pairs are out of the" in response.content.decode()
    assert not adjudication.queue(Scope.of_dataset(dataset), adjudication.SENT_FILTER).exists()
    assert AuditEntry.objects.filter(action="adjudication.unsent").count() == 1


def test_keep_the_filtered_pairs_out_of_the_next_snapshot_and_undo(client, researcher, two_writers, settings, tmp_path):
    _, _, _, pasted = two_writers
    settings.SNAPSHOT_DIR = tmp_path / "snapshots"
    client.force_login(researcher)
    page = client.get(reverse("dashboard:pairs"), {"dataset": "bulk", "writer": "PASTER1"}).content.decode()
    assert "Keep 3 pairs out of the next snapshots" in page
    response = client.post(
        reverse("dashboard:pairs_bulk"),
        {"dataset": "bulk", "writer": "PASTER1", "action": "exclude", "reason": "pasted", "expected": "3"},
        follow=True,
    )
    assert "3 pairs of writer PASTER1 are kept out of the snapshots" in response.content.decode()
    assert AuditEntry.objects.get(action="snapshot.pairs_excluded").after["rows"] == 3
    # The pairs keep their gold; the export leaves them out (the files, not only the queryset).
    assert all(pair.gold_label == Pair.objects.get(pk=pair.pk).gold_label for pair in pasted)
    snapshot = export_snapshot(create_snapshot(None, datasets=["bulk"], filters={"splits": ["train"]}))
    exported = (Path(snapshot.directory) / "train.jsonl").read_text(encoding="utf-8")
    assert exported.count("\n") == 4
    assert not any(pair.pair_id in exported for pair in pasted)
    token = PairBulkAction.objects.get().token
    response = client.post(reverse("dashboard:pairs_bulk_undo"), {"token": token}, follow=True)
    assert "Undone: 3 pairs are in the next snapshots again" in response.content.decode()
    assert pairs_for_export(["bulk"], {"splits": ["train"]}).count() == 7


@pytest.mark.parametrize("action", ["retire", "adjudicate", "exclude"])
def test_a_bulk_action_without_a_reason_changes_nothing_and_says_why(client, researcher, two_writers, action):
    client.force_login(researcher)
    response = client.post(
        reverse("dashboard:pairs_bulk"),
        {"writer": "PASTER1", "action": action, "reason": "  ", "expected": "3"},
        follow=True,
    )
    text = response.content.decode()
    assert "Nothing was changed: Say why" in text
    assert not Adjudication.objects.exists() and not AuditEntry.objects.exists()
    assert not SnapshotExclusion.objects.exists() and not AdjudicationRequest.objects.exists()


def test_a_bulk_action_takes_only_the_dataset_the_page_shows(client, researcher, two_writers):
    """The form carries the page's dataset: pairs of another dataset that match the same filters
    are left alone (they were taken before: the scope was read from the POST's empty query string)."""
    _, _, _, pasted = two_writers
    other = factories.dataset("other")
    elsewhere = factories.pair(other, factories.premise(other, split=Split.TRAIN), [E])
    WritingEvidence.objects.create(
        pair=elsewhere, worker=pasted[0].author, field_name="entailment", flags=["pasted"], flagged=True
    )
    client.force_login(researcher)
    page = client.get(reverse("dashboard:pairs"), {"dataset": "bulk", "flag": "typing"}).content.decode()
    assert "Keep 3 pairs out of the next snapshots" in page
    response = client.post(
        reverse("dashboard:pairs_bulk"),
        {"dataset": "bulk", "flag": "typing", "action": "exclude", "reason": "typed elsewhere", "expected": "3"},
        follow=True,
    )
    assert "3 pairs matching the filters are kept out" in response.content.decode()
    assert set(SnapshotExclusion.objects.values_list("pair_id", flat=True)) == {pair.pk for pair in pasted}


def test_a_bulk_action_refuses_when_the_pairs_are_no_longer_those_the_page_counted(client, researcher, two_writers):
    client.force_login(researcher)
    response = client.post(
        reverse("dashboard:pairs_bulk"),
        {"dataset": "bulk", "writer": "PASTER1", "action": "retire", "reason": "pasted", "expected": "2"},
        follow=True,
    )
    assert "The filters now match 3 pairs, not the 2 this page counted: nothing was changed" in (
        response.content.decode()
    )
    assert not Adjudication.objects.exists() and not PairBulkAction.objects.exists()
    response = client.post(
        reverse("dashboard:pairs_bulk"),
        {"dataset": "bulk", "writer": "PASTER1", "action": "retire", "reason": "pasted"},
        follow=True,
    )
    assert "The page's count of the pairs is missing" in html.unescape(response.content.decode())
    assert not Adjudication.objects.exists()


def test_any_bulk_action_of_the_history_is_undone_not_only_the_last(client, researcher, two_writers):
    _ = two_writers
    client.force_login(researcher)
    for action in ("exclude", "adjudicate"):
        client.post(
            reverse("dashboard:pairs_bulk"),
            {"dataset": "bulk", "writer": "PASTER1", "action": action, "reason": action, "expected": "3"},
        )
    first, second = PairBulkAction.objects.order_by("pk")
    page = client.get(reverse("dashboard:pairs"), {"dataset": "bulk"}).content.decode()
    assert f'data-undo="{first.token}"' in page and f'data-undo="{second.token}"' in page
    response = client.post(reverse("dashboard:pairs_bulk_undo"), {"token": first.token}, follow=True)
    assert "Undone: 3 pairs are in the next snapshots again" in response.content.decode()
    assert not SnapshotExclusion.objects.exists() and AdjudicationRequest.objects.count() == 3
    first.refresh_from_db()
    assert first.undone_at is not None and first.undone_count == 3
    again = client.post(reverse("dashboard:pairs_bulk_undo"), {"token": first.token}, follow=True)
    assert "undone already" in again.content.decode()


def test_another_teams_researcher_cannot_undo_a_teams_bulk_action(client, researcher, two_writers, make_researcher):
    from teams.models import Membership, Role, Team

    client.force_login(researcher)
    client.post(
        reverse("dashboard:pairs_bulk"),
        {"dataset": "bulk", "writer": "PASTER1", "action": "exclude", "reason": "pasted", "expected": "3"},
    )
    token = PairBulkAction.objects.get().token
    outsider = make_researcher("outsider")
    outsider.is_superuser = False
    outsider.save(update_fields=["is_superuser"])
    Membership.objects.filter(user=outsider).delete()
    Membership.objects.create(user=outsider, team=Team.objects.create(slug="lab-b", name="Lab B"), role=Role.OWNER)
    client.force_login(outsider)
    assert token not in client.get(reverse("dashboard:pairs")).content.decode()
    response = client.post(reverse("dashboard:pairs_bulk_undo"), {"token": token}, follow=True)
    assert "No such bulk action of your team" in response.content.decode()
    assert SnapshotExclusion.objects.count() == 3
