"""The bonus page's "mark paid" names the list it showed by a fingerprint of its bonuses' ids, not
one input each: the server pays that list while it is unchanged, and refuses the whole press once a
bonus joined it or left it (earned since, paid by another hand, taken by the market's API payer)."""

import hashlib
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from markets import payments, selectors
from markets.models import BonusPayment, Payer, PaymentState
from quality import bonuses
from quality.bonus_lines import LinesPage, listed_bonuses, listed_rows
from quality.models import BonusCause, BonusEntry, BonusKind

from .conftest import arrive, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = pytest.mark.django_db

CHANGED = b"The unpaid bonuses changed since the page was loaded"


def researcher_client(make_researcher):
    make_researcher(username="lister", password="lister-pass-1")
    client = Client()
    client.login(username="lister", password="lister-pass-1")
    return client


def fingerprint_on_the_page(client, study):
    page = client.get(f"/dashboard/bonuses/?study={study.slug}").content.decode()
    form = page.split('id="pay-form"', 1)[1].split("</form>", 1)[0]
    return form.split('name="listed" value="', 1)[1].split('"', 1)[0]


def press_mark_paid(client, study, fingerprint):
    return client.post(
        f"/dashboard/bonuses/{study.slug}/pay/", {"listed": fingerprint, "confirm": "paid"}, follow=True
    ).content


def test_the_fingerprint_names_each_groups_ids_by_their_hashes_whatever_order_the_rows_lie_in(
    standin, django_user_model
):
    study = make_study()
    (session,) = arrive(study, standin, django_user_model, 1)
    for pk in (10_000_003, 10_000_001, 10_000_002):  # stored out of the ids' order
        BonusEntry.objects.create(
            pk=pk,
            kind=BonusKind.EARNED,
            worker=session.worker,
            study=study,
            study_session=session,
            amount=Decimal("0.50"),
            currency="GBP",
            cause=BonusCause.OTHER,
            reason=f"Thank-you bonus {pk}",
        )
    groups = bonuses.unpaid_groups(BonusEntry.objects.filter(study=study).order_by("-pk"))
    listed = listed_bonuses(groups)
    # Each id's MD5, its first 60 bits, summed: a hash of the set that the ledger's tally keeps.
    ids = str(
        sum(int(hashlib.md5(str(pk).encode()).hexdigest()[:15], 16) for pk in (10_000_001, 10_000_002))
        + int(hashlib.md5(b"10000003").hexdigest()[:15], 16)
    )
    assert [group.ids_hash for group in groups] == [ids]
    assert [group.ids_hash for group in bonuses.tallied_groups(study)] == [ids]
    assert listed.fingerprint == hashlib.md5(f"{session.pk} other {ids}".encode()).hexdigest()
    assert (listed.count, listed.amount) == (3, Decimal("1.50"))
    nothing = listed_bonuses([])
    assert (nothing.count, nothing.amount, nothing.fingerprint) == (0, Decimal(0), hashlib.md5(b"").hexdigest())


def test_the_press_reads_the_same_fingerprint_bonus_by_bonus_as_the_page_reads_of_the_groups(
    standin, django_user_model
):
    study = make_study()
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=3)
    BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=sessions[1].worker,
        study=study,
        study_session=sessions[1],
        amount=Decimal("2.00"),
        currency="GBP",
        cause=BonusCause.OTHER,
        reason="Thank-you bonus",
    )
    unpaid = BonusEntry.objects.filter(study=study)
    groups = bonuses.unpaid_groups(unpaid)
    rows = unpaid.values_list("pk", "study_session_id", "cause", "amount")
    assert len(groups) == 3
    page, press = listed_bonuses(groups), listed_rows(list(rows))
    assert press == page
    assert (page.count, page.amount) == (7, Decimal("5.00"))
    assert listed_rows(list(rows)[1:]).fingerprint != page.fingerprint


