"""The researcher's payers: a payment file paid on the market's website, "mark paid", and the
releases of what a researcher did not pay or fixed. A study with a connection has two payers, the
API (the pay button, markets.payments) and a researcher paying a file on the market's website;
both take bonuses through the one 'owed' rule (selectors.owed_entries) under the connection's row
lock (payments.lock_payers), so neither lists, sends or marks paid a bonus the other holds. A study
without a connection has no API payer: its files and its "mark paid" are the ledger's alone.
"""

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from crowd.models import Study
from quality import bonuses
from quality.bonus_lines import listed_rows
from quality.models import BonusEntry

from . import payments, selectors
from .connections import connected, connection_of
from .models import IN_FLIGHT, BonusPayment, Payer, PaymentState

HAND_RELEASED = "Released by a researcher: the payment file was not paid."


def claim_for_file(study: Study, file: str) -> list[BonusEntry]:
    """The rows of one payment file ("prolific", "mturk" or "left-out", quality.bonuses.file_of).
    With a connection, downloading the Prolific or MTurk file is the file payer's claim and send in
    one step (owed -> claimed -> sent): the file leaves the house and may be paid on the market's
    website at any time, so, as an API payment sent without an answer, its bonuses are settled
    only by the researcher: confirmed (mark_paid_by_hand) or released (release_file_claims). It
    lists the owed rows for it and the rows earlier downloads sent and nobody settled (the same
    file downloaded again lists them again). The API payer and later files leave them alone. The
    left-out file lists what no market file pays and claims nothing."""
    if file not in bonuses.PAYMENT_FILES:
        raise ValueError(f"Payment files: {', '.join(bonuses.PAYMENT_FILES)}.")
    connection = connection_of(study)
    if connection is None or file == "left-out":
        listed = bonuses.unpaid(study) if connection is None else selectors.owed_entries(study)
        return [entry for entry in listed if bonuses.file_of(entry) == file]
    with transaction.atomic():
        payments.lock_payers(connection)
        waiting = payments.waiting_participants(connection)
        for entry in selectors.owed_entries(study):
            if bonuses.file_of(entry) != file or entry.worker_id in waiting:
                continue
            now = timezone.now()
            held = {"connection": connection, "state": PaymentState.SENT, "payer": Payer.FILE, "lease_until": now}
            BonusPayment.objects.update_or_create(
                earned=entry,
                defaults={**held, "batch": None, "sent_at": now, "last_error": ""},
                create_defaults={**held, "sent_at": now, "request_token": f"nli-bonus-{entry.pk}"},
            )
        return [entry for entry in selectors.held_by_files(study) if bonuses.file_of(entry) == file]


def mark_paid_by_hand(study: Study, earned_ids: Iterable[int | str], *, by: Any = None) -> dict[str, Any]:
    """A researcher paid these bonuses on the market's website (a downloaded file's, set aside, or
    owed): confirmed (`payments.confirm_paid`: the ledger's paid rows), in one transaction, with
    quality.bonuses.mark_paid's checks and answer. Refused as a whole (bonuses.PaymentRefused) when
    the API payer holds any of them: the market may be paying them right now, and the page that
    listed them was older than that payment."""
    connection = connection_of(study)
    if connection is None:
        return bonuses.mark_paid(study, earned_ids, by=by)
    ids = sorted({int(pk) for pk in earned_ids})
    with transaction.atomic():
        payments.lock_payers(connection)
        in_flight = BonusPayment.objects.filter(earned_id__in=ids, payer=Payer.API, state__in=IN_FLIGHT).count()
        if in_flight:
            raise bonuses.PaymentRefused(
                f"{in_flight} of these bonus(es) are being paid through the market's API: nothing was marked "
                "paid. Reload the page: it lists only the bonuses no other payer holds."
            )
        result = payments.confirm_paid(study, ids, by, confirmed_by_market=False)
    return result


def mark_listed_paid_by_hand(study: Study, fingerprint: str, *, by: Any = None) -> dict[str, Any]:
    """A researcher paid every bonus the bonus page listed to be marked paid by hand: the list its
    pay form names by `fingerprint` (`quality.bonus_lines.listed_bonuses`, `listed_rows`). Marked paid as
    `mark_paid_by_hand` marks them, only while the list is the one the page showed: a bonus added to
    it since (earned, released) or gone from it (paid, taken by the API payer) refuses the whole
    press (bonuses.PaymentRefused), so nothing the researcher did not see is marked paid."""
    with transaction.atomic():
        connection = connection_of(study)
        if connection is not None:
            payments.lock_payers(connection)
        listed = selectors.confirmable_by_hand(study, connection is not None)
        # One read for the check and the payment: a bonus committed between two reads would be
        # paid unchecked.
        rows = list(listed.values_list("pk", "study_session_id", "cause", "amount"))
        now = listed_rows(rows)
        if now.fingerprint != fingerprint:
            raise bonuses.PaymentRefused(
                "The unpaid bonuses changed since the page was loaded (it now lists "
                f"{now.count}, {bonuses.money(now.amount)} {study.bonus_currency}): nothing was marked paid. "
                "Reload the page, check the list, and mark them paid again."
            )
        return mark_paid_by_hand(study, [pk for pk, *_ in rows], by=by)


def release_set_aside(study: Study) -> int:
    """The researcher fixed what the market refused (a participant id, say): the set-aside bonuses
    are owed again and the next press tries them. Returns how many were released."""
    connection = connected(study)
    with transaction.atomic():
        payments.lock_payers(connection)
        return BonusPayment.objects.filter(connection=connection, state=PaymentState.ASIDE).update(
            state=PaymentState.RELEASED, last_error="Released by a researcher to be tried again."
        )


def release_file_claims(study: Study) -> int:
    """A researcher did not pay the downloaded file: its bonuses are owed again (the API payer or a
    later file may take them). Returns how many were released."""
    connection = connected(study)
    with transaction.atomic():
        payments.lock_payers(connection)
        return BonusPayment.objects.filter(connection=connection, payer=Payer.FILE, state=PaymentState.SENT).update(
            state=PaymentState.RELEASED, last_error=HAND_RELEASED
        )
