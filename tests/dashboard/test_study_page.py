"""A page per study with what Prolific shows natively (the funnel, time per task,
effective hourly pay, live claims, what is left) and its costs, and the sessions as a CSV.

Every figure is checked against a study built by hand, whose counts are written beside it."""

import csv
import io
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from collection.models import WritingClaim
from corpus.models import Market, Premise, PremiseStatus
from crowd.holds import UNVOUCHED, hold
from crowd.models import ClaimStatus, SessionEnding, Study, StudyAccess, StudySession, TaskKind
from dashboard.queries import study as queries
from quality import bonuses
from quality.guessers import GUESSER
from quality.models import BonusCause, BonusEntry, BonusKind, QualificationAttempt, QualificationTest
from tests import factories
from tests.dashboard.factories import worker
from tests.plans import analysed_plan
from tests.present import present
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db


def session(study, name, *, minutes_ago, market=Market.PROLIFIC, held: tuple[str, str] | None = None, **fields):
    """A session of a new worker `name`, started `minutes_ago`; `held`: its hold's (kind, text)."""
    visitor = worker(name, market=market, external_id=f"PID-{name}")
    made = StudySession.objects.create(study=study, worker=visitor, external_session_id=f"S-{name}", **fields)
    if held is not None:
        hold(made, *held)
    StudySession.objects.filter(pk=made.pk).update(started_at=timezone.now() - timedelta(minutes=minutes_ago))
    made.refresh_from_db()
    return made


def claim(study_session, premise, *, seconds=None, status=ClaimStatus.SUBMITTED, expires_in=30):
    """A writing claim of the session's worker, submitted `seconds` after it was made (or open)."""
    now = timezone.now()
    made = WritingClaim.objects.create(
        worker=study_session.worker,
        premise=premise,
        study_session=study_session,
        status=status,
        expires_at=now + timedelta(minutes=expires_in),
        submitted_at=now if status == ClaimStatus.SUBMITTED else None,
    )
    if seconds is not None:
        WritingClaim.objects.filter(pk=made.pk).update(created_at=now - timedelta(seconds=seconds))
    return made


def bonus(study_session, pair, cause, amount, *, paid=False):
    earned = BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=study_session.worker,
        study=study_session.study,
        study_session=study_session,
        pair=pair,
        amount=Decimal(amount),
        currency=study_session.study.bonus_currency,
        cause=cause,
        reason=f"A {cause.label}",
    )
    if paid:
        # Paid on the market (its confirmation is recorded even for a session whose code is held now).
        bonuses.mark_paid(study_session.study, [earned.pk], confirmed_by_market=True)
    return earned


