"""The bonus ledger: recording earned bonuses, paying them, and the lists the markets accept.

The ledger (`BonusEntry`) is append-only: a bonus is one `earned` row, written in the transaction
that scored the catch trial; paying it adds one `paid` row that names it (`pays`, unique). A bonus
is therefore never counted twice (unique worker + catch item + study session) nor paid twice.

Exports list the UNPAID earned rows of one study:
- Prolific bulk bonus: `participant_id,amount` lines, no header, the amount in the study's currency
  with two decimals (Prolific: Submissions -> Bulk bonus payments, one participant per line);
- MTurk: a header `worker_id,assignment_id,amount,reason`, one line per worker and assignment
  (SendBonus pays per assignment).
"""

import csv
import io
from decimal import Decimal

from django.db import transaction
from django.db.models import Count, DecimalField, Q, Sum, Value
from django.db.models.functions import Coalesce

from corpus.models import Market, Worker
from crowd.models import Study

from .flags import catch_only_flag
from .models import BonusEntry, BonusKind, CatchTrialAnswer
from .selectors import guesser_evidence_by_worker

CENT = Decimal("0.01")


class PaymentRefused(ValueError):
    """Marking bonuses paid was refused; the message is fit to show the researcher."""


def money(amount):
    return f"{Decimal(amount).quantize(CENT)}"


def record_catch_bonuses(worker, study_session, matched_answers):
    """One `earned` row per matched catch trial, at the study's bonus, in the caller's transaction."""
    if study_session is None or not matched_answers:
        return []
    study = study_session.study
    if study.bonus_per_catch_match is None or study.bonus_per_catch_match <= 0:
        return []
    return BonusEntry.objects.bulk_create(
        [
            BonusEntry(
                kind=BonusKind.EARNED,
                worker=worker,
                study=study,
                study_session=study_session,
                pair_id=answer.pair_id,
                amount=study.bonus_per_catch_match,
                currency=study.bonus_currency,
                reason=f"Catch trial matched in study {study.slug}",
            )
            for answer in matched_answers
        ]
    )


def unpaid(study):
    """The study's earned bonuses without a payment, oldest first."""
    return (
        BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED, payment__isnull=True)
        .select_related("worker__user", "study_session", "pair")
        .order_by("created_at", "id")
    )


@transaction.atomic
def mark_paid(study, earned_ids, by=None):
    """Record these earned bonuses of the study as paid: one `paid` row each, all in one transaction.

    Refused as a whole (nothing written) when an id is not an earned bonus of this study; ids
    already paid (another researcher was quicker) are skipped and counted. Returns
    {"paid": n, "already_paid": m, "amount": total paid now}.
    """
    ids = sorted({int(pk) for pk in earned_ids})
    if not ids:
        raise PaymentRefused("Choose at least one bonus to mark as paid.")
    # Lock the earned rows (pk order, as every payer does) so two payers cannot both pay one.
    earned = list(
        BonusEntry.objects.select_for_update().filter(pk__in=ids, study=study, kind=BonusKind.EARNED).order_by("pk")
    )
    if len(earned) != len(ids):
        raise PaymentRefused("Some of these are not earned bonuses of this study; nothing was marked paid.")
    already = set(BonusEntry.objects.filter(pays__in=ids).values_list("pays_id", flat=True))
    payments = [
        BonusEntry(
            kind=BonusKind.PAID,
            worker_id=row.worker_id,
            study=study,
            study_session_id=row.study_session_id,
            pair_id=row.pair_id,
            amount=row.amount,
            currency=row.currency,
            reason=f"Paid: {row.reason}",
            pays=row,
            recorded_by=by,
        )
        for row in earned
        if row.pk not in already
    ]
    BonusEntry.objects.bulk_create(payments)
    return {
        "paid": len(payments),
        "already_paid": len(already),
        "amount": sum((row.amount for row in payments), Decimal("0")),
    }


# --- reads -------------------------------------------------------------------------------------


def _zero():
    return Value(Decimal("0"), output_field=DecimalField(max_digits=12, decimal_places=2))