def test_a_page_of_lines_reads_its_slice_and_a_line_by_its_place(standin, django_user_model):
    study = make_study()
    owed = owe_bonuses(study, arrive(study, standin, django_user_model, 2), per_session=2)
    lines = LinesPage(BonusEntry.objects.filter(study=study).order_by("pk"), len(owed))
    assert len(lines) == 4
    assert [line.pk for line in lines[1:3]] == [owed[1].pk, owed[2].pk]
    assert (lines[0].pk, lines[3].pk) == (owed[0].pk, owed[3].pk)


def test_the_form_pays_the_list_it_showed_and_refuses_one_that_grew_since(standin, django_user_model, make_researcher):
    study = make_study()
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    client = researcher_client(make_researcher)
    shown = fingerprint_on_the_page(client, study)
    late = owe_bonuses(study, sessions[:1], per_session=1)  # earned after the page was loaded

    refused = press_mark_paid(client, study, shown)

    assert CHANGED in refused and b"it now lists 3, 1.50 GBP" in refused
    assert b"nothing was marked paid. Reload the page, check the list, and mark them paid again." in refused
    assert not ledger_paid(study).exists()
    again = press_mark_paid(client, study, fingerprint_on_the_page(client, study))
    assert b"Marked 3 bonus(es) paid: 1.50 GBP" in again
    assert late[0].pk in set(ledger_paid(study).values_list("pays", flat=True))
    assert set(ledger_paid(study).values_list("recorded_by__username", flat=True)) == {"lister"}


def test_a_bonus_paid_by_its_id_since_refuses_the_older_list(standin, django_user_model, make_researcher):
    study = make_study()
    owed = owe_bonuses(study, arrive(study, standin, django_user_model, 3), per_session=1)
    client = researcher_client(make_researcher)
    shown = fingerprint_on_the_page(client, study)
    client.post(f"/dashboard/bonuses/{study.slug}/pay/", {"bonus": [owed[0].pk], "confirm": "paid"})

    assert CHANGED in press_mark_paid(client, study, shown)
    assert list(ledger_paid(study).values_list("pays", flat=True)) == [owed[0].pk]


def test_a_forged_fingerprint_pays_nothing(standin, django_user_model, make_researcher):
    study = make_study()
    owe_bonuses(study, arrive(study, standin, django_user_model, 1), per_session=2)
    client = researcher_client(make_researcher)

    for forged in ("0" * 32, "", "not a fingerprint"):
        assert CHANGED in press_mark_paid(client, study, forged)
    assert not BonusEntry.objects.filter(kind=BonusKind.PAID).exists()


def test_a_connected_study_refuses_the_list_once_the_api_payer_paid_one_of_its_bonuses(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connect_prolific(study, standin)
    owe_bonuses(study, arrive(study, standin, django_user_model, 2), per_session=1)
    client = researcher_client(make_researcher)
    shown = fingerprint_on_the_page(client, study)
    assert listed_bonuses(bonuses.unpaid_groups(selectors.confirmable_by_hand(study))).count == 2

    assert payments.pay_owed_bonuses(study).paid == 2  # the market's API paid them meanwhile
    by_the_api = set(ledger_paid(study).values_list("pk", flat=True))

    assert CHANGED in press_mark_paid(client, study, shown)
    assert set(ledger_paid(study).values_list("pk", flat=True)) == by_the_api


def test_a_connected_study_pays_the_listed_bonuses_and_leaves_the_one_the_api_payer_holds(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connection = connect_prolific(study, standin)
    owed = owe_bonuses(study, arrive(study, standin, django_user_model, 3), per_session=1)
    # The market's API sent one and has no answer yet: in flight, on no list a researcher pays.
    BonusPayment.objects.create(
        earned=owed[0],
        connection=connection,
        payer=Payer.API,
        state=PaymentState.SENT,
        request_token=f"nli-bonus-{owed[0].pk}",
        lease_until=timezone.now(),
        sent_at=timezone.now(),
    )
    client = researcher_client(make_researcher)

    paid = press_mark_paid(client, study, fingerprint_on_the_page(client, study))

    assert b"Marked 2 bonus(es) paid: 1.00 GBP" in paid
    assert set(ledger_paid(study).values_list("pays", flat=True)) == {owed[1].pk, owed[2].pk}
    assert BonusPayment.objects.get(earned=owed[0]).state == PaymentState.SENT
