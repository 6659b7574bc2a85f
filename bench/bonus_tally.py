"""The bonus page's money read from the ledger's tally (`quality.models.BonusTally`) beside the same
figures read from the ledger's rows, and what keeping the tally costs the ledger's writers.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/bonus_tally.py \\
        [--sessions 850] [--bonuses 50000] [--repeat 5] [--writes 1000]

A throwaway database (bench/throwaway_database.py) gets one validation study, --sessions sessions
of as many workers, and --bonuses unpaid earned bonuses over them (bench/bonus_causes.py's build);
a tenth of them are then marked paid (`quality.bonuses.mark_paid`). Timed, best of --repeat, with
the statistics stale (no ANALYZE since the rows went in) and again after ANALYZE, each read both
ways, the two answers asserted equal first:

- the studies' summaries (`quality.bonuses.study_summaries`' statement);
- the payment machine's figures of a study without a market connection (owed and paid);
- the unpaid groups per worker, session and cause (`unpaid_groups` of the rows, `tallied_groups`);
- the money per worker (earned, paid, held, refused: `quality.bonuses.worker_money`).

Then the writers, each with the tally's trigger on and off (ALTER TABLE ... DISABLE TRIGGER), in
turns: --writes single-row inserts of an earned bonus, each its own statement and transaction (a
validation submit's catch bonus); one bulk insert of --writes earned bonuses; `mark_paid` of
--writes bonuses (one bulk insert of paid rows).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.tagging_probes import best_ms
from bench.throwaway_database import run_with_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=850)
    parser.add_argument("--bonuses", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--writes", type=int, default=1000)
    args = parser.parse_args()
    run_with_django("bonus_tally", lambda: run(args))


def from_the_rows(study):
    """The four reads as they were made from the ledger's rows, one bonus at a time."""
    from decimal import Decimal

    from django.db.models import Count, DecimalField, Q, Sum, Value
    from django.db.models.functions import Coalesce

    from crowd.holds import hold_refused, hold_waits
    from crowd.models import Study
    from quality import bonuses
    from quality.models import BonusEntry, BonusKind

    zero = Value(Decimal("0"), output_field=DecimalField(max_digits=12, decimal_places=2))
    unpaid = Q(kind=BonusKind.EARNED, payment__isnull=True)

    def summaries():
        earned_unpaid = Q(bonus_entries__kind=BonusKind.EARNED, bonus_entries__payment__isnull=True)
        owed = earned_unpaid & bonuses.payable("bonus_entries__")
        waits = earned_unpaid & hold_waits("bonus_entries__study_session__")
        rows = (
            Study.objects.filter(bonus_entries__isnull=False)
            .distinct()
            .annotate(
                unpaid_count=Count("bonus_entries", filter=owed),
                unpaid_amount=Coalesce(Sum("bonus_entries__amount", filter=owed), zero),
                held_count=Count("bonus_entries", filter=waits),
                held_amount=Coalesce(Sum("bonus_entries__amount", filter=waits), zero),
                earned_amount=Coalesce(
                    Sum("bonus_entries__amount", filter=Q(bonus_entries__kind=BonusKind.EARNED)), zero
                ),
                paid_amount=Coalesce(Sum("bonus_entries__amount", filter=Q(bonus_entries__kind=BonusKind.PAID)), zero),
            )
            .order_by("slug")
        )
        return summarised(rows)

    def figures():
        def figure(rows):
            row = rows.aggregate(n=Count("id"), total=Sum("amount"))
            return {"n": row["n"], "total": row["total"] or Decimal("0")}

        return {
            "unpaid": figure(bonuses.unpaid(study)),
            "paid": figure(BonusEntry.objects.filter(study=study, kind=BonusKind.PAID)),
        }

    def groups():
        return bonuses.unpaid_groups(bonuses.unpaid(study))

    def money():
        return {
            row["worker_id"]: row
            for row in BonusEntry.objects.filter(study=study)
            .values("worker_id")
            .annotate(
                earned=Coalesce(Sum("amount", filter=Q(kind=BonusKind.EARNED)), zero),
                paid=Coalesce(Sum("amount", filter=Q(kind=BonusKind.PAID)), zero),
                held=Coalesce(Sum("amount", filter=unpaid & hold_waits("study_session__")), zero),
                refused=Coalesce(Sum("amount", filter=unpaid & hold_refused("study_session__")), zero),
            )
            .order_by()
        }

    return {"summaries": summaries, "figures": figures, "groups": groups, "money": money}


