"""The audit log: append-only, and one entry for each researcher action, written by the
service that acts, with who, what, before and after, and why."""

from decimal import Decimal

import pytest
from django.contrib.admin.sites import site
from django.core.management import call_command
from django.db import IntegrityError, InternalError, transaction
from django.forms.models import model_to_dict
from django.test import RequestFactory
from django.urls import reverse

from audit import services as audit
from audit.models import AuditEntry
from audit.selectors import summary_for_datasets
from corpus.adjudication import adjudicate
from corpus.models import AdjudicationAction, Label
from crowd.models import Study, StudySession, TaskKind
from modeling.models import Snapshot
from modeling.release import decisions_markdown
from modeling.snapshots.services import create_snapshot
from quality import bonuses
from quality.models import BonusEntry, BonusKind
from quality.services import set_excluded, set_reference_label
from teams.models import Membership, Role, Team, default_team, default_team_id
from tests import factories

pytestmark = pytest.mark.django_db


def entries(action):
    return list(AuditEntry.objects.filter(action=action))


def test_an_entry_is_never_changed_or_deleted(researcher):
    entry = audit.record("study.settings", subject_type="crowd.study", subject_id=1, after={"name": "x"})
    entry.reason = "rewritten"
    with pytest.raises(PermissionError):
        entry.save()
    with pytest.raises(PermissionError):
        entry.delete()
    # Not even a queryset, which skips the model's methods: the database refuses (a trigger).
    for change in (lambda: AuditEntry.objects.filter(pk=entry.pk).update(reason="x"), AuditEntry.objects.all().delete):
        with pytest.raises((InternalError, IntegrityError)), transaction.atomic():
            change()
    assert AuditEntry.objects.get(pk=entry.pk).reason == ""
    admin = site._registry[AuditEntry]
    request = RequestFactory().get("/")
    request.user = researcher  # a superuser: not even one changes the log in the admin
    assert request.user.is_superuser
    assert not admin.has_change_permission(request) and not admin.has_delete_permission(request)
    assert not admin.has_add_permission(request)


def test_exclusions_and_readmissions_say_who_why_and_which_data(researcher, make_worker):
    ds = factories.dataset("excl")
    worker = make_worker(external_id="w-excl")
    factories.pair(ds, factories.premise(ds), ["entailment", "neutral"], validators=[worker])
    set_excluded([worker.pk], True, teams=[default_team_id()], by=researcher, reason="random guesser")
    set_excluded([worker.pk], False, teams=[default_team_id()], by=researcher, reason="appeal upheld")
    (out,) = entries("worker.excluded")
    (back,) = entries("worker.readmitted")
    assert (out.actor, out.reason, out.before, out.after) == (
        researcher.username,
        "random guesser",
        {"excluded": False},
        {"excluded": True},
    )
    assert out.subject == "w-excl" and out.dataset_slugs == ["excl"]
    assert back.reason == "appeal upheld" and back.after == {"excluded": False}


def test_adjudications_and_withdrawals_and_gold_changes(researcher):
    ds = factories.dataset("adj")
    pair = factories.pair(
        ds, factories.premise(ds), ["entailment", "neutral", "neutral", "contradiction", "entailment"]
    )
    adjudicate(pair, Label.NEUTRAL, researcher=researcher, reason="annotator error", note="checked twice")
    adjudicate(pair, "", researcher=researcher, action=AdjudicationAction.WITHDRAW, reason="second look")
    labelled, withdrawn = entries("adjudication.label"), entries("adjudication.withdraw")
    assert labelled[0].before == {"gold_label": "-"} and labelled[0].after["gold_label"] == "neutral"
    assert labelled[0].reason == "annotator error — checked twice" and labelled[0].team_id == ds.team_id
    assert withdrawn[0].before == {"gold_label": "neutral"} and withdrawn[0].reason == "second look"
    set_reference_label(pair, "neutral", by=researcher, note="gold for the catch pool")
    set_reference_label(pair, "contradiction", by=researcher, is_catch_trial=True)
    first, second = sorted(entries("gold.reference_label"), key=lambda e: e.pk)
    assert first.before == {} and first.after == {"label": "neutral", "is_catch_trial": False}
    assert second.before == {"label": "neutral", "is_catch_trial": False}
    assert second.after == {"label": "contradiction", "is_catch_trial": True}


