"""Payments that add up. Each bonus is named by what it was for (a catch trial, a
verified example that fooled the model), and the per-market files with the list of who is in
neither account for every unpaid bonus of a study."""

from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from corpus.models import Market
from quality import bonuses
from quality.models import BonusCause, BonusEntry, BonusKind
from tests.quality.test_catch_trials import catch_pair, make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db


def earn(study, worker, pair, session, reason, amount="1.00"):
    return BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=worker,
        study=study,
        study_session=session,
        pair=pair,
        amount=Decimal(amount),
        currency=study.bonus_currency,
        cause=CAUSE_WRITTEN_WITH.get(reason, BonusCause.OTHER),
        reason=reason,
    )


CATCH = f"{bonuses.CATCH_TRIAL_REASON} in study s"
FOOLED = f"{bonuses.FOOLED_MODEL_REASON} (study s, round 1)"
# The cause each writer records beside these words (the writers are tested below).
CAUSE_WRITTEN_WITH = {CATCH: BonusCause.CATCH_TRIAL, FOOLED: BonusCause.FOOLED_MODEL}


def test_each_writer_records_its_cause_and_a_paid_row_repeats_its_earned_rows(make_worker):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(2)]
    study = make_study(dataset)
    worker = make_worker()
    session = session_for(study, worker)

    (catch,) = bonuses.record_catch_bonuses(worker, session, [SimpleNamespace(pair_id=traps[0].pk)])
    fooled = bonuses.record_bonus(
        worker, session, traps[1], Decimal("2.00"), "Thank you", cause=BonusCause.FOOLED_MODEL
    )
    given = bonuses.give_discretionary_bonus(session, "0.50", "Careful work")
    assert fooled is not None
    bonuses.mark_paid(study, [catch.pk, fooled.pk, given.pk])

    causes = {(row.kind, row.pays_id or row.pk): row.cause for row in BonusEntry.objects.filter(study=study)}
    assert causes == {
        ("earned", catch.pk): "catch_trial",
        ("earned", fooled.pk): "fooled_model",
        ("earned", given.pk): "other",
        ("paid", catch.pk): "catch_trial",
        ("paid", fooled.pk): "fooled_model",
        ("paid", given.pk): "other",
    }
    assert catch.reason == f"{bonuses.CATCH_TRIAL_REASON} in study {study.slug}"
    assert bonuses.describe_causes({"fooled_model": 1, "catch_trial": 3}) == (
        "3 catch trials answered as the researchers did and 1 verified example that fooled the model"
    )


def test_the_cause_column_not_the_reasons_words_names_a_bonus(make_worker):
    """A reason that begins as a catch trial's does is still the cause its writer recorded."""
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(2)]
    study = make_study(dataset)
    turker = make_worker(market=Market.MTURK, external_id="A1TURKER")
    session = session_for(study, turker, "ASSIGN-1")
    for trap, cause, amount in ((traps[0], BonusCause.OTHER, "1.00"), (traps[1], BonusCause.FOOLED_MODEL, "2.00")):
        BonusEntry.objects.create(
            kind=BonusKind.EARNED,
            worker=turker,
            study=study,
            study_session=session,
            pair=trap,
            amount=Decimal(amount),
            currency=study.bonus_currency,
            cause=cause,
            reason=CATCH,
        )
    unpaid = BonusEntry.objects.filter(study=study)

    summed = bonuses.unpaid_by_cause(bonuses.unpaid_groups(unpaid))

    assert [(cause.key, n, amount) for cause, n, amount in summed] == [
        ("fooled_model", 1, Decimal("2.00")),
        ("other", 1, Decimal("1.00")),
    ]
    assert bonuses.mturk_bonus_csv(unpaid).splitlines()[1] == (
        "A1TURKER,ASSIGN-1,3.00,Bonus for 1 verified example that fooled the model and 1 other bonus"
    )


