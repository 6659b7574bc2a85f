"""The one payment machine: every payer (Prolific's API, MTurk's API, a payment
file paid on the market's website) moves a bonus owed -> claimed -> sent -> confirmed through the
one 'owed' rule, and the ledger is the one record of "paid". Against the market STAND-IN
(tests/markets/standin.py, a real local HTTP server); the concurrent ones on PostgreSQL, with the
API payer in a thread of its own."""

import csv
import io
import threading
from collections import defaultdict
from decimal import Decimal

import pytest
from django.db import connection as db_connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

from corpus.models import Market
from markets import payments, reviews, selectors, tasks
from markets.models import BonusPayment, Payer, PaymentState, ReviewState, SessionReview
from quality.models import BonusEntry, BonusKind

from .conftest import arrive, connect_mturk, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = pytest.mark.django_db


def researcher_client(make_researcher):
    make_researcher(username="payer", password="payer-pass-1")
    client = Client()
    client.login(username="payer", password="payer-pass-1")
    return client


def download(client, study, file):
    answer = client.get(f"/dashboard/bonuses/{study.slug}/{file}.csv")
    assert answer.status_code == 200
    return answer.content.decode()


def mark_paid(client, study, ids):
    return client.post(
        f"/dashboard/bonuses/{study.slug}/pay/", {"bonus": [str(pk) for pk in ids], "confirm": "paid"}, follow=True
    )


def pay_mturk_file_on_the_website(standin, csv_text):
    """What a researcher does on MTurk's website with the downloaded file: one bonus per line, with
    the file's reason (no request token, no ledger tag: the API's reconcile cannot recognise it)."""
    for row in csv.DictReader(io.StringIO(csv_text)):
        status, _ = standin._send_bonus(
            {
                "WorkerId": row["worker_id"],
                "AssignmentId": row["assignment_id"],
                "BonusAmount": row["amount"],
                "Reason": row["reason"],
            }
        )
        assert status == 200


def ledger_by_worker(study):
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for row in ledger_paid(study).select_related("worker"):
        totals[row.worker.external_id] += row.amount
    return dict(totals)


def assert_each_bonus_paid_once_and_the_ledger_is_the_markets_record(study, market_paid):
    earned = BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED)
    assert ledger_paid(study).count() == ledger_paid(study).values("pays").distinct().count() == earned.count()
    assert ledger_by_worker(study) == market_paid
    assert not BonusPayment.objects.exists(), "paid is stored once: in the ledger, no payment row is left"


@pytest.mark.django_db(transaction=True)
def test_mturk_api_bonuses_in_flight_beside_a_researchers_file_and_a_retried_press_pay_each_bonus_once(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 6, market=Market.MTURK)
    api_rows = owe_bonuses(study, sessions[:4], per_session=1)
    client = researcher_client(make_researcher)
    paid_on_market, researcher_done = threading.Event(), threading.Event()
    held: list[bool] = []

    def hold_the_first_answer():
        # MTurk has paid the first bonus; its answer waits while the researcher works, so the
        # payer's call times out (its answer is lost) and the bonus stays sent.
        if not held:
            held.append(True)
            paid_on_market.set()
            researcher_done.wait(30)

    standin.before_answer["SendBonus"] = hold_the_first_answer
    outcomes = []

    def press():
        outcomes.append(payments.pay_owed_bonuses(study))
        db_connection.close()

    payer = threading.Thread(target=press)
    payer.start()
    assert paid_on_market.wait(30)
    later = owe_bonuses(study, sessions[4:], per_session=1)
    csv_text = download(client, study, "mturk")
    pay_mturk_file_on_the_website(standin, csv_text)
    stale = mark_paid(client, study, [row.pk for row in [*api_rows, *later]])
    # The researcher's "ask the market now" while the file's bonuses are sent and not confirmed: the
    # API's reconcile settles its own sends only, never a file paid on the website.
    payments.reconcile_payments(connection, now_please=True)
    fresh = mark_paid(client, study, [row.pk for row in later])
    researcher_done.set()
    payer.join(60)
    retry = payments.pay_owed_bonuses(study)
    settled = payments.reconcile_payments(connection, now_please=True)

    listed = [row["worker_id"] for row in csv.DictReader(io.StringIO(csv_text))]
    assert sorted(listed) == sorted(s.worker.external_id for s in sessions[4:]), "the file lists no API bonus"
    assert "being paid through the market" in stale.content.decode()
    assert "Marked 2 bonus(es) paid" in fresh.content.decode()
    assert outcomes and retry.set_aside == settled.set_aside == 0
    assert len(standin.bonuses_sent) == 6
    assert standin.mturk_paid() == {s.worker.external_id: Decimal("0.50") for s in sessions}
    assert_each_bonus_paid_once_and_the_ledger_is_the_markets_record(study, standin.mturk_paid())


