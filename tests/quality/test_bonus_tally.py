"""The ledger's tally (`BonusTally`) is the ledger summed per study, session, worker and cause, kept
by the database on every insert: earned and paid counts and amounts, and the hash of the unpaid
ids. Each test writes through the ledger's own writers and compares the tally with the ledger's
rows summed here, one by one."""

import threading
from collections import defaultdict
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.db import connection as db_connection
from django.db import connections, transaction

from crowd.holds import decide_code_holds, hold
from crowd.models import CodeHoldDecision
from quality import bonuses
from quality.bonus_lines import ids_hash
from quality.guessers import GUESSER
from quality.models import BonusCause, BonusEntry, BonusKind, BonusTally
from tests.migration_steps import migrated_back
from tests.quality.test_catch_trials import catch_pair, make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db


def summed_here():
    """The ledger summed one row at a time: {(study, session, worker, cause, currency): (earned n, earned
    amount, paid n, paid amount, hash of the unpaid ids)}; a paid row in its earned row's group."""
    rows = list(BonusEntry.objects.order_by("pk"))
    earned = {row.pk: row for row in rows if row.kind == BonusKind.EARNED}
    paid_ids = {row.pays_id for row in rows if row.kind == BonusKind.PAID}
    groups: dict[tuple, list] = defaultdict(lambda: [0, Decimal("0"), 0, Decimal("0"), []])
    for row in rows:
        owner = earned[row.pays_id] if row.pays_id is not None else row
        group = groups[(owner.study_id, owner.study_session_id, owner.worker_id, owner.cause, owner.currency)]
        if row.kind == BonusKind.EARNED:
            group[0] += 1
            group[1] += row.amount
            if row.pk not in paid_ids:
                group[4].append(row.pk)
        else:
            group[2] += 1
            group[3] += row.amount
    return {key: (n, amount, p, paid, ids_hash(unpaid)) for key, (n, amount, p, paid, unpaid) in groups.items()}


def tallied():
    return {
        (t.study_id, t.study_session_id, t.worker_id, t.cause, t.currency): (
            t.earned_count,
            t.earned_amount,
            t.paid_count,
            t.paid_amount,
            str(int(t.unpaid_ids_hash)),
        )
        for t in BonusTally.objects.all()
    }


@pytest.fixture
def two_studies(make_worker):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(4)]
    first = make_study(dataset, bonus="0.25")
    second = make_study(dataset, bonus="0.40", slug="second-study")
    amy, bob = make_worker(username="amy"), make_worker(username="bob")
    sessions = {
        "amy1": session_for(first, amy, "A1"),
        "amy2": session_for(first, amy, "A2"),
        "bob1": session_for(first, bob, "B1"),
        "bob2": session_for(second, bob, "B2"),
    }
    return SimpleNamespace(first=first, second=second, amy=amy, bob=bob, traps=traps, sessions=sessions)


def answers(*pairs):
    return [SimpleNamespace(pair_id=pair.pk) for pair in pairs]


def test_every_writer_of_the_ledger_keeps_the_tally_equal_to_its_rows_summed(two_studies):
    s = two_studies
    bonuses.record_catch_bonuses(s.amy, s.sessions["amy1"], answers(*s.traps[:3]))
    bonuses.record_catch_bonuses(s.amy, s.sessions["amy2"], answers(s.traps[0]))
    bonuses.record_catch_bonuses(s.bob, s.sessions["bob1"], answers(*s.traps[1:]))
    bonuses.record_catch_bonuses(s.bob, s.sessions["bob2"], answers(*s.traps))
    given = bonuses.give_discretionary_bonus(s.sessions["amy1"], "1.50", "Stayed on after a bug")
    assert tallied() == summed_here()

    amy_first = list(BonusEntry.objects.filter(study_session=s.sessions["amy1"]).order_by("pk"))
    bonuses.mark_paid(s.first, [amy_first[0].pk, amy_first[2].pk, given.pk])
    bonuses.mark_paid(s.second, BonusEntry.objects.filter(study=s.second).values_list("pk", flat=True))

    assert tallied() == summed_here()
    amy_catch = BonusTally.objects.get(study_session=s.sessions["amy1"], cause=BonusCause.CATCH_TRIAL)
    assert (amy_catch.earned_count, amy_catch.paid_count, amy_catch.paid_amount) == (3, 2, Decimal("0.50"))
    assert str(int(amy_catch.unpaid_ids_hash)) == ids_hash([amy_first[1].pk])
    other = BonusTally.objects.get(study_session=s.sessions["amy1"], cause=BonusCause.OTHER)
    assert (other.earned_count, other.paid_count, int(other.unpaid_ids_hash)) == (1, 1, 0)
    assert BonusTally.objects.filter(study=s.second).get().paid_count == 4
    # A group paid in full is no unpaid group: none is listed to be paid again.
    assert bonuses.tallied_groups(s.second) == []
    assert [
        (g.cause_key, g.bonuses) for g in bonuses.tallied_groups(s.first) if g.session_id == s.sessions["amy1"].pk
    ] == [("catch_trial", 1)]