def test_payments_are_recorded_with_their_amounts(researcher, make_worker):
    ds = factories.dataset("pay")
    study = Study.objects.create(slug="pay", name="pay", dataset=ds, task_kind=TaskKind.VALIDATION, completion_code="C")
    worker = make_worker(external_id="w-pay")
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="s-pay")
    given = bonuses.give_discretionary_bonus(session, "1.50", "extra care", by=researcher)
    (gift,) = entries("payment.discretionary_bonus")
    assert gift.reason == "extra care" and gift.after["amount"] == "1.50" and gift.team_id == study.team_id
    bonuses.mark_paid(study, [given.pk], by=researcher)
    (paid,) = entries("payment.marked_paid")
    assert paid.after["bonuses"] == [given.pk] and paid.after["amount"] == "1.50"
    assert BonusEntry.objects.filter(kind=BonusKind.PAID).count() == 1


def test_snapshots_and_a_releases_datasheet_summary(researcher):
    ds = factories.dataset("snap")
    pair = factories.pair(ds, factories.premise(ds), ["entailment"])
    set_reference_label(pair, "entailment", by=researcher)
    snapshot = create_snapshot(researcher, datasets=["snap"])
    (made,) = entries("snapshot.created")
    assert made.subject_id == str(snapshot.pk) and made.after["datasets"] == ["snap"]
    Snapshot.objects.filter(pk=snapshot.pk).update(finished_at=made.at)
    snapshot.refresh_from_db()
    summary = {row["action"]: row["count"] for row in summary_for_datasets(["snap"], until=snapshot.finished_at)}
    assert summary == {"gold.reference_label": 1}  # decisions on the data, not the exports made of it
    text = decisions_markdown(snapshot)
    assert "| gold.reference_label | 1 |" in text and "snapshot.created" not in text
    audit.record("gold.reference_label", datasets=["snap"])  # after the snapshot: not in its card
    assert decisions_markdown(snapshot) == text


def test_study_settings_are_recorded_before_and_after(researcher, rf):
    ds = factories.dataset("settings")
    study = Study.objects.create(
        slug="settings", name="Old name", dataset=ds, task_kind=TaskKind.VALIDATION, completion_code="C"
    )
    model_admin = site._registry[Study]
    request = rf.post("/")
    request.user = researcher
    form_class = model_admin.get_form(request, study)
    data = {key: value for key, value in model_to_dict(study).items() if value is not None}
    data.update(name="New name", bonus_per_catch_match=Decimal("0.25"))
    form = form_class(data, instance=study)
    assert form.is_valid(), form.errors
    model_admin.save_model(request, form.save(commit=False), form, change=True)
    (entry,) = entries("study.settings")
    assert entry.before["name"] == "Old name" and entry.after["name"] == "New name"
    assert entry.before["bonus_per_catch_match"] != entry.after["bonus_per_catch_match"]
    assert entry.actor == researcher.username and entry.dataset_slugs == ["settings"]


def test_membership_and_moves(django_user_model):
    django_user_model.objects.create_user("newcomer")
    Team.objects.create(slug="lab-b", name="Lab B")
    call_command("grant_researcher", "newcomer", "--team", "lab-b", "--role", Role.ANNOTATOR)
    (joined,) = entries("team.member_added")
    assert joined.after == {"user": "newcomer", "role": "annotator"}
    assert Membership.objects.get(user__username="newcomer").team.slug == "lab-b"
    ds = factories.dataset("moving")
    study = Study.objects.create(
        slug="moving", name="m", dataset=ds, task_kind=TaskKind.VALIDATION, completion_code="C"
    )
    call_command("move_to_team", "lab-b", "--study", "moving", "--reason", "the lab split")
    study.refresh_from_db()
    ds.refresh_from_db()
    assert study.team.slug == ds.team.slug == "lab-b"
    moves = entries("team.moved")
    assert len(moves) == 4 and {m.reason for m in moves} == {"the lab split"}
    assert {m.team_id for m in moves} == {default_team().pk, study.team_id}