def worker_totals(study=None):
    """Per worker: catch trials seen and matched, accuracy, bonus earned, paid and unpaid (two queries)."""
    entries = BonusEntry.objects.all()
    answers = CatchTrialAnswer.objects.all()
    if study is not None:
        entries = entries.filter(study=study)
        answers = answers.filter(study_session__study=study)
    money_rows = {
        row["worker_id"]: row
        for row in entries.values("worker_id")
        .annotate(
            earned=Coalesce(Sum("amount", filter=Q(kind=BonusKind.EARNED)), _zero()),
            paid=Coalesce(Sum("amount", filter=Q(kind=BonusKind.PAID)), _zero()),
        )
        .order_by()
    }
    seen_rows = {
        row["worker_id"]: row
        for row in answers.values("worker_id")
        .annotate(seen=Count("id"), matched=Count("id", filter=Q(matched=True)))
        .order_by()
    }
    ids = set(money_rows) | set(seen_rows)
    # Catch accuracy is judged beside the ordinary labels (issue 27): a worker right on the catch
    # trials and at chance elsewhere is marked and listed last, never ranked first.
    evidence = guesser_evidence_by_worker(ids, catch_trials=False)
    rows = []
    for worker in Worker.objects.filter(pk__in=ids).select_related("user"):
        m, s = money_rows.get(worker.pk, {}), seen_rows.get(worker.pk, {})
        seen, matched = s.get("seen", 0), s.get("matched", 0)
        earned = Decimal(m.get("earned", 0)).quantize(CENT)
        paid = Decimal(m.get("paid", 0)).quantize(CENT)
        rows.append(
            {
                "worker": worker,
                "id": worker.pk,
                "name": str(worker),
                "market": worker.market,
                "catch_seen": seen,
                "catch_matched": matched,
                "catch_accuracy": matched / seen if seen else None,
                "earned": earned,
                "paid": paid,
                "unpaid": earned - paid,
                "catch_only": catch_only_flag(worker.pk, seen, matched, evidence[worker.pk]),
            }
        )
    rows.sort(key=lambda row: (row["catch_only"] is not None, -row["unpaid"], row["name"]))
    return rows


def study_summaries():
    """Per study with any bonus: unpaid count and amount, earned and paid totals (one query)."""
    return list(
        Study.objects.filter(bonus_entries__isnull=False)
        .distinct()
        .annotate(
            unpaid_count=Count(
                "bonus_entries", filter=Q(bonus_entries__kind=BonusKind.EARNED, bonus_entries__payment__isnull=True)
            ),
            unpaid_amount=Coalesce(
                Sum(
                    "bonus_entries__amount",
                    filter=Q(bonus_entries__kind=BonusKind.EARNED, bonus_entries__payment__isnull=True),
                ),
                _zero(),
            ),
            earned_amount=Coalesce(
                Sum("bonus_entries__amount", filter=Q(bonus_entries__kind=BonusKind.EARNED)), _zero()
            ),
            paid_amount=Coalesce(Sum("bonus_entries__amount", filter=Q(bonus_entries__kind=BonusKind.PAID)), _zero()),
        )
        .order_by("slug")
    )


# --- the markets' lists ------------------------------------------------------------------------


def prolific_bulk_bonus_csv(entries):
    """Prolific's bulk-bonus list: `participant_id,amount` per Prolific participant, no header."""
    totals = {}
    for entry in entries:
        if entry.worker.market == Market.PROLIFIC and entry.worker.external_id:
            totals[entry.worker.external_id] = totals.get(entry.worker.external_id, Decimal("0")) + entry.amount
    return "".join(f"{participant},{money(amount)}\n" for participant, amount in sorted(totals.items()))


def mturk_bonus_csv(entries):
    """`worker_id,assignment_id,amount,reason` per MTurk worker and assignment, with that header."""
    totals, counts = {}, {}
    for entry in entries:
        if entry.worker.market == Market.MTURK and entry.worker.external_id:
            key = (entry.worker.external_id, entry.study_session.external_session_id)
            totals[key] = totals.get(key, Decimal("0")) + entry.amount
            counts[key] = counts.get(key, 0) + 1
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["worker_id", "assignment_id", "amount", "reason"])
    for (worker_id, assignment_id), amount in sorted(totals.items()):
        n = counts[(worker_id, assignment_id)]
        writer.writerow(
            [
                worker_id,
                assignment_id,
                money(amount),
                f"Bonus for {n} catch trial{'s' if n != 1 else ''} answered as the researchers did",
            ]
        )
    return out.getvalue()


def record_bonus(worker, study_session, pair, amount, reason):
    """One `earned` row for `pair` in the study's currency, in the caller's transaction; None when
    there is nothing to pay (no study visit, no amount) or the row exists already (the ledger's
    unique worker + item + session keeps it counted once). For bonuses other than catch trials,
    e.g. a verified fooled example of an adversarial study."""
    if study_session is None or amount is None or amount <= 0:
        return None
    if BonusEntry.objects.filter(worker=worker, pair=pair, study_session=study_session).exists():
        return None
    return BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=worker,
        study=study_session.study,
        study_session=study_session,
        pair=pair,
        amount=amount,
        currency=study_session.study.bonus_currency,
        reason=reason[:200],
    )