def test_the_tallys_groups_and_figures_are_those_of_the_unpaid_rows_summed_one_by_one(two_studies):
    s = two_studies
    bonuses.record_catch_bonuses(s.amy, s.sessions["amy1"], answers(*s.traps[:3]))
    bonuses.record_catch_bonuses(s.bob, s.sessions["bob1"], answers(*s.traps))
    bonuses.give_discretionary_bonus(s.sessions["bob1"], "2.00", "Found a broken page")
    bonuses.record_catch_bonuses(s.amy, s.sessions["amy2"], answers(*s.traps[2:]))
    # A held code's bonuses wait: neither owed nor in the tally's groups.
    hold(s.sessions["amy2"], GUESSER, "Labels at chance so far (sequential guesser test).")
    bonuses.mark_paid(s.first, [BonusEntry.objects.filter(study_session=s.sessions["bob1"]).earliest("pk").pk])

    unpaid = bonuses.unpaid(s.first)
    assert bonuses.tallied_groups(s.first) == bonuses.unpaid_groups(unpaid)
    assert [(g.session_id, g.cause_key, g.bonuses) for g in bonuses.tallied_groups(s.first)] == [
        (s.sessions["amy1"].pk, "catch_trial", 3),
        (s.sessions["bob1"].pk, "catch_trial", 3),
        (s.sessions["bob1"].pk, "other", 1),
    ]
    figures = bonuses.tallied_figures(s.first)
    assert figures["unpaid"] == {"n": unpaid.count(), "total": sum(row.amount for row in unpaid)}
    assert figures["paid"] == {"n": 1, "total": Decimal("0.25")}

    def left_out(rows):
        return [(row.study_session_id, row.cause, 1, row.amount, int(ids_hash([row.pk]))) for row in rows]

    amys = [row.pk for row in unpaid.filter(study_session=s.sessions["amy1"])]
    less = bonuses.tallied_groups(s.first, less=left_out(unpaid.filter(pk__in=amys[:2])))
    assert [(g.session_id, g.bonuses, g.amount, g.ids_hash) for g in less if g.session_id == s.sessions["amy1"].pk] == [
        (s.sessions["amy1"].pk, 1, Decimal("0.25"), ids_hash(amys[2:]))
    ]
    assert bonuses.tallied_groups(s.first, less=left_out(unpaid.filter(study_session=s.sessions["amy1"]))) == [
        group for group in bonuses.unpaid_groups(unpaid) if group.session_id != s.sessions["amy1"].pk
    ]


def test_a_paid_row_counts_in_its_earned_rows_group_whatever_it_copied(two_studies):
    s = two_studies
    (earned,) = bonuses.record_catch_bonuses(s.amy, s.sessions["amy1"], answers(s.traps[0]))
    BonusEntry.objects.create(
        kind=BonusKind.PAID,
        worker=s.bob,
        study=s.second,
        study_session=s.sessions["bob2"],
        amount=earned.amount,
        currency=earned.currency,
        cause=BonusCause.OTHER,
        reason="Paid by a writer that copied nothing",
        pays=earned,
    )

    (tally,) = BonusTally.objects.all()
    assert (tally.study_session_id, tally.cause, tally.earned_count, tally.paid_count) == (
        s.sessions["amy1"].pk,
        BonusCause.CATCH_TRIAL,
        1,
        1,
    )
    assert tally.unpaid_ids_hash == 0