def build_study(slug="five-hundred", extra_sessions=0):
    """A writing study (2 tasks a session at 1.50 GBP) with six sessions, one of each kind:

    s1 completed (20 min; tasks of 300 s and 600 s) · s2 completed, code held (10 min; a 120 s task)
    · s3 returned (a released claim) · s4 timed out · s5 in progress (an open claim) · s6 arrived.
    Pool: 3 premises, 3 writings each wanted, 0 / 1 / 3 done: 2 premises and 5 writings left.
    Bonuses: 1.00 owed for a catch trial (s1), 2.00 paid for a fooled example (s2)."""
    ds = factories.dataset(f"{slug}-ds", writings_per_premise=3)
    study = Study.objects.create(
        slug=slug,
        name=f"Study {slug}",
        dataset=ds,
        task_kind=TaskKind.WRITING,
        tasks_per_batch=2,
        completion_code="CODE",
        payment_per_task=Decimal("1.50"),
        bonus_currency="GBP",
    )
    premises = [factories.premise(ds) for _ in range(3)]
    other = factories.premise(ds)
    pair = factories.pair(ds, other, ["entailment"])
    s1 = session(study, f"{slug}-s1", minutes_ago=20, tasks_done=2)
    s2 = session(study, f"{slug}-s2", minutes_ago=10, tasks_done=2, held=(GUESSER, "labels at chance so far"))
    s3 = session(study, f"{slug}-s3", minutes_ago=5)
    s4 = session(study, f"{slug}-s4", minutes_ago=5)
    s5 = session(study, f"{slug}-s5", minutes_ago=3, market=Market.MTURK)
    session(study, f"{slug}-s6", minutes_ago=1)
    now = timezone.now()
    StudySession.objects.filter(pk__in=[s1.pk, s2.pk]).update(completed_at=now)
    StudySession.objects.filter(pk=s3.pk).update(
        closed_at=now, ended_as=SessionEnding.RETURNED, closed_reason="returned on Prolific"
    )
    StudySession.objects.filter(pk=s4.pk).update(
        closed_at=now, ended_as=SessionEnding.TIMED_OUT, closed_reason="timed out on Prolific"
    )
    claim(s1, premises[0], seconds=300)
    claim(s1, premises[1], seconds=600)
    claim(s2, premises[0], seconds=120)
    claim(s3, premises[2], status=ClaimStatus.RELEASED)
    claim(s5, premises[1], status=ClaimStatus.OPEN)
    for index in range(extra_sessions):
        extra = session(study, f"{slug}-x{index}", minutes_ago=30, tasks_done=0)
        claim(extra, premises[2], status=ClaimStatus.OPEN, expires_in=-5)  # expired: not live
    bonus(s1, pair, BonusCause.CATCH_TRIAL, "1.00")
    bonus(s2, pair, BonusCause.FOOLED_MODEL, "2.00", paid=True)
    for premise, done in zip(premises, (0, 1, 3), strict=True):
        Premise.objects.filter(pk=premise.pk).update(writings_done=done)
    Premise.objects.filter(pk=other.pk).update(status=PremiseStatus.RETIRED)
    return study


def test_the_funnel_counts_each_kind_of_session():
    study = build_study()
    assert queries.funnel(study) == {
        "arrived": 6,
        "qualified": 6,  # open access admits everyone
        "started": 4,  # s1, s2, s3 (its claim was released), s5
        "completed": 2,
        "held": 1,
        "returned": 1,
        "timed_out": 1,
        "rejected": 0,
        "in_progress": 1,
        "tasks": 4,
        "payable_tasks": 2,  # s1's; s2's code is held
        "held_tasks": 2,
        # Where the money of the tasks stands: s1's are owed (no market approved them), nothing
        # approved or paid; s5 runs with no task done.
        "stranded": 0,
        "market_connected": 0,
        "tasks_running": 0,
        "tasks_stranded": 0,
        "tasks_owed": 2,
        "tasks_approved": 0,
        "tasks_paid": 0,
        "held_apart": 1,
    }


def test_qualified_follows_the_access_rule():
    study = build_study()
    allowed = StudySession.objects.filter(study=study).order_by("started_at")[:2]
    study.blocked_workers.add(present(StudySession.objects.filter(study=study).order_by("started_at").last()).worker)
    assert queries.funnel(study)["qualified"] == 5  # open, but one worker is on the block list
    study.access = StudyAccess.CLOSED
    study.save()
    study.allowed_workers.set([s.worker for s in allowed])
    assert queries.funnel(study)["qualified"] == 2
    study.access = StudyAccess.QUALIFIED
    study.save()
    test = QualificationTest.objects.create(study=study)
    passed = present(StudySession.objects.filter(study=study).order_by("started_at").first())
    QualificationAttempt.objects.create(
        test=test, worker=passed.worker, number=1, correct=5, total=5, score=1, passed=True
    )
    QualificationAttempt.objects.create(
        test=test, worker=allowed[1].worker, number=1, correct=1, total=5, score=0.2, passed=False
    )
    assert queries.funnel(study)["qualified"] == 1


