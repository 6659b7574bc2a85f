"""The held bonuses' tally (markets.models.HeldBonusTally): the payments summed per connection,
session, cause, currency, payer and state, kept by triggers on the payments through every step of
the payment machine (claimed, sent, unknown, set aside, released, a file's claim and its release,
confirmed by the market or by hand), whatever a statement moves at once; the invariant it rests on (a payer
holds only unpaid bonuses); and the migration that fills it."""

from collections import defaultdict
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection as db_connection
from django.utils import timezone

from corpus.models import Market
from markets import hand_payments, payments, selectors
from markets.models import BonusPayment, HeldBonusTally, MarketConnection, Payer, PaymentState
from quality.bonus_lines import id_hash
from quality.models import BonusEntry, BonusKind
from tests.migration_steps import migrated_back

from .conftest import arrive, connect_mturk, connect_prolific, make_study, owe_bonuses

pytestmark = pytest.mark.django_db


def tallied(connection: MarketConnection) -> dict[tuple, tuple]:
    """The tally's groups of the connection that hold anything."""
    rows = HeldBonusTally.objects.filter(connection=connection).exclude(bonuses=0, amount=0, ids_hash=0)
    return {
        (row.study_session_id, row.cause, row.currency, row.payer, row.state): (
            row.bonuses,
            row.amount,
            int(row.ids_hash),
        )
        for row in rows
    }


def summed_one_by_one(connection: MarketConnection) -> dict[tuple, tuple]:
    """The connection's payments read one by one and summed as the tally sums them."""
    groups: dict[tuple, list] = defaultdict(lambda: [0, Decimal("0"), 0])
    for payment in BonusPayment.objects.filter(connection=connection).select_related("earned"):
        bonus = payment.earned
        group = groups[(bonus.study_session_id, bonus.cause, bonus.currency, payment.payer, payment.state)]
        group[0] += 1
        group[1] += payment.earned.amount
        group[2] += id_hash(payment.earned_id)
    return {key: tuple(value) for key, value in groups.items()}


def test_the_tally_is_the_payments_summed_after_every_step_of_the_payment_machine(
    standin, django_user_model, researcher
):
    study = make_study()
    mturk = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 4, market=Market.MTURK)
    standin.assignments[sessions[3].external_session_id]["WorkerId"] = "someone-else"  # MTurk refuses it
    owe_bonuses(study, sessions[:2], per_session=2, amount="0.50")
    owe_bonuses(study, sessions[2:], per_session=3, amount="0.25")
    other = make_study(slug="other-study")
    prolific = connect_prolific(other, standin)
    strangers = arrive(other, standin, django_user_model, 2, prefix="other-")
    owe_bonuses(other, strangers, per_session=2, amount="1.00")
    seen: set[tuple[str, str]] = set()

    def same(step: str) -> None:
        for market in (mturk, prolific):
            assert tallied(market) == summed_one_by_one(market), step
            seen.update((payer, state) for *_, payer, state in tallied(market))

    standin.fail("SendBonus", "slow-after")  # the first bonus: MTurk pays, its answer is lost
    outcome = payments.pay_owed_bonuses(study)
    assert (outcome.waiting, outcome.set_aside) == (1, 3)
    same("paid through the API: one unknown, one participant's set aside, the rest confirmed and gone")
    assert hand_payments.release_set_aside(study) == 3
    same("the set-aside bonuses released")
    listed = hand_payments.claim_for_file(study, "mturk")
    assert len(listed) == 3
    same("the released bonuses claimed again by a downloaded file")
    assert hand_payments.release_file_claims(study) == 3
    same("the file's claims released")
    listed = hand_payments.claim_for_file(study, "mturk")
    same("claimed by a file once more")
    assert hand_payments.mark_paid_by_hand(study, [entry.pk for entry in listed], by=researcher)["paid"] == 3
    same("the file's bonuses marked paid by hand: their payments deleted")
    payments.pay_owed_bonuses(other)
    same("the other study's bonuses paid in a bulk bonus")
    assert {(Payer.API, PaymentState.UNKNOWN), (Payer.API, PaymentState.ASIDE)} <= seen
    assert {(Payer.API, PaymentState.RELEASED), (Payer.FILE, PaymentState.SENT)} <= seen
    assert {(Payer.FILE, PaymentState.RELEASED)} <= seen
    # What is left: the one bonus whose answer was lost, held by the API payer.
    (held,) = selectors.held_bonuses(study)
    assert (held.bonuses, held.amount, held.by_the_api, held.in_flight) == (1, Decimal("0.50"), True, True)