@pytest.mark.parametrize("cause", ["", "thank_you"])
def test_a_bonus_of_no_known_cause_is_refused_by_the_database(make_worker, cause):
    dataset = make_dataset()
    study = make_study(dataset)
    worker = make_worker()
    session = session_for(study, worker)
    with pytest.raises(IntegrityError, match="bonus_cause_known"), transaction.atomic():
        BonusEntry.objects.create(
            kind=BonusKind.EARNED,
            worker=worker,
            study=study,
            study_session=session,
            amount=Decimal("1.00"),
            currency=study.bonus_currency,
            cause=cause,
            reason=CATCH,
        )
    assert not BonusEntry.objects.filter(study=study).exists()


def test_the_mturk_reason_names_fooled_examples_apart_from_catch_trials(make_worker):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(3)]
    study = make_study(dataset)
    turker = make_worker(market=Market.MTURK, external_id="A1TURKER")
    session = session_for(study, turker, "ASSIGN-1")
    earn(study, turker, traps[0], session, CATCH)
    earn(study, turker, traps[1], session, FOOLED, "2.00")
    earn(study, turker, traps[2], session, FOOLED, "2.00")
    assert bonuses.mturk_bonus_csv(list(bonuses.unpaid(study))) == (
        "worker_id,assignment_id,amount,reason\n"
        "A1TURKER,ASSIGN-1,5.00,Bonus for 1 catch trial answered as the researchers did "
        "and 2 verified examples that fooled the model\n"
    )


def test_every_unpaid_bonus_is_in_exactly_one_file_and_the_left_out_say_why(make_worker):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(2)]
    study = make_study(dataset)
    prolific = make_worker(market=Market.PROLIFIC, external_id="5f1e2d3c4b5a697887766554")
    no_pid = make_worker(market=Market.PROLIFIC, external_id="")
    turker = make_worker(market=Market.MTURK, external_id="A1TURKER")
    turker_no_assignment = make_worker(market=Market.MTURK, external_id="A2TURKER")
    local = make_worker()
    prolific_session = session_for(study, prolific, "P1")
    earn(study, prolific, traps[0], prolific_session, CATCH)
    earn(study, prolific, traps[1], prolific_session, FOOLED, "3.00")
    earn(study, no_pid, traps[0], session_for(study, no_pid, "P2"), CATCH)
    earn(study, turker, traps[0], session_for(study, turker, "ASSIGN-1"), CATCH)
    earn(study, turker_no_assignment, traps[0], session_for(study, turker_no_assignment, ""), CATCH)
    earn(study, local, traps[0], session_for(study, local, "L"), CATCH)
    entries = list(bonuses.unpaid(study))
    accounts = bonuses.market_accounts(bonuses.unpaid_groups(bonuses.unpaid(study)))
    # Summed per worker, session and cause in one statement, as bonus by bonus.
    assert accounts == bonuses.market_accounts(bonuses.as_groups(entries))
    assert (accounts["prolific"].bonuses, accounts["prolific"].amount) == (2, Decimal("4.00"))
    assert (accounts["mturk"].bonuses, accounts["mturk"].amount) == (1, Decimal("1.00"))
    assert (accounts["left_out"].bonuses, accounts["left_out"].amount) == (3, Decimal("3.00"))
    assert sum((accounts[k].amount for k in ("prolific", "mturk", "left_out")), Decimal(0)) == accounts["total"]
    assert accounts["total"] == sum((e.amount for e in entries), Decimal(0))
    why = {row["worker"].pk: row["why"] for row in accounts["left_out_rows"]}
    assert set(why) == {no_pid.pk, turker_no_assignment.pk, local.pk}
    assert "participant id" in why[no_pid.pk]
    assert "assignment id" in why[turker_no_assignment.pk]
    assert "not a market's participant" in why[local.pk]
    lines = bonuses.left_out_csv(entries).splitlines()
    assert lines[0] == ",".join(bonuses.LEFT_OUT_COLUMNS)
    assert len(lines) == 4
    assert any(line.startswith("A2TURKER,mturk,1,1.00,1 catch trial answered") for line in lines)