def test_times_pay_live_claims_what_is_left_and_costs():
    study = build_study()
    figures = queries.overview(study)
    # s2's code is held: its quick task and session are left out of the times and the pay.
    tasks = figures["task_times"]
    assert (tasks.n, tasks.median, tasks.q1, tasks.q3) == (2, 450.0, 375.0, 525.0)
    sessions = figures["session_times"]
    assert sessions.n == 1 and sessions.median == pytest.approx(1200.0, abs=2)
    assert figures["payment_per_session"] == Decimal("3.00")
    # 3.00 GBP over the median (the one) session whose money may go, of 20 minutes.
    assert figures["hourly_pay"] == pytest.approx(Decimal("9.00"), abs=Decimal("0.05"))
    # 1.50 GBP over the median task of 450 s.
    assert figures["task_hourly_pay"] == Decimal("12.00")
    assert figures["live"] == {"claims": 1, "sessions": 1}
    assert figures["left"]["items"] == 2 and figures["left"]["units"] == 5
    costs = figures["costs"]
    # s1's 2 tasks; s2's 2 are held apart, neither spent nor owed.
    assert str(costs.task_money) == "3.00 GBP"
    assert (costs.held_tasks, str(costs.held_task_money)) == (2, "3.00 GBP")
    by_cause = {row.cause.key: row for row in costs.by_cause}
    assert (by_cause["catch_trial"].earned, str(by_cause["catch_trial"].owed)) == (1, "1.00 GBP")
    # The market confirmed s2's bonus paid before its hold: the money was sent, so it is spent.
    assert (str(by_cause["fooled_model"].paid), by_cause["fooled_model"].owed.is_zero) == ("2.00 GBP", True)
    # Spent is what a market confirmed: the fooled bonus; s1's tasks are owed, not paid (no
    # market approved them).
    assert str(costs.spent) == "2.00 GBP" and str(costs.bonuses_owed) == "1.00 GBP"
    assert str(costs.owed) == "4.00 GBP" and costs.approved.is_zero
    assert costs.bonuses_held.is_zero


def test_the_page_shows_the_figures_and_the_studies_list_links_to_it(client, researcher):
    study = build_study()
    client.force_login(researcher)
    listing = client.get(reverse("dashboard:studies")).content.decode()
    assert f'href="{reverse("dashboard:study", args=[study.slug])}"' in listing
    html = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert '<tr data-step="returned"><td>returned on the market</td><td class="num" data-value="1">' in html
    assert 'id="stat-live-claims" data-value="1"' in html
    assert 'id="stat-left" data-value="5"' in html
    assert 'id="stat-spent" data-value="2.00"' in html and 'id="stat-owed" data-value="4.00"' in html
    assert 'id="stat-held-tasks" data-value="3.00"' in html
    assert 'id="stat-held-apart" data-value="1"' in html
    assert "bonuses: verified examples that fooled the model" in html
    assert reverse("dashboard:study_sessions_csv", args=[study.slug]) in html


def test_the_sessions_csv_has_a_row_per_session_and_no_market_ids(client, researcher):
    study = build_study()
    client.force_login(researcher)
    response = client.get(reverse("dashboard:study_sessions_csv", args=[study.slug]))
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert list(rows[0]) == queries.SESSION_CSV_COLUMNS
    assert [row["participant"] for row in rows] == ["p1", "p2", "p3", "p4", "p5", "p6"]
    assert [row["status"] for row in rows] == ["completed", "held", "returned", "timed out", "in progress", "arrived"]
    assert rows[1]["hold_reason"] == "labels at chance so far"
    assert rows[4]["market"] == "mturk"
    assert [row["tasks_done"] for row in rows] == ["2", "2", "0", "0", "0", "0"]
    assert "PID-" not in body and "S-five" not in body


def test_a_worker_is_refused_the_page_and_the_csv(client):
    study = build_study()
    client.force_login(worker("curious-participant").user)
    for name in ("dashboard:study", "dashboard:study_sessions_csv"):
        assert client.get(reverse(name, args=[study.slug])).status_code == 403
    assert client.get(reverse("dashboard:studies")).status_code == 403


def test_an_unknown_study_is_404(client, researcher):
    client.force_login(researcher)
    assert client.get(reverse("dashboard:study", args=["nope"])).status_code == 404


