"""One 'owed' rule for every payer: the market's API (the pay button) and a
researcher paying a downloaded file on the market's website never hold, list or mark paid the same
bonus; a participant the market refuses is set aside and the others are paid (against the market
STAND-IN, tests/markets/standin.py; "paid on the website" is the stand-in's own bulk bonus)."""

import threading

import pytest
from django.db import connection as db_connection
from django.test import Client

from markets import payments, selectors
from markets.models import BonusPayment, PaymentState
from quality.models import BonusEntry, BonusKind

from .conftest import arrive, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = pytest.mark.django_db


def researcher_client(make_researcher):
    make_researcher(username="payer", password="payer-pass-1")
    client = Client()
    client.login(username="payer", password="payer-pass-1")
    return client


def download(client, study, file="prolific"):
    answer = client.get(f"/dashboard/bonuses/{study.slug}/{file}.csv")
    assert answer.status_code == 200
    return answer.content.decode()


def mark_paid(client, study, ids):
    return client.post(
        f"/dashboard/bonuses/{study.slug}/pay/", {"bonus": [str(pk) for pk in ids], "confirm": "paid"}, follow=True
    )


def pay_on_the_website(standin, csv_bonuses):
    """What a researcher does on Prolific's website with the downloaded file: one bulk bonus, paid."""
    status, created = standin._create_bonuses({"study_id": standin.study_id, "csv_bonuses": csv_bonuses})
    assert status == 201
    standin._pay_bonuses(created["id"])


def assert_each_bonus_paid_once(study, standin, sessions, cents_each):
    earned = BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED)
    assert ledger_paid(study).count() == earned.count()
    assert ledger_paid(study).values("pays").distinct().count() == earned.count()
    assert standin.prolific_paid_cents() == {s.worker.external_id: cents_each for s in sessions}


def test_a_file_downloaded_while_the_api_pays_lists_none_of_it_and_stale_mark_paid_is_refused(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 4)
    paid_by_api = owe_bonuses(study, sessions[:3], per_session=1)
    client = researcher_client(make_researcher)
    page_before = [row.pk for row in paid_by_api]  # what the bonus page listed before the press
    standin.record_lags = True
    standin.fail("bonus.pay", "slow-after")
    assert payments.pay_owed_bonuses(study).waiting == 3  # in flight: paid, not confirmed
    (later,) = owe_bonuses(study, sessions[3:], per_session=1)

    csv_bonuses = download(client, study)
    refused = mark_paid(client, study, [*page_before, later.pk])

    assert csv_bonuses == f"{sessions[3].worker.external_id},0.50\n"
    assert "being paid through the market" in refused.content.decode()
    assert ledger_paid(study).count() == 0
    pay_on_the_website(standin, csv_bonuses)
    assert mark_paid(client, study, [later.pk]).status_code == 200
    assert payments.pay_owed_bonuses(study).paid == 0, "the file's bonus is paid; the API's still unsure"
    standin.publish()
    assert payments.pay_owed_bonuses(study).paid == 3
    assert_each_bonus_paid_once(study, standin, sessions, 50)
    assert BonusEntry.objects.get(pays=later).recorded_by is not None, "confirmed by the researcher, in the ledger"


def test_a_participant_with_an_unsure_api_bulk_bonus_is_in_no_file_until_it_is_settled(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 1)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.pay", "slow-before")  # no answer, nothing paid: the bulk bonus stays unsure
    payments.pay_owed_bonuses(study)
    owe_bonuses(study, sessions, per_session=1)
    client = researcher_client(make_researcher)

    # Paid on the website now, the new bonus would count as the unsure bulk bonus's on Prolific.
    assert download(client, study) == ""
    assert payments.reconcile_payments(connection).paid == 0


def test_a_downloaded_files_claim_holds_until_released(standin, django_user_model, make_researcher):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    client = researcher_client(make_researcher)

    first = download(client, study)
    assert download(client, study) == first, "downloaded again, the file lists what it claimed"
    # The one rule: what a file claimed is owed to no other payer until released.
    assert not selectors.owed_entries(study).exists()
    assert selectors.held_by_files(study).count() == 2
    assert payments.pay_owed_bonuses(study).paid == 0
    assert standin.bulk_bonuses == {}, "the pay button left the file's bonuses alone"
    page = client.get(f"/dashboard/bonuses/?study={study.slug}").content.decode()
    assert '<li id="claimed-by-files">2 bonus(es) sent in a downloaded payment file' in page

    client.post(f"/dashboard/bonuses/{study.slug}/release/")
    assert selectors.owed_entries(study).count() == 2

    assert payments.pay_owed_bonuses(study).paid == 2
    assert_each_bonus_paid_once(study, standin, sessions, 50)


