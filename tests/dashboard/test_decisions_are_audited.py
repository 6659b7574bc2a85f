"""A researcher's decisions on premises (release, retire, edit, hold) and on adversarial rounds
(close, advance) are in their team's audit log, written in the action's transaction: a refused
action leaves no entry, and a round the beat moves on is recorded with no actor."""

import pytest
from django.urls import reverse

from adversarial import rounds
from adversarial.models import AdversarialStudy, Round, RoundStatus
from audit.models import AuditEntry
from base.long_tasks import JobStatus
from collection import premise_pool
from collection.models import PremiseReport
from corpus.models import Premise, PremiseStatus
from crowd.models import TaskKind
from modeling.models import RunStatus, Snapshot, TrainingRun
from tests.two_teams import two_teams

pytestmark = pytest.mark.django_db


@pytest.fixture
def labs(django_user_model, make_worker):
    return two_teams(django_user_model, make_worker)


@pytest.fixture
def reported(labs):
    """Team A's premise without pairs, held after a report."""
    premise = Premise.objects.filter(dataset=labs.dataset_a, pairs__isnull=True).get()
    Premise.objects.filter(pk=premise.pk).update(status=PremiseStatus.HELD)
    PremiseReport.objects.create(premise=premise, message="Half a sentence.")
    return premise


def _entry(action):
    return AuditEntry.objects.get(action=action)


@pytest.mark.parametrize(
    ("choice", "action", "status"),
    [("release", "premise.released", PremiseStatus.AVAILABLE), ("retire", "premise.retired", PremiseStatus.RETIRED)],
)
def test_releasing_or_retiring_a_reported_premise_is_recorded(client, labs, reported, choice, action, status):
    client.force_login(labs.owner_a)
    client.post(reverse("dashboard:report_action", args=[reported.pk]), {"action": choice})
    entry = _entry(action)
    assert (entry.team_id, entry.actor_id) == (labs.team_a.pk, labs.owner_a.pk)
    assert (entry.subject_type, entry.subject_id) == ("corpus.premise", str(reported.pk))
    assert entry.before == {"statuses": {PremiseStatus.HELD: 1}}
    assert entry.after["status"] == status and entry.after["reports_resolved"] == 1
    assert entry.after["premises"] == [reported.prompt_id]
    assert entry.dataset_slugs == ["lab-a-data"]


def test_editing_a_premise_records_the_old_and_new_text(client, labs, reported):
    client.force_login(labs.owner_a)
    client.post(reverse("dashboard:report_action", args=[reported.pk]), {"action": "edit", "text": "A whole sentence."})
    entry = _entry("premise.edited")
    assert (entry.team_id, entry.actor_id, entry.subject_id) == (labs.team_a.pk, labs.owner_a.pk, str(reported.pk))
    assert entry.before == {"text": reported.text, "status": PremiseStatus.HELD}
    assert entry.after == {"text": "A whole sentence.", "status": PremiseStatus.AVAILABLE, "reports_resolved": 1}


def test_a_refused_edit_leaves_no_entry(client, labs):
    written = Premise.objects.filter(dataset=labs.dataset_a, pairs__isnull=False).distinct()[0]
    client.force_login(labs.owner_a)
    client.post(reverse("dashboard:report_action", args=[written.pk]), {"action": "edit", "text": "Other text."})
    assert not AuditEntry.objects.filter(action__startswith="premise.").exists()


def test_another_teams_owner_neither_acts_nor_leaves_an_entry(client, labs, reported):
    client.force_login(labs.owner_b)
    response = client.post(reverse("dashboard:report_action", args=[reported.pk]), {"action": "retire"})
    assert response.status_code == 404
    assert Premise.objects.get(pk=reported.pk).status == PremiseStatus.HELD
    assert not AuditEntry.objects.filter(action__startswith="premise.").exists()


def test_a_bulk_hold_is_one_entry_per_team_naming_its_premises(labs):
    premise_b = Premise.objects.create(dataset=labs.dataset_b, genre=reported_genre(labs), prompt_id="b1")
    chosen = Premise.objects.filter(dataset__in=[labs.dataset_a, labs.dataset_b])
    premise_pool.hold_premises(chosen, actor=labs.owner_a)
    by_team = {entry.team_id: entry for entry in AuditEntry.objects.filter(action="premise.held")}
    assert set(by_team) == {labs.team_a.pk, labs.team_b.pk}
    assert by_team[labs.team_a.pk].after["count"] == Premise.objects.filter(dataset=labs.dataset_a).count()
    assert by_team[labs.team_b.pk].after["premises"] == [premise_b.prompt_id]


def reported_genre(labs):
    return Premise.objects.filter(dataset=labs.dataset_a)[0].genre


def _closing_round(labs):
    """Team A's adversarial round whose snapshots and next target are done: one step opens round 2."""
    study = labs.studies_a[TaskKind.ADVERSARIAL]
    AdversarialStudy.objects.create(study=study)
    snapshots = [
        Snapshot.objects.create(team=labs.team_a, datasets=["lab-a-data"], status=JobStatus.DONE) for _ in range(2)
    ]
    run = TrainingRun.objects.create(snapshot=snapshots[1], snapshot_hash="h", model="majority", status=RunStatus.DONE)
    return Round.objects.create(
        study=study,
        number=1,
        dataset=labs.dataset_a,
        target_endpoint="http://127.0.0.1:9/",
        status=RoundStatus.CLOSING,
        round_snapshot=snapshots[0],
        training_snapshot=snapshots[1],
        next_run=run,
    )


def test_a_researchers_advance_is_recorded_with_the_round_it_opened(client, labs):
    round_ = _closing_round(labs)
    client.force_login(labs.owner_a)
    client.post(reverse("dashboard:adversarial_advance", args=[round_.study.slug]))
    entry = _entry("adversarial.round_advanced")
    assert (entry.team_id, entry.actor_id, entry.subject_id) == (labs.team_a.pk, labs.owner_a.pk, str(round_.pk))
    assert entry.after["step"] == "closed, next round opened" and entry.after["next_round"] == 2
    assert Round.objects.filter(study=round_.study, number=2, status=RoundStatus.OPEN).exists()


def test_the_beats_advance_is_recorded_with_no_actor_and_a_waiting_round_with_nothing(labs):
    round_ = _closing_round(labs)
    Snapshot.objects.filter(pk=round_.round_snapshot_id).update(status=JobStatus.RUNNING)
    rounds.advance_all()
    assert not AuditEntry.objects.filter(action="adversarial.round_advanced").exists()
    Snapshot.objects.filter(pk=round_.round_snapshot_id).update(status=JobStatus.DONE)
    rounds.advance_all()
    entry = _entry("adversarial.round_advanced")
    assert (entry.team_id, entry.actor_id, entry.actor) == (labs.team_a.pk, None, "")


def test_closing_a_round_is_recorded(labs):
    study = labs.studies_a[TaskKind.ADVERSARIAL]
    AdversarialStudy.objects.create(study=study)
    round_ = Round.objects.create(study=study, number=1, dataset=labs.dataset_a, target_endpoint="http://127.0.0.1:9/")
    rounds.close_round(round_, user=labs.owner_a)
    entry = _entry("adversarial.round_closed")
    assert (entry.team_id, entry.actor_id, entry.subject_id) == (labs.team_a.pk, labs.owner_a.pk, str(round_.pk))
    round_.refresh_from_db()
    assert entry.after["round_snapshot"] == round_.round_snapshot_id
