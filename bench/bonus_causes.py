"""A bonus's cause read from its column (`BonusEntry.cause`) beside the same grouping read from the
first words of its reason, as the bonus page and the study's costs read causes until 2026-12-02.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/bonus_causes.py \\
        [--sessions 850] [--bonuses 50000] [--repeat 5]

A throwaway database (bench/throwaway_database.py) gets one validation study, --sessions sessions
of as many workers, and --bonuses unpaid earned bonuses over them (catch trials, fooled examples
and discretionary bonuses, 6:3:1, their reasons as their writers word them). Timed, best of
--repeat, with the statistics stale (no ANALYZE since the rows went in) and again after ANALYZE:

- the bonus page's unpaid groups (`quality.bonuses.unpaid_groups`): the statement as it was (each
  bonus joined to its worker, user and session, grouped by all their columns and a CASE over the
  reason's first words); the same with the cause column; and now, the bonus rows summed by worker,
  session and cause first, each group then joined to its columns;
- the study's costs by cause (`dashboard.queries.study_costs.costs`' GROUP BY), the same two ways.

The groups each statement returns are compared: the two ways must agree on every row.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.tagging_probes import best_ms, explained
from bench.throwaway_database import run_with_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=850)
    parser.add_argument("--bonuses", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    run_with_django("bonus_causes", lambda: run(args))


def cause_from_words():
    """The cause as it was read: a CASE over the reason's first words (a paid row's after "Paid: ")."""
    from django.db.models import Case, CharField, Q, Value, When

    from quality.bonuses import CATCH_TRIAL_REASON, FOOLED_MODEL_REASON, PAID_PREFIX

    starts = (("catch_trial", CATCH_TRIAL_REASON), ("fooled_model", FOOLED_MODEL_REASON))
    return Case(
        *(
            When(Q(reason__startswith=start) | Q(reason__startswith=PAID_PREFIX + start), then=Value(key))
            for key, start in starts
        ),
        default=Value("other"),
        output_field=CharField(),
    )


def build(args):
    import time
    from decimal import Decimal

    from django.contrib.auth.models import User

    from corpus.models import Dataset, Worker
    from crowd.models import Study, StudySession, TaskKind
    from quality.bonuses import CATCH_TRIAL_REASON, DISCRETIONARY_REASON, FOOLED_MODEL_REASON
    from quality.models import BonusCause, BonusEntry, BonusKind

    started = time.perf_counter()
    dataset = Dataset.objects.create(slug="bench", name="bench")
    study = Study.objects.create(
        slug="bench-validation", name="Bench", dataset=dataset, task_kind=TaskKind.VALIDATION, bonus_currency="GBP"
    )
    users = User.objects.bulk_create([User(username=f"w{n}") for n in range(args.sessions)])
    workers = Worker.objects.bulk_create([Worker(user=user, external_id=f"P{n:06d}") for n, user in enumerate(users)])
    sessions = StudySession.objects.bulk_create(
        [StudySession(study=study, worker=worker, external_session_id=f"S{worker.pk}") for worker in workers]
    )
    kinds = [
        *[(BonusCause.CATCH_TRIAL, f"{CATCH_TRIAL_REASON} in study bench-validation")] * 6,
        *[(BonusCause.FOOLED_MODEL, f"{FOOLED_MODEL_REASON} (study bench-validation, round 1)")] * 3,
        (BonusCause.OTHER, f"{DISCRETIONARY_REASON}: careful work"),
    ]
    BonusEntry.objects.bulk_create(
        (
            BonusEntry(
                kind=BonusKind.EARNED,
                worker_id=sessions[n % len(sessions)].worker_id,
                study=study,
                study_session=sessions[n % len(sessions)],
                amount=Decimal("0.10"),
                currency="GBP",
                cause=kinds[n % len(kinds)][0],
                reason=kinds[n % len(kinds)][1],
            )
            for n in range(args.bonuses)
        ),
        batch_size=5000,
    )
    print(
        f"built {args.sessions:,} sessions and {args.bonuses:,} unpaid bonuses in {time.perf_counter() - started:.1f} s"
    )
    return study


def run(args: argparse.Namespace) -> None:
    from django.db import connection
    from django.db.models import Count, Sum
    from django.test.utils import CaptureQueriesContext

    from quality import bonuses
    from quality.models import BonusEntry, BonusKind

    study = build(args)
    unpaid = BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED, payment__isnull=True)
    column = bonuses.unpaid_groups

    def joined_per_bonus(entries, cause):
        """`unpaid_groups`' statement as it was: each bonus joined to its worker, user and session,
        then grouped by all their columns; its cause `cause`, an expression or the column."""
        by = {"cause_read": cause} if cause is not None else {}
        return list(
            entries.order_by()
            .values("study_session_id", *([] if by else ["cause"]))
            .annotate(
                **by,
                bonuses=Count("pk"),
                amount=Sum("amount"),
                ids_hash=Sum(bonuses.IdHash("pk")),
            )
            .values_list(
                "worker_id",
                "worker__external_id",
                "worker__user__username",
                "worker__market",
                "study_session_id",
                "study_session__external_session_id",
                "cause_read" if by else "cause",
                "bonuses",
                "amount",
                "ids_hash",
            )
        )

    def compared(rows):
        return sorted((row[4], row[6], row[7], row[8], str(int(row[9]))) for row in rows)

    def by_column(entries):
        return sorted((g.session_id, g.cause_key, g.bonuses, g.amount, g.ids_hash) for g in column(entries))

    def costs_from_words():
        return sorted(
            unpaid.annotate(cause_read=cause_from_words())
            .values("cause_read", "currency")
            .annotate(earned=Count("pk"), owed=Sum("amount"))
            .order_by()
            .values_list("cause_read", "currency", "earned", "owed")
        )

    def costs_by_column():
        return sorted(
            unpaid.values("cause", "currency")
            .annotate(earned=Count("pk"), owed=Sum("amount"))
            .order_by()
            .values_list("cause", "currency", "earned", "owed")
        )

    def from_words(entries):
        return joined_per_bonus(entries, cause_from_words())

    def column_joined_per_bonus(entries):
        return joined_per_bonus(entries, None)

    assert by_column(unpaid) == compared(from_words(unpaid)), "the column and the words disagree on a group"
    assert by_column(unpaid) == compared(column_joined_per_bonus(unpaid)), "the two statements disagree"
    assert costs_by_column() == costs_from_words(), "the column and the words disagree on the costs"
    rows = []
    for statistics in ("stale", "analysed"):
        if statistics == "analysed":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        words = best_ms(lambda: from_words(unpaid), args.repeat)
        rows.append(
            (
                statistics,
                "unpaid groups, joined per bonus",
                words,
                best_ms(lambda: column_joined_per_bonus(unpaid), args.repeat),
            )
        )
        rows.append(
            (statistics, "unpaid groups, summed then joined (now)", words, best_ms(lambda: column(unpaid), args.repeat))
        )
        rows.append(
            (
                statistics,
                "costs by cause (the study page)",
                best_ms(costs_from_words, args.repeat),
                best_ms(costs_by_column, args.repeat),
            )
        )
    print(
        "\n| statistics | statement | cause from the words, joined per bonus (ms) | cause column (ms) | column / words |"
        "\n|---|---|---|---|---|"
    )
    for statistics, name, words_ms, column_ms in rows:
        print(f"| {statistics} | {name} | {words_ms:,.1f} | {column_ms:,.1f} | {column_ms / words_ms:.2f}x |")
    with CaptureQueriesContext(connection) as captured:
        column(unpaid)
    (statement,) = captured.captured_queries
    print(f"\n### the groups by the cause column, analysed\n{explained(statement['sql'], [])}")


if __name__ == "__main__":
    main()