def test_a_participant_prolific_refuses_is_set_aside_and_the_others_are_paid(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 5)
    standin.submissions.pop(sessions[2].external_session_id)  # Prolific does not know this participant
    owe_bonuses(study, sessions, per_session=1)

    outcome = payments.pay_owed_bonuses(study)

    assert (outcome.paid, outcome.set_aside) == (4, 1)
    aside = BonusPayment.objects.get(earned__worker=sessions[2].worker)
    assert aside.state == PaymentState.ASIDE and "Incorrect id" in aside.last_error
    paid = [s for i, s in enumerate(sessions) if i != 2]
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in paid}
    created = len(standin.bulk_bonuses)
    assert payments.pay_owed_bonuses(study).paid == 0
    assert len(standin.bulk_bonuses) == created, "a set-aside participant is not tried on every press"
    client = researcher_client(make_researcher)
    page = client.get(f"/dashboard/bonuses/?study={study.slug}").content.decode()
    assert 'id="set-aside"' in page and "Incorrect id" in page
    standin.add_submission(sessions[2].external_session_id, sessions[2].worker.external_id)  # the id fixed
    client.post(f"/dashboard/bonuses/{study.slug}/release/", {"what": "aside"})
    assert payments.pay_owed_bonuses(study).paid == 1
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}


@pytest.mark.django_db(transaction=True)
def test_api_bulk_bonus_in_flight_beside_a_researchers_file_and_a_retried_press_pay_each_bonus_once(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 6)
    api_rows = owe_bonuses(study, sessions[:4], per_session=2)
    page_before = [row.pk for row in api_rows]
    client = researcher_client(make_researcher)
    paid_on_market, researcher_done = threading.Event(), threading.Event()

    def hold_the_answer():
        # Prolific has paid the bulk bonus; its answer waits while the researcher works (the payer
        # times out meanwhile: its answer is lost).
        paid_on_market.set()
        researcher_done.wait(30)

    standin.before_answer["bonus.pay"] = hold_the_answer
    outcomes = []

    def press():
        outcomes.append(payments.pay_owed_bonuses(study))
        db_connection.close()

    payer = threading.Thread(target=press)
    payer.start()
    assert paid_on_market.wait(30)
    later = owe_bonuses(study, sessions[4:], per_session=1)
    csv_bonuses = download(client, study)
    pay_on_the_website(standin, csv_bonuses)
    stale = mark_paid(client, study, [*page_before, *(row.pk for row in later)])
    fresh = mark_paid(client, study, [row.pk for row in later])
    researcher_done.set()
    payer.join(60)
    del standin.before_answer["bonus.pay"]
    retry = payments.pay_owed_bonuses(study)

    assert sorted(csv_bonuses.splitlines()) == sorted(f"{s.worker.external_id},0.50" for s in sessions[4:])
    assert "being paid through the market" in stale.content.decode()
    assert "Marked 2 bonus(es) paid" in fresh.content.decode()
    assert outcomes[0].paid + retry.paid == 8
    assert standin.bulk_pay_calls == ["bulk-1", "bulk-2"]  # the API's once, the website's once
    assert not BonusPayment.objects.exists(), "paid is stored once: in the ledger"
    earned = BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED)
    assert ledger_paid(study).values("pays").distinct().count() == ledger_paid(study).count() == earned.count()
    assert standin.prolific_paid_cents() == {
        **{s.worker.external_id: 100 for s in sessions[:4]},
        **{s.worker.external_id: 50 for s in sessions[4:]},
    }
    ledger_cents: dict[str, int] = {}
    for row in ledger_paid(study).select_related("worker"):
        ledger_cents[row.worker.external_id] = ledger_cents.get(row.worker.external_id, 0) + int(row.amount * 100)
    assert ledger_cents == standin.prolific_paid_cents(), "the ledger is the market's record"


def test_a_discretionary_bonus_needs_a_reason_and_is_paid_as_any_other(standin, django_user_model, make_researcher):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions[:1], per_session=1)  # the page lists studies with a bonus
    client = researcher_client(make_researcher)
    give = f"/dashboard/bonuses/{study.slug}/give/"

    client.post(give, {"session": sessions[1].pk, "amount": "2.25", "reason": "  "})
    assert not BonusEntry.objects.filter(study_session=sessions[1]).exists()
    client.post(give, {"session": sessions[1].pk, "amount": "2.25", "reason": "Reported a broken item"})

    (given,) = BonusEntry.objects.filter(study_session=sessions[1])
    assert given.kind == BonusKind.EARNED and given.pair is None
    assert given.reason == "Discretionary bonus: Reported a broken item"
    assert payments.pay_owed_bonuses(study).paid == 2
    assert standin.prolific_paid_cents() == {sessions[0].worker.external_id: 50, sessions[1].worker.external_id: 225}