def statements(client, url):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
    assert response.status_code == 200
    return len(captured)


def test_the_statements_do_not_grow_with_the_sessions(client, researcher):
    client.force_login(researcher)
    small, large = build_study("small"), build_study("large", extra_sessions=12)
    for name in ("dashboard:study", "dashboard:study_sessions_csv"):
        counts = [statements(client, reverse(name, args=[s.slug])) for s in (small, large)]
        assert counts[0] == counts[1], (name, counts)
        # 16: the pool's genres, read once for "still wanted"; 3 more: the consent section (the
        # current information sheet, the answers to it, the withdrawals), each read once.
        assert counts[0] <= 19, (name, counts)
    assert queries.funnel(large)["arrived"] == 18


def test_the_admin_study_list_links_to_the_study_page(admin_client):
    study = build_study()
    html = admin_client.get(reverse("admin:crowd_study_changelist")).content.decode()
    assert f'href="{reverse("dashboard:study", args=[study.slug])}"' in html


def test_a_validation_batch_is_one_task_timed_from_its_first_claim_to_its_last_submit():
    """Two batches: one claimed 100 s ago and submitted now (its second claim 90 s ago, submitted
    10 s ago), one of 50 s: tasks of 100 s and 50 s. Three pairs with one label each still want
    four labels each."""
    ds = factories.dataset("val-ds")
    study = Study.objects.create(
        slug="val", name="Validation", dataset=ds, task_kind=TaskKind.VALIDATION, completion_code="C"
    )
    pairs = [factories.pair(ds, factories.premise(ds), ["entailment"], needs_validation=True) for _ in range(3)]
    visit = session(study, "validator", minutes_ago=5, tasks_done=2)
    now = timezone.now()
    first, second = uuid.uuid4(), uuid.uuid4()
    for pair, batch, made, sent in (
        (pairs[0], first, 100, 0),
        (pairs[1], first, 90, 10),
        (pairs[2], second, 50, 0),
    ):
        made_claim = ValidationClaim.objects.create(
            worker=visit.worker,
            pair=pair,
            batch=batch,
            study_session=visit,
            status=ClaimStatus.SUBMITTED,
            expires_at=now + timedelta(minutes=30),
            submitted_at=now - timedelta(seconds=sent),
        )
        ValidationClaim.objects.filter(pk=made_claim.pk).update(created_at=now - timedelta(seconds=made))
    times = queries.task_times(study)
    assert times.n == 2 and times.median == pytest.approx(75.0)
    assert queries.what_is_left(study)["items"] == 3 and queries.what_is_left(study)["units"] == 12
    assert queries.funnel(study)["started"] == 1


def test_a_session_waiting_for_its_market_is_held_apart_and_a_refused_hold_in_no_figure():
    """Money follows holds (quality.bonuses.payable): a session whose market has not vouched for it
    yet has its tasks and bonuses held apart; once a researcher refuses the hold they are gone."""
    from crowd.holds import decide_code_holds
    from crowd.models import CodeHoldDecision

    study = build_study("waiting")
    pair = BonusEntry.objects.filter(study=study).select_related("pair").earliest("pk").pair
    waiting = session(
        study, "waiting-s7", minutes_ago=2, tasks_done=2, held=(UNVOUCHED, "Not vouched for by the market yet: …")
    )
    StudySession.objects.filter(pk=waiting.pk).update(completed_at=timezone.now())
    bonus(waiting, pair, BonusCause.CATCH_TRIAL, "0.50")
    figures = queries.overview(study)
    costs = figures["costs"]
    assert str(costs.task_money) == "3.00 GBP" and str(costs.held_task_money) == "6.00 GBP"
    assert str(costs.bonuses_owed) == "1.00 GBP" and str(costs.bonuses_held) == "0.50 GBP"
    assert figures["funnel"]["held_apart"] == 2 and figures["session_times"].n == 1
    decide_code_holds([waiting.pk], CodeHoldDecision.REFUSED)
    costs = queries.overview(study)["costs"]
    assert str(costs.held_task_money) == "3.00 GBP" and costs.bonuses_held.is_zero
    assert str(costs.task_money) == "3.00 GBP" and str(costs.bonuses_owed) == "1.00 GBP"