def test_an_mturk_bonus_the_market_refuses_is_set_aside_with_its_reason_and_the_others_are_paid(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 4, market=Market.MTURK)
    standin.assignments[sessions[1].external_session_id]["WorkerId"] = "someone-else"  # MTurk refuses this one
    owe_bonuses(study, sessions, per_session=1)

    outcome = payments.pay_owed_bonuses(study)

    assert (outcome.paid, outcome.set_aside) == (3, 1)
    aside = BonusPayment.objects.get(earned__worker=sessions[1].worker)
    assert aside.state == PaymentState.ASIDE and "do not match" in aside.last_error
    paid = [s for i, s in enumerate(sessions) if i != 1]
    assert standin.mturk_paid() == {s.worker.external_id: Decimal("0.50") for s in paid}
    sends = len(standin.requests)
    assert payments.pay_owed_bonuses(study).paid == 0
    assert ("MTURK", "SendBonus") not in standin.requests[sends:], "a set-aside bonus is not tried on every press"
    client = researcher_client(make_researcher)
    page = client.get(f"/dashboard/bonuses/?study={study.slug}").content.decode()
    assert 'id="set-aside"' in page and "do not match" in page
    assert 'data-stat="aside" data-value="1"' in page

    standin.assignments[sessions[1].external_session_id]["WorkerId"] = sessions[1].worker.external_id  # fixed
    client.post(f"/dashboard/bonuses/{study.slug}/release/", {"what": "aside"})
    assert payments.pay_owed_bonuses(study).paid == 1
    assert_each_bonus_paid_once_and_the_ledger_is_the_markets_record(study, standin.mturk_paid())


def test_a_downloaded_file_is_its_payers_sent_step_until_the_researcher_confirms_or_releases_it(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 3)
    owed = owe_bonuses(study, sessions, per_session=1)
    client = researcher_client(make_researcher)

    download(client, study, "prolific")

    assert {(p.payer, p.state) for p in BonusPayment.objects.all()} == {(Payer.FILE, PaymentState.SENT)}
    figures = selectors.machine_figures(study)
    assert (figures["owed"]["n"], figures["in_flight"]["n"], figures["paid"]["n"]) == (0, 3, 0)
    page = client.get(f"/dashboard/bonuses/?study={study.slug}").content.decode()
    assert 'data-stat="in-flight" data-value="3"' in page and 'data-stat="owed" data-value="0"' in page
    assert payments.pay_owed_bonuses(study).paid == 0, "the API payer leaves a sent file alone"
    assert standin.bulk_bonuses == {}

    mark_paid(client, study, [owed[0].pk])  # the researcher paid one of the file's lines on the website
    client.post(f"/dashboard/bonuses/{study.slug}/release/")  # and not the others

    assert list(ledger_paid(study).values_list("pays", flat=True)) == [owed[0].pk]
    assert not BonusPayment.objects.filter(earned=owed[0]).exists(), "confirmed: the ledger is the one record"
    assert selectors.owed_entries(study).count() == 2
    figures = selectors.machine_figures(study)
    assert (figures["owed"]["n"], figures["in_flight"]["n"], figures["paid"]["n"]) == (2, 0, 1)
    assert payments.pay_owed_bonuses(study).paid == 2


