"""The quality demo: a catch trial, a flagged guesser and an unpaid bonus to see; idempotent.
And `make demo` shows qualification and aggregation: a qualified study whose link leads to its
test, and a finished aggregation run on the dashboard; loading twice creates nothing new.
And the approval list (completed sessions: the admin list and its CSV export) and the
bonus page mark excluded and flagged workers, so none is approved or paid unseen.

The demo (`load_demo --no-artifacts --no-training`) is loaded once for the module
(tests.conftest.rows_for_the_module): each test sees it as one load leaves it.
"""

import csv
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from corpus.models import ValidationLabel, Worker
from corpus.recompute import recompute_gold
from crowd.models import Study, StudyAccess, StudySession
from quality import flags
from quality.models import (
    AggregatedLabel,
    AggregationRun,
    BonusCause,
    BonusEntry,
    BonusKind,
    CatchTrialAnswer,
    QualificationTest,
    ReferenceLabel,
)
from quality.services import set_excluded
from teams.models import default_team_id
from tests.conftest import rows_for_the_module
from tests.present import present

pytestmark = pytest.mark.django_db


def load():
    out = StringIO()
    call_command("load_demo", "--no-artifacts", "--no-training", stdout=out)
    return out.getvalue()


@pytest.fixture(scope="module")
def first_load(django_db_setup, django_db_blocker, tmp_path_factory):
    """What the first `load_demo` printed; the demo it loaded stays until the module ends."""
    with rows_for_the_module(django_db_blocker, tmp_path_factory.mktemp("demo")):
        yield load()


def test_demo_has_a_catch_trial_a_flagged_guesser_and_an_unpaid_bonus(client, first_load):
    output = first_load
    assert "/dashboard/bonuses/" in output and "'demo-guesser' is flagged" in output
    assert ReferenceLabel.objects.filter(is_catch_trial=True).count() == 1
    assert BonusEntry.objects.filter(kind="earned", payment__isnull=True).count() == 1
    assert recompute_gold(fix=False).disagreements == 0
    client.login(username="researcher", password="researcher-demo")
    page = client.get(reverse("dashboard:workers"))
    guesser = next(row for row in page.context["quality"] if str(row.worker) == "demo-guesser")
    assert flags.RANDOM_GUESSER in {flag.kind for flag in guesser.flags}
    bonuses = client.get(reverse("dashboard:bonuses"))
    assert bonuses.context["listed"].count == 1
    assert (
        client.get(reverse("dashboard:bonus_export", args=["demo-validation", "prolific"])).content
        == b"demo-pid-catch,1.00\n"
    )

    # Again: nothing new, and no validation label either (the guesser's pairs, added after the
    # demo's labels, once shifted which demo pairs the second load labelled).
    def counts():
        return (
            ReferenceLabel.objects.count(),
            CatchTrialAnswer.objects.count(),
            BonusEntry.objects.count(),
            ValidationLabel.objects.count(),
        )

    before = counts()
    again = load()
    assert counts() == before
    assert "already loaded: nothing created." in again


def test_demo_catch_trial_is_an_ordinary_demo_pair_without_a_marker(first_load):
    """The demo's catch trial was '<premise words> (surely).', a text no ordinary pair has.
    Every catch trial the demo marks is one of the demo's own written hypotheses (what validators
    meet in ordinary batches), with five labels that agree, and its text carries no mark."""
    from demo.premises import PREMISES, premise_entries

    written = {
        hypothesis
        for genre in PREMISES
        for _text, hypotheses in premise_entries(genre)
        if hypotheses
        for hypothesis in hypotheses
    }
    catch = list(ReferenceLabel.objects.filter(is_catch_trial=True).select_related("pair"))
    assert catch
    for reference in catch:
        pair = reference.pair
        assert pair.hypothesis in written, pair.hypothesis
        assert "(surely)" not in pair.hypothesis and not pair.pair_id.startswith("quality-")
        assert pair.label_count == 5 and pair.gold_label == pair.author_label == reference.label


def test_the_demo_has_a_qualified_study_with_a_test_and_an_aggregation_run(client, first_load):
    output = first_load
    test = QualificationTest.objects.get(study__slug="demo-qualified")
    assert test.study.access == StudyAccess.QUALIFIED and test.items.count() == 10 and test.items_per_try == 5
    assert all(item.label == item.pair.gold_label for item in test.items.all())
    run = AggregationRun.objects.get()
    assert run.status == "done" and AggregatedLabel.objects.filter(run=run).exists()

    link = present(re.search(r"qualified study \(test first\)\s+http://127\.0\.0\.1:8000(\S+)", output)).group(1)
    response = client.get(link)
    assert response.status_code == 302 and response["Location"] == "/qualify/demo-qualified/"
    assert client.get(response["Location"]).content.decode().count('class="card validation-pair') == 5
    assert f"/dashboard/aggregation/{run.pk}/" in output

    load()
    assert AggregationRun.objects.count() == 1 and QualificationTest.objects.count() == 1


# --- the approval and bonus lists mark excluded and flagged workers ---------------------------------


@pytest.fixture
def demo(first_load):
    """The loaded demo where 'demo-pid-catch' has a completed session and an unpaid bonus, and
    'demo-guesser' (flagged as a random guesser) is given the same."""
    study = Study.objects.get(slug="demo-validation")
    catcher = Worker.objects.get(external_id="demo-pid-catch")
    guesser = Worker.objects.get(user__username="demo-guesser")
    StudySession.objects.filter(worker=catcher, study=study).update(completed_at=timezone.now(), completion_code="C1")
    session = StudySession.objects.create(
        study=study, worker=guesser, external_session_id="guess-1", completed_at=timezone.now(), completion_code="G1"
    )
    entry = present(BonusEntry.objects.filter(worker=catcher, kind=BonusKind.EARNED).first())
    BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=guesser,
        study=study,
        study_session=session,
        pair=entry.pair,
        amount=entry.amount,
        currency=entry.currency,
        cause=BonusCause.OTHER,
        reason="test",
    )
    return study, catcher, guesser


def marks_on_bonus_page(client, study):
    page = client.get(reverse("dashboard:bonuses"), {"study": study.slug})
    unpaid = {str(entry.worker): entry.marks for entry in page.context["unpaid_page"]}
    totals = {row["name"]: row["marks"] for row in page.context["totals_page"]}
    return unpaid, totals, page.content.decode()


def approval_csv(client, study):
    response = client.post(
        reverse("admin:crowd_study_changelist"), {"action": "export_completions", "_selected_action": [study.pk]}
    )
    rows = list(csv.DictReader(StringIO(response.content.decode())))
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

    set_excluded([catcher.pk], True, teams=[default_team_id()])
    unpaid, totals, html = marks_on_bonus_page(client, study)
    assert unpaid[str(catcher)] == ["excluded"] == totals[str(catcher)]
    assert 'data-mark="excluded"' in html
    assert approval_csv(client, study)["demo-pid-catch"] == "excluded"
    sessions = client.get(
        reverse("admin:crowd_studysession_changelist"), {"study__id__exact": study.pk, "completed": "yes"}
    ).content.decode()
    assert sessions.count('class="worker-marks"') == 2
    assert "excluded" in sessions and "flagged: random guesser" in sessions