def test_the_summaries_of_groups_of_many_bonuses_are_those_counted_bonus_by_bonus(make_worker):
    """The page sums a worker's bonuses of one session and cause in SQL (`unpaid_groups`): its
    accounts, left-out rows (in the order of the workers' names) and causes are those counted one
    bonus at a time."""
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(3)]
    study = make_study(dataset)
    zed, amy = make_worker(username="zed"), make_worker(username="amy")
    turker = make_worker(market=Market.MTURK, external_id="A1TURKER")
    prolific = make_worker(market=Market.PROLIFIC, external_id="5f1e2d3c4b5a697887766554")
    zed_session = session_for(study, zed, "Z")
    earn(study, zed, traps[0], zed_session, CATCH)
    earn(study, zed, traps[1], zed_session, CATCH, "2.00")
    earn(study, zed, traps[2], zed_session, FOOLED, "3.00")
    earn(study, amy, traps[0], session_for(study, amy, "A"), CATCH)
    earn(study, turker, None, session_for(study, turker, ""), "Thank-you bonus")  # no assignment to pay it on
    prolific_session = session_for(study, prolific, "P1")
    for trap in traps:
        earn(study, prolific, trap, prolific_session, CATCH)

    groups = bonuses.unpaid_groups(bonuses.unpaid(study))
    entries = list(bonuses.unpaid(study))
    accounts = bonuses.market_accounts(groups)

    assert len(groups) == 5 and len(entries) == 8
    assert accounts == bonuses.market_accounts(bonuses.as_groups(entries))
    assert [(len(accounts[k].workers), accounts[k].bonuses, accounts[k].amount) for k in ("prolific", "mturk")] == [
        (1, 3, Decimal("3.00")),
        (0, 0, Decimal("0")),
    ]
    assert (len(accounts["left_out"].workers), accounts["left_out"].bonuses) == (3, 5)
    assert [
        (str(row["worker"]), row["bonuses"], row["amount"], row["causes"]) for row in accounts["left_out_rows"]
    ] == [
        ("A1TURKER", 1, Decimal("1.00"), {"other": 1}),
        ("amy", 1, Decimal("1.00"), {"catch_trial": 1}),
        ("zed", 3, Decimal("6.00"), {"catch_trial": 2, "fooled_model": 1}),
    ]
    assert [(cause.key, n, amount) for cause, n, amount in bonuses.unpaid_by_cause(groups)] == [
        ("catch_trial", 6, Decimal("7.00")),
        ("fooled_model", 1, Decimal("3.00")),
        ("other", 1, Decimal("1.00")),
    ]


def test_the_bonus_page_names_causes_and_offers_the_left_out_file(client, researcher, make_worker):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(2)]
    study = make_study(dataset)
    turker = make_worker(market=Market.MTURK, external_id="A1TURKER")
    local = make_worker()
    assignment = session_for(study, turker, "ASSIGN-1")
    earn(study, turker, traps[0], assignment, CATCH)
    earn(study, turker, traps[1], assignment, FOOLED, "2.00")
    earn(study, local, traps[0], session_for(study, local, "L"), CATCH)
    client.force_login(researcher)
    html = client.get(reverse("dashboard:bonuses"), {"study": study.slug}).content.decode()
    assert "per matched catch trial" not in html
    assert 'data-cause="fooled_model">verified example that fooled the model' in html
    assert 'data-cause="catch_trial">catch trial answered as the researchers did' in html
    assert 'id="accounts-total">4.00 USD' in html
    assert 'id="table-left-out"' in html
    response = client.get(reverse("dashboard:bonus_export", args=[study.slug, "left-out"]))
    assert response.status_code == 200
    assert "bonuses-in-no-market-file.csv" in response["Content-Disposition"]
    assert "not a market's participant" in response.content.decode()