@pytest.mark.parametrize("statistics", ["stale", "fresh"])
def test_a_validation_studys_live_claims_read_each_open_claim_once_at_most(statistics):
    """The study page's live claims. With the claim table's statistics taken before the crowd's open
    claims arrived (the bench's build, autovacuum off), every index of open claims looks empty to
    the planner: it may read the crowd's open claims, once, never once for each of the study's
    sessions (the join did). With fresh statistics, each session reads its own open claims
    (`valclaim_session_open`), neither the crowd's nor a session's history."""
    ds = factories.dataset("live-claims-ds")
    study = Study.objects.create(slug="live-claims", name="Live claims", dataset=ds, task_kind=TaskKind.VALIDATION)
    other = Study.objects.create(slug="the-crowd", name="The crowd", dataset=ds, task_kind=TaskKind.VALIDATION)
    own = [session(study, f"own-{n}", minutes_ago=5) for n in range(30)]
    crowd = session(other, "crowd", minutes_ago=5)
    pair = factories.pair(ds, factories.premise(ds), ["entailment"])
    table = ValidationClaim._meta.db_table
    fill = (
        f"INSERT INTO {table} (pair_id, worker_id, study_session_id, status, expires_at, created_at, is_catch_trial,"
        " credited, batch) SELECT %s, %s, %s, %s, now() + make_interval(mins => %s), now(), false, false,"
        " gen_random_uuid() FROM generate_series(1, %s)"
    )
    crowd_open = 3000
    with connection.cursor() as cursor:
        # Many claims of one pair and worker (the one-claim-per-pair-and-worker rule set aside in
        # this test's transaction, so that the table can be filled in a few statements).
        cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT one_validation_claim_per_pair_worker")
        cursor.execute(fill, [pair.pk, crowd.worker_id, crowd.pk, ClaimStatus.SUBMITTED, -3000, 6000])
        # A session of the study with a long history: its submitted claims are not read either.
        cursor.execute(fill, [pair.pk, own[0].worker_id, own[0].pk, ClaimStatus.SUBMITTED, -3000, 200])
        cursor.execute(f"ANALYZE {table}")  # the statistics of a table of history
        cursor.execute(fill, [pair.pk, crowd.worker_id, crowd.pk, ClaimStatus.OPEN, 20, crowd_open])  # the crowd's
        for study_session in own[:3]:
            cursor.execute(fill, [pair.pk, study_session.worker_id, study_session.pk, ClaimStatus.OPEN, 20, 2])
        cursor.execute(fill, [pair.pk, own[3].worker_id, own[3].pk, ClaimStatus.OPEN, -1, 2])  # expired
        if statistics == "fresh":
            cursor.execute(f"ANALYZE {table}")

    with CaptureQueriesContext(connection) as captured:
        assert queries.live_claims(study) == {"claims": 6, "sessions": 3}
    with connection.cursor() as cursor:
        plan = analysed_plan(cursor, captured.captured_queries[-1]["sql"])

    def index_reads(node):
        own_rows = node["Actual Rows"] * node["Actual Loops"] if node.get("Index Name") else 0
        return own_rows + sum(index_reads(child) for child in node.get("Plans", []))

    def index_names(node):
        return {node.get("Index Name")} | set().union(*(index_names(child) for child in node.get("Plans", [])))

    # The study's 30 sessions' keys and its 8 open claims (6 live, 2 expired) ...
    study_reads = len(own) + 8
    if statistics == "stale":
        # ... and the crowd's open claims, once.
        assert index_reads(plan) <= study_reads + crowd_open, plan
    else:
        assert index_reads(plan) <= study_reads, plan
        assert "valclaim_session_open" in index_names(plan), plan