def test_emptying_the_ledger_empties_the_tally(two_studies):
    s = two_studies
    bonuses.record_catch_bonuses(s.amy, s.sessions["amy1"], answers(*s.traps))
    assert BonusTally.objects.exists()

    with db_connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE quality_bonusentry CASCADE")

    assert not BonusTally.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_writers_of_one_group_at_once_are_both_counted(two_studies):
    """Two sessions' transactions add bonuses to one study's groups at once: the second waits on the
    first's tally rows, then adds to them; nothing is lost and nobody deadlocks (the groups are
    upserted in key order)."""
    s = two_studies
    barrier = threading.Barrier(2)
    failures = []

    def write(worker, session, pairs):
        try:
            with transaction.atomic():
                bonuses.give_discretionary_bonus(session, "0.10", "First of two")
                barrier.wait(timeout=10)
                bonuses.record_catch_bonuses(worker, session, answers(*pairs))
                bonuses.give_discretionary_bonus(s.sessions["bob1"], "0.05", "Shared group")
        except Exception as error:
            failures.append(error)
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=write, args=(s.amy, s.sessions["amy1"], s.traps[:2])),
        threading.Thread(target=write, args=(s.amy, s.sessions["amy2"], s.traps[2:])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert failures == []
    assert tallied() == summed_here()
    shared = BonusTally.objects.get(study_session=s.sessions["bob1"], cause=BonusCause.OTHER)
    assert (shared.earned_count, shared.earned_amount) == (2, Decimal("0.10"))


def test_the_migration_fills_the_tally_from_the_ledger_it_finds(two_studies):
    s = two_studies
    with migrated_back([("quality", "0013_bonus_earned_in_order")], [("quality", "0014_bonus_tally")]):
        bonuses.record_catch_bonuses(s.amy, s.sessions["amy1"], answers(*s.traps))
        bonuses.record_catch_bonuses(s.bob, s.sessions["bob2"], answers(*s.traps[:2]))
        bonuses.mark_paid(s.first, BonusEntry.objects.filter(study=s.first).values_list("pk", flat=True)[:2])

    assert tallied() == summed_here()
    assert sum(t.earned_count for t in BonusTally.objects.all()) == 6


def test_a_currency_changed_midway_is_tallied_apart_and_grouped_together(two_studies):
    s = two_studies
    bonuses.record_catch_bonuses(s.amy, s.sessions["amy1"], answers(*s.traps[:2]))
    s.first.bonus_currency = "GBP"
    s.first.save(update_fields=["bonus_currency"])
    s.sessions["amy1"].refresh_from_db()
    bonuses.record_catch_bonuses(s.amy, s.sessions["amy1"], answers(*s.traps[2:]))

    assert sorted(BonusTally.objects.values_list("currency", "earned_count")) == [("GBP", 2), ("USD", 2)]
    assert tallied() == summed_here()
    (group,) = bonuses.tallied_groups(s.first)
    assert group == bonuses.unpaid_groups(bonuses.unpaid(s.first))[0]
    assert group.bonuses == 4


def test_the_bonus_page_shows_the_workers_no_file_pays_a_page_at_a_time(client, researcher, make_worker):
    dataset = make_dataset()
    trap = catch_pair(dataset)
    study = make_study(dataset)
    site_accounts = [make_worker(username=f"site-{n:02d}") for n in range(27)]
    for n, worker in enumerate(site_accounts):
        bonuses.record_catch_bonuses(worker, session_for(study, worker, f"S{n}"), answers(trap))
    client.force_login(researcher)

    def left_out_rows(page_number):
        page = client.get(f"/dashboard/bonuses/?study={study.slug}&lpage={page_number}").content.decode()
        table = page.split('id="table-left-out"', 1)[1].split("</table>", 1)[0]
        return table.count("<tr data-worker="), page

    first, page = left_out_rows(1)
    second, _ = left_out_rows(2)
    assert (first, second) == (25, 2)
    assert 'id="left-out-pager"' in page and "lpage=2#table-left-out" in page
    # Every one of them is still counted in the file's row and paid by the one press.
    assert 'data-file="left-out"><td><a' in page
    assert f'<td class="num">{len(site_accounts)}</td><td class="num">{len(site_accounts)}</td>' in page


def test_the_tallys_trigger_finds_a_paid_rows_earned_row_by_its_key_whatever_the_ledger_held_when_planned(
    two_studies,
):
    """The trigger's statement keeps one plan for the connection, made on its first insert: made on
    an empty ledger (a new deployment's first bonus), a scan of the ledger costs nothing, and every
    payment after would read the whole ledger to find the rows it pays."""
    s = two_studies
    with db_connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE quality_bonusentry CASCADE")
        cursor.execute("ANALYZE quality_bonusentry")
    (first,) = bonuses.record_catch_bonuses(s.amy, s.sessions["amy1"], answers(s.traps[0]))
    bonuses.mark_paid(s.first, [first.pk])
    with db_connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO quality_bonusentry (kind, worker_id, study_id, study_session_id, amount, currency, cause,"
            " reason, created_at) SELECT 'earned', %s, %s, %s, 0.10, 'USD', 'other', 'Earlier bonus', now()"
            " FROM generate_series(1, 3000)",
            [s.bob.pk, s.first.pk, s.sessions["bob1"].pk],
        )
    (later,) = bonuses.record_catch_bonuses(s.amy, s.sessions["amy2"], answers(s.traps[1]))

    with db_connection.cursor() as cursor:
        cursor.execute("LOAD 'auto_explain'")
        for setting in ("log_min_duration = 0", "log_nested_statements = on", "log_level = notice"):
            cursor.execute(f"SET LOCAL auto_explain.{setting}")
        cursor.execute("SET LOCAL client_min_messages = notice")
    notices = db_connection.connection.notices
    del notices[:]
    bonuses.mark_paid(s.first, [later.pk])
    with db_connection.cursor() as cursor:
        cursor.execute("SET LOCAL auto_explain.log_min_duration = -1")

    (tally_plan,) = [notice for notice in notices if "INSERT INTO quality_bonustally" in notice]
    assert "Seq Scan on quality_bonusentry" not in tally_plan, tally_plan
    assert tallied() == summed_here()


def test_the_money_per_worker_splits_the_unpaid_by_their_sessions_holds(two_studies):
    """Per worker, of one study or of every study: earned and paid from the tally, and the unpaid
    bonuses of a waiting hold (held) and of a refused one (refused) apart from those owed."""
    s = two_studies
    for worker, session, pairs in (
        (s.amy, "amy1", s.traps[:3]),
        (s.amy, "amy2", s.traps[:2]),
        (s.bob, "bob1", s.traps[:2]),
        (s.bob, "bob2", s.traps[:2]),
    ):
        earned = bonuses.record_catch_bonuses(worker, s.sessions[session], answers(*pairs))
        if session != "bob2":
            bonuses.mark_paid(earned[0].study, [earned[0].pk])
    hold(s.sessions["amy2"], GUESSER, "Labels at chance so far (sequential guesser test).")
    refused = s.sessions["bob1"]
    refused.completed_at = refused.started_at
    refused.save(update_fields=["completed_at"])
    hold(refused, GUESSER, "Labels at chance so far (sequential guesser test).")
    decide_code_holds([refused.pk], CodeHoldDecision.REFUSED)

    def money(rows):
        return {
            row["name"]: tuple(str(row[key]) for key in ("earned", "paid", "held", "refused", "unpaid")) for row in rows
        }

    assert money(bonuses.worker_totals(s.first, {})) == {
        "amy": ("1.25", "0.50", "0.25", "0.00", "0.50"),
        "bob": ("0.50", "0.25", "0.00", "0.25", "0.00"),
    }
    assert money(bonuses.worker_totals(None, {})) == {
        "amy": ("1.25", "0.50", "0.25", "0.00", "0.50"),
        "bob": ("1.30", "0.25", "0.00", "0.25", "0.80"),
    }
