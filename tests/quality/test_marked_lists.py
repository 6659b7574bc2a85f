"""Issue 27: the approval list (completed sessions: the admin list and its CSV export) and the bonus
page mark excluded and flagged workers, so none is approved or paid unseen. On the loaded demo:
'demo-pid-catch' has a completed session and an unpaid bonus; 'demo-guesser' is flagged as a random
guesser and is given the same here."""

import csv
import io

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from corpus.models import Worker
from crowd.models import Study, StudySession
from quality.models import BonusEntry, BonusKind
from quality.services import set_excluded

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    call_command("load_demo", "--no-artifacts", "--no-training", stdout=io.StringIO())
    study = Study.objects.get(slug="demo-validation")
    catcher = Worker.objects.get(external_id="demo-pid-catch")
    guesser = Worker.objects.get(user__username="demo-guesser")
    StudySession.objects.filter(worker=catcher, study=study).update(completed_at=timezone.now(), completion_code="C1")
    session = StudySession.objects.create(
        study=study, worker=guesser, external_session_id="guess-1", completed_at=timezone.now(), completion_code="G1"
    )
    entry = BonusEntry.objects.filter(worker=catcher, kind=BonusKind.EARNED).first()
    BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=guesser,
        study=study,
        study_session=session,
        pair=entry.pair,
        amount=entry.amount,
        currency=entry.currency,
        reason="test",
    )
    return study, catcher, guesser


def marks_on_bonus_page(client, study):
    page = client.get(reverse("dashboard:bonuses"), {"study": study.slug})
    unpaid = {str(entry.worker): entry.marks for entry in page.context["unpaid"]}
    totals = {row["name"]: row["marks"] for row in page.context["totals"]}
    return unpaid, totals, page.content.decode()


def approval_csv(client, study):
    response = client.post(
        reverse("admin:crowd_study_changelist"), {"action": "export_completions", "_selected_action": [study.pk]}
    )
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    return {row["worker_id"]: row["worker_marks"] for row in rows}


def test_bonus_and_approval_lists_mark_excluded_and_flagged_workers(client, demo):
    study, catcher, guesser = demo
    client.login(username="researcher", password="researcher-demo")
    unpaid, totals, html = marks_on_bonus_page(client, study)
    assert unpaid[str(catcher)] == [] and totals[str(catcher)] == []
    assert "flagged: random guesser" in unpaid[str(guesser)] and unpaid[str(guesser)] == totals[str(guesser)]
    assert 'data-mark="flagged: random guesser"' in html
    approvals = approval_csv(client, study)
    assert approvals["demo-pid-catch"] == "" and approvals["demo-guesser"].startswith("flagged: random guesser")

    set_excluded([catcher.pk], True)
    unpaid, totals, html = marks_on_bonus_page(client, study)
    assert unpaid[str(catcher)] == ["excluded"] == totals[str(catcher)]
    assert 'data-mark="excluded"' in html
    assert approval_csv(client, study)["demo-pid-catch"] == "excluded"
    sessions = client.get(
        reverse("admin:crowd_studysession_changelist"), {"study__id__exact": study.pk, "completed": "yes"}
    ).content.decode()
    assert sessions.count('class="worker-marks"') == 2
    assert "excluded" in sessions and "flagged: random guesser" in sessions