def test_the_audit_page_csv_and_api_show_the_users_teams_only(client, django_user_model):
    mine, theirs = Team.objects.create(slug="mine", name="mine"), Team.objects.create(slug="theirs", name="theirs")
    from base.permissions import ensure_researcher_group

    user = django_user_model.objects.create_user("auditor", password="pw", is_staff=True)
    user.groups.add(ensure_researcher_group())
    Membership.objects.create(team=mine, user=user, role=Role.RESEARCHER)
    audit.record("worker.excluded", team_id=mine.pk, subject_label="ours", reason="why-ours")
    audit.record("worker.excluded", team_id=theirs.pk, subject_label="theirs", reason="why-theirs")
    client.force_login(user)
    page = client.get(reverse("dashboard:audit"), {"action": "worker."}).content.decode()
    assert "why-ours" in page and "why-theirs" not in page
    csv_text = client.get(reverse("dashboard:audit_csv")).content.decode()
    assert "why-ours" in csv_text and "why-theirs" not in csv_text
    api = client.get(reverse("audit-entry-list")).json()["results"]
    assert [row["reason"] for row in api] == ["why-ours"]
    audit.record("worker.readmitted", subject_label="shared", reason="why-shared")  # no team: every team's
    assert "why-shared" in client.get(reverse("dashboard:audit")).content.decode()
    # The admin, with the group's permissions alone: the same entries, read only.
    admin_list = client.get(reverse("admin:audit_auditentry_changelist"))
    assert admin_list.status_code == 200
    assert {entry.reason for entry in admin_list.context["cl"].result_list} == {"why-ours", "why-shared"}
    ours = AuditEntry.objects.get(reason="why-ours")
    assert client.get(reverse("admin:audit_auditentry_change", args=[ours.pk])).status_code == 200
    assert client.get(reverse("admin:audit_auditentry_add")).status_code == 403
    theirs_entry = AuditEntry.objects.get(reason="why-theirs")
    assert client.get(reverse("admin:audit_auditentry_change", args=[theirs_entry.pk])).status_code == 302


def test_command_line_imports_of_pairs_and_premises_are_recorded_for_the_datasets_team(tmp_path):
    from corpus.models import Dataset
    from tests.importers.helpers import E, ensure_genres, snli_record, write_jsonl

    ensure_genres("captions", "fiction")
    lab = Team.objects.create(slug="lab-c", name="Lab C")
    Dataset.objects.create(slug="labs-data", name="labs-data", team=lab)
    write_jsonl(tmp_path / "snli_1.0_dev.jsonl", [snli_record("1.jpg#0r1e", [E])])
    premises = tmp_path / "stories.txt"
    premises.write_text("The old lighthouse keeper rowed out to the island before the storm came in.\n")

    call_command(
        "import_pairs", str(tmp_path / "snli_1.0_dev.jsonl"), "--dataset", "labs-data", "--no-progress", "--no-tag"
    )
    call_command("import_premises", str(premises), "--genre", "fiction", "--dataset", "labs-data", "--no-progress")

    started = {entry.after["kind"]: entry for entry in entries("import.started")}
    assert set(started) == {"pairs", "premises"}
    assert started["pairs"].after["file"] == "snli_1.0_dev.jsonl" and started["pairs"].after["split"] == "dev"
    assert started["premises"].after["file"] == "stories.txt" and started["premises"].after["genre"] == "fiction"
    for entry in started.values():
        assert (entry.team_id, entry.dataset_slugs, entry.actor) == (lab.pk, ["labs-data"], "")