def from_the_tally(study):
    from quality import bonuses

    return {
        "summaries": lambda: summarised(bonuses._study_summaries_queryset()),
        "figures": lambda: bonuses.tallied_figures(study),
        "groups": lambda: bonuses.tallied_groups(study),
        "money": lambda: bonuses.worker_money(study),
    }


def summarised(studies):
    fields = ("unpaid_count", "unpaid_amount", "held_count", "held_amount", "earned_amount", "paid_amount")
    return [(study.slug, *(getattr(study, name) for name in fields)) for study in studies]


def timed_writes(study, args):
    """ms per single-row insert, for the bulk insert and for mark_paid, with the trigger on or off."""
    import time
    from decimal import Decimal

    from django.db import connection, transaction

    from crowd.models import StudySession
    from quality import bonuses
    from quality.models import BonusCause, BonusEntry, BonusKind

    sessions = list(StudySession.objects.filter(study=study).order_by("pk")[:200])

    def earned(n):
        session = sessions[n % len(sessions)]
        return BonusEntry(
            kind=BonusKind.EARNED,
            worker_id=session.worker_id,
            study=study,
            study_session=session,
            amount=Decimal("0.10"),
            currency="GBP",
            cause=BonusCause.CATCH_TRIAL,
            reason="Catch trial matched in study bench-validation",
        )

    results: dict[str, list[float]] = {}
    for turn in ("on", "off", "on", "off"):
        with connection.cursor() as cursor:
            state = "ENABLE" if turn == "on" else "DISABLE"
            cursor.execute(f"ALTER TABLE quality_bonusentry {state} TRIGGER quality_bonus_tally_added")
        started = time.perf_counter()
        for n in range(args.writes):
            with transaction.atomic():
                BonusEntry.objects.bulk_create([earned(n)])
        single = (time.perf_counter() - started) * 1000 / args.writes
        started = time.perf_counter()
        with transaction.atomic():
            bulk = BonusEntry.objects.bulk_create([earned(n) for n in range(args.writes)])
        bulk_ms = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        bonuses.mark_paid(study, [row.pk for row in bulk])
        paid_ms = (time.perf_counter() - started) * 1000
        best = results.setdefault(turn, [float("inf")] * 3)
        results[turn] = [min(a, b) for a, b in zip(best, (single, bulk_ms, paid_ms), strict=True)]
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE quality_bonusentry ENABLE TRIGGER quality_bonus_tally_added")
    return results


def run(args: argparse.Namespace) -> None:
    from django.db import connection

    from bench.bonus_causes import build
    from quality import bonuses
    from quality.models import BonusEntry, BonusTally

    study = build(args)
    some = list(
        BonusEntry.objects.filter(study=study).order_by("pk").values_list("pk", flat=True)[: args.bonuses // 10]
    )
    bonuses.mark_paid(study, some)
    rows, tally = from_the_rows(study), from_the_tally(study)
    for name in rows:
        assert rows[name]() == tally[name](), f"the tally and the rows disagree on the {name}"
    print(f"tally rows: {BonusTally.objects.filter(study=study).count():,}")
    print("\n| statistics | read | from the rows (ms) | from the tally (ms) | tally / rows |\n|---|---|---:|---:|---:|")
    for statistics in ("stale", "analysed"):
        if statistics == "analysed":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        for name in rows:
            before = best_ms(rows[name], args.repeat)
            now = best_ms(tally[name], args.repeat)
            print(f"| {statistics} | {name} | {before:,.1f} | {now:,.1f} | {now / before:.2f}x |")
    writes = timed_writes(study, args)
    print(
        f"\n| writer ({args.writes:,} bonuses) | trigger off (ms) | trigger on (ms) | on / off |\n|---|---:|---:|---:|"
    )
    for index, name in enumerate(("one insert per bonus (ms each)", "one bulk insert", "mark_paid")):
        off, on = writes["off"][index], writes["on"][index]
        print(f"| {name} | {off:,.2f} | {on:,.2f} | {on / off:.2f}x |")


if __name__ == "__main__":
    main()