def test_one_statement_moving_payments_between_groups_both_ways_keeps_every_sum(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    cheap, dear = owe_bonuses(study, [session], per_session=1, amount="0.10") + owe_bonuses(
        study, [session], per_session=1, amount="2.00"
    )
    for bonus, state in ((cheap, PaymentState.ASIDE), (dear, PaymentState.RELEASED)):
        BonusPayment.objects.create(
            earned=bonus,
            connection=connection,
            state=state,
            request_token=f"nli-bonus-{bonus.pk}",
            lease_until=timezone.now(),
        )
    with db_connection.cursor() as cursor:  # each bonus to the other's state, in one statement
        cursor.execute(
            "UPDATE markets_bonuspayment SET state = CASE state WHEN 'aside' THEN 'released' ELSE 'aside' END"
            " WHERE connection_id = %s",
            [connection.pk],
        )
    # Each group has one bonus in and one out: its count is as it was, its amount and hash are not.
    assert tallied(connection) == summed_one_by_one(connection)
    group = (session.pk, dear.cause, dear.currency, Payer.API, PaymentState.ASIDE)
    assert tallied(connection)[group][:2] == (1, Decimal("2.00"))


@pytest.mark.django_db(transaction=True)
def test_an_update_that_moves_no_payment_writes_no_tally_row(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    for bonus in owe_bonuses(study, sessions, per_session=2):
        BonusPayment.objects.create(
            earned=bonus,
            connection=connection,
            state=PaymentState.SENT,
            request_token=f"nli-bonus-{bonus.pk}",
            lease_until=timezone.now(),
        )

    def versions() -> dict[int, str]:
        with db_connection.cursor() as cursor:
            cursor.execute("SELECT id, xmin::text FROM markets_heldbonustally")
            return dict(cursor.fetchall())

    before = versions()
    assert len(before) == 2
    BonusPayment.objects.filter(connection=connection).update(
        lease_until=timezone.now() + timedelta(minutes=5), attempts=1, last_error="slow"
    )
    assert versions() == before
    BonusPayment.objects.filter(earned__study_session=sessions[0]).update(state=PaymentState.UNKNOWN)
    assert versions() != before
    assert tallied(connection) == summed_one_by_one(connection)


def test_the_migration_fills_the_tally_and_drops_the_payments_of_paid_bonuses(standin, django_user_model):
    study = make_study()
    connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 2, market=Market.MTURK)
    in_flight, paid_already, owed = owe_bonuses(study, sessions[:1], per_session=3)
    before, after = [("markets", "0006_connection_check_outcome")], [("markets", "0007_held_bonus_tally")]
    # The payments' and the ledger's tables are as they were: only the triggers and the tally are new.
    with migrated_back(before, after):
        connection = MarketConnection.objects.get(study=study)
        for bonus in (in_flight, paid_already):
            BonusPayment.objects.create(
                earned=bonus,
                connection=connection,
                state=PaymentState.SENT,
                request_token=f"nli-bonus-{bonus.pk}",
                lease_until=timezone.now(),
            )
        # Paid while its payment was left behind, as nothing refused before.
        BonusEntry.objects.create(
            kind=BonusKind.PAID,
            worker=paid_already.worker,
            study=study,
            study_session=paid_already.study_session,
            amount=paid_already.amount,
            currency=paid_already.currency,
            cause=paid_already.cause,
            reason="Paid",
            pays=paid_already,
        )

    connection = MarketConnection.objects.get(study=study)
    assert list(BonusPayment.objects.values_list("earned_id", flat=True)) == [in_flight.pk]
    assert tallied(connection) == summed_one_by_one(connection)
    assert not BonusEntry.objects.filter(pays=owed).exists()
    assert [group.bonuses for group in selectors.held_bonuses(study)] == [1]