def test_a_rejection_pressed_during_a_network_failure_stays_queued_with_its_reason_and_the_beat_sends_it(
    standin, django_user_model, settings
):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    settings.PROLIFIC_API_URL = "http://127.0.0.1:9/api/v1/"  # nothing listens there: no connection

    outcome = reviews.reject_session(session, "Answered at random", category="LOW_EFFORT")

    assert (outcome.confirmed, outcome.failed, outcome.unanswered) == (0, 0, 1)
    review = SessionReview.objects.get()
    assert review.state == ReviewState.SENT, "not refused by the market: it stays queued"
    assert "could not be reached" in review.last_error and review.attempts == 1
    settings.PROLIFIC_API_URL = f"{standin.url}/api/v1/"
    tasks.approve_checked_sessions()

    review.refresh_from_db()
    assert review.state == ReviewState.CONFIRMED and review.last_error == ""
    assert standin.submissions[session.external_session_id]["status"] == "REJECTED"


def test_a_rejection_whose_answer_was_lost_is_looked_up_before_it_is_sent_again(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    standin.fail("reject", "slow-after")  # Prolific rejects, and its answer comes too late

    assert reviews.reject_session(session, "Wrong completion code", category="BAD_CODE").unanswered == 1
    assert SessionReview.objects.get().state == ReviewState.SENT
    outcome = reviews.retry_queued_reviews(connection)

    assert outcome.confirmed == 1
    assert SessionReview.objects.get().state == ReviewState.CONFIRMED
    assert [r for r in standin.requests if r == ("fault?", "reject")] == [("fault?", "reject")], "sent once"


def test_an_mturk_rejection_that_met_a_5xx_is_queued_and_sent_again_with_its_reason(standin, django_user_model):
    study = make_study()
    connection = connect_mturk(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    standin.fail("RejectAssignment", "500")

    assert reviews.reject_session(session, "No work done").unanswered == 1
    assert reviews.retry_queued_reviews(connection).confirmed == 1
    assert standin.assignments[session.external_session_id]["AssignmentStatus"] == "Rejected"
    assert SessionReview.objects.get().state == ReviewState.CONFIRMED


@pytest.mark.django_db(transaction=True)
def test_the_migration_carries_paid_payments_into_the_ledger_alone(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 3)
    confirmed, released, by_file = owe_bonuses(study, sessions, per_session=1)
    before, after = [("markets", "0003_bonus_payment_payer_and_set_aside")], [("markets", "0004_one_payment_machine")]
    executor = MigrationExecutor(db_connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    OldPayment, OldEntry = old.get_model("markets", "BonusPayment"), old.get_model("quality", "BonusEntry")
    now = timezone.now()
    for row, state, payer in ((confirmed, "paid", "api"), (released, "refused", "api"), (by_file, "claimed", "file")):
        OldPayment.objects.create(
            earned_id=row.pk,
            connection_id=connection.pk,
            state=state,
            payer=payer,
            request_token=f"nli-bonus-{row.pk}",
            lease_until=now,
        )
    # "paid" as the old code stored it, but its ledger row lost: the migration writes it.
    assert not OldEntry.objects.filter(pays_id=confirmed.pk).exists()

    executor = MigrationExecutor(db_connection)
    executor.migrate(after)
    # On to the newest migrations, which the models below (and the tests after this one) read.
    executor = MigrationExecutor(db_connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert list(ledger_paid(study).values_list("pays", flat=True)) == [confirmed.pk]
    assert not BonusPayment.objects.filter(earned=confirmed).exists()
    assert BonusPayment.objects.get(earned=released).state == PaymentState.RELEASED
    assert BonusPayment.objects.get(earned=by_file).state == PaymentState.SENT
    assert list(selectors.owed_entries(study)) == [released]
