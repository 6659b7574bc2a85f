"""What an aggregation run stores of the correlated-error check, on small seeded tables and rows made
here (docs/checks.md, "library mutants"): the check read once with its time, each group written with
its figures, evidence and database members (one-label workers left out), each pair at risk with its
group, gold and a reason cut to the column, the members' finished sessions in the run's dataset's
code-holding studies held once and counted, the group a worker belongs to in the latest finished run
of a dataset, and the pages' groups of the latest finished run of each dataset in scope."""

import pandas as pd
import pytest
from django.utils import timezone

from base.long_tasks import JobStatus
from corpus.models import Dataset, Pair, Worker
from corpus.scope import Scope
from crowd.models import CodeHold, Study, StudySession, TaskKind
from quality import correlated, correlated_runs
from quality.correlated import CorrelatedCheck, CorrelatedGroup, PairEvidence
from quality.correlated_runs import CORRELATED, CheckedLabels
from quality.models import AggregationRun, CorrelatedWorkerGroup, GroupDecidedPair
from tests import factories
from tests.quality.test_mutants_correlated_groups import bots_and_honest, table

pytestmark = pytest.mark.django_db


# --- the check, read once ---------------------------------------------------------------------------


def test_the_check_finds_the_groups_and_the_gold_at_risk_of_the_table_and_times_itself():
    data = table(bots_and_honest(seed=0))
    checked = correlated_runs.check_labels(data)
    expected = correlated.find_correlated_groups(data)
    assert checked.check == expected and [group.members for group in expected.groups] == [("b0", "b1")]
    pd.testing.assert_frame_equal(checked.at_risk, correlated.gold_at_risk(data, expected))
    assert not checked.at_risk.empty
    assert isinstance(checked.seconds, float) and 0 <= checked.seconds < 60
    assert checked.seconds == round(checked.seconds, 2)


def test_only_a_database_id_names_a_member_to_store():
    assert correlated_runs._worker_pk("1234") == 1234
    assert correlated_runs._worker_pk("anon-12") is None
    assert correlated_runs._worker_pk("b0") is None


# --- the check written with the run ---------------------------------------------------------------------


def edge(a: Worker | str, b: Worker | str, shared: int, disagreements: int, expected: float, co_errors: int):
    def name(worker: Worker | str) -> str:
        return worker if isinstance(worker, str) else str(worker.pk)

    return PairEvidence(name(a), name(b), shared, disagreements, expected, co_errors, 1.23456e-7, correlated.PAIR_TEST)


def code_study(dataset: Dataset, slug: str, holds_codes: bool = True) -> Study:
    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="DONE",
        hold_code_at_chance=holds_codes,
    )


def finished(study: Study, worker: Worker, name: str, completed: bool = True) -> StudySession:
    return StudySession.objects.create(
        study=study, worker=worker, external_session_id=name, completed_at=timezone.now() if completed else None
    )


def a_run(dataset: Dataset, status: str = JobStatus.RUNNING) -> AggregationRun:
    now = timezone.now()
    return AggregationRun.objects.create(dataset=dataset, status=status, started_at=now, methods=["dawid_skene"])


def test_the_groups_and_the_pairs_at_risk_are_written_with_the_run_and_its_figures(make_worker):
    dataset = factories.dataset("checked")
    a, b, c, d, e = (make_worker(username=f"member{index}") for index in range(5))
    pairs = [factories.pair(dataset, factories.premise(dataset), ["neutral", "neutral"]) for _ in range(3)]
    first = (edge(a, b, 30, 2, 14.257, 9), edge(b, "anon-77", 12, 0, 5.5, 4), edge(a, c, 20, 1, 9.0, 6))
    second = (edge(d, e, 18, 1, 7.25, 5),)
    groups = (
        CorrelatedGroup(number=1, members=(str(a.pk), str(b.pk), str(c.pk), "anon-77"), edges=first),
        CorrelatedGroup(number=2, members=(str(d.pk), str(e.pk)), edges=second),
    )
    check = CorrelatedCheck(groups=groups, tested_pairs=11, calibration=0.81234, alpha=0.01, flagged_pairs=first)
    long_reason = "gold rests on the group's votes " * 10
    at_risk = pd.DataFrame(
        {
            "task": [pairs[0].pk, pairs[1].pk, pairs[2].pk],
            "gold": ["neutral", "entailment", "-"],
            "group": [1, 2, 1],
            "others": ["entailment", "neutral", "-"],
            "reason": [long_reason, "outvoted by group 2", "tie"],
        }
    )
    study = code_study(dataset, "checked-codes")
    held = finished(study, a, "a-session")
    run = a_run(dataset)

    figures = correlated_runs.save_check(run, CheckedLabels(check=check, at_risk=at_risk, seconds=1.25))

    assert figures == {
        "groups": 2,
        "workers_in_groups": 6,
        "tested_pairs": 11,
        "flagged_pairs": 3,
        "calibration": 0.812,
        "alpha": 0.01,
        "pairs_to_adjudicate": 3,
        "sessions_held": 1,
        "seconds": 1.25,
    }
    one, two = CorrelatedWorkerGroup.objects.filter(run=run).order_by("number")
    assert (one.number, one.shared, one.disagreements, one.co_errors) == (1, 62, 3, 19)
    assert one.expected_disagreements == pytest.approx(14.257 + 5.5 + 9.0)
    assert (two.number, two.shared, two.disagreements, two.expected_disagreements, two.co_errors) == (
        2,
        18,
        1,
        7.25,
        5,
    )
    assert one.evidence == [item.as_dict() for item in first] and two.evidence == [second[0].as_dict()]
    # The one-label worker "anon-77" is no database worker: it is in the evidence, not a member.
    assert set(one.members.all()) == {a, b, c} and set(two.members.all()) == {d, e}
    stored = {
        row.pair_id: (row.group_id, row.gold_label, row.reason, row.run_id)
        for row in GroupDecidedPair.objects.filter(run=run)
    }
    assert stored == {
        pairs[0].pk: (one.pk, "neutral", long_reason[:200], run.pk),
        pairs[1].pk: (two.pk, "entailment", "outvoted by group 2", run.pk),
        pairs[2].pk: (one.pk, "-", "tie", run.pk),
    }
    assert len(long_reason) > 200
    (hold,) = held.code_holds.all()
    assert (hold.kind, hold.text) == (CORRELATED, correlated_runs.group_reason(one))


def test_a_check_without_groups_writes_nothing_and_says_so():
    dataset = factories.dataset("no-groups")
    run = a_run(dataset)
    empty = CorrelatedCheck(groups=(), tested_pairs=4, calibration=1.0, alpha=0.01)
    at_risk = pd.DataFrame(columns=["task", "gold", "group", "others", "reason"])
    figures = correlated_runs.save_check(run, CheckedLabels(check=empty, at_risk=at_risk, seconds=0.5))
    assert figures == {
        "groups": 0,
        "workers_in_groups": 0,
        "tested_pairs": 4,
        "flagged_pairs": 0,
        "calibration": 1.0,
        "alpha": 0.01,
        "pairs_to_adjudicate": 0,
        "sessions_held": 0,
        "seconds": 0.5,
    }
    assert not CorrelatedWorkerGroup.objects.exists() and not GroupDecidedPair.objects.exists()


# --- the members' money held ----------------------------------------------------------------------------


def stored_group(run: AggregationRun, number: int, *members: Worker, co_errors: int = 7) -> CorrelatedWorkerGroup:
    group = CorrelatedWorkerGroup.objects.create(
        run=run, number=number, shared=40, disagreements=2, expected_disagreements=18.5, co_errors=co_errors
    )
    group.members.add(*members)
    return group


def test_the_reason_names_the_group_its_run_and_its_same_wrong_labels():
    run = a_run(factories.dataset("reasons"))
    group = stored_group(run, 3, co_errors=11)
    assert correlated_runs.group_reason(group) == (
        "Labels agree with other ids far beyond their accuracy (correlated group 3 of "
        f"aggregation run {run.pk}: 11 same wrong labels)."
    )


def test_only_the_members_finished_undecided_sessions_in_the_datasets_code_holding_studies_are_held(make_worker):
    dataset, elsewhere = factories.dataset("held-here"), factories.dataset("held-elsewhere")
    member, other_member, outsider = (make_worker(username=name) for name in ("member", "other", "outsider"))
    codes, no_codes, other_codes = (
        code_study(dataset, "codes"),
        code_study(dataset, "no-codes", holds_codes=False),
        code_study(elsewhere, "other-codes"),
    )
    run = a_run(dataset)
    group = stored_group(run, 1, member, other_member)
    held = finished(codes, member, "held")
    also_held = finished(codes, other_member, "also-held")
    waiting_already = finished(codes, member, "waiting-already")
    CodeHold.objects.create(session=waiting_already, kind="guesser", text="guessing")
    decided = finished(codes, member, "decided")
    CodeHold.objects.create(session=decided, kind="guesser", text="guessing", decision="released")
    left = [
        finished(codes, member, "unfinished", completed=False),
        finished(no_codes, member, "no-codes"),
        finished(other_codes, member, "other-dataset"),
        finished(codes, outsider, "outsider"),
    ]

    assert correlated_runs.hold_money_of_members(run, [group]) == 3
    reason = correlated_runs.group_reason(group)
    for session in (held, also_held):
        assert list(session.code_holds.values_list("kind", "text", "decision")) == [(CORRELATED, reason, "")]
    assert set(waiting_already.code_holds.values_list("kind", flat=True)) == {"guesser", CORRELATED}
    assert list(decided.code_holds.values_list("kind", flat=True)) == ["guesser"]
    assert not CodeHold.objects.filter(session__in=left).exists()
    # The same group asked again holds nothing twice.
    assert correlated_runs.hold_money_of_members(run, [group]) == 0
    assert CodeHold.objects.filter(kind=CORRELATED).count() == 3


def test_each_group_holds_its_own_members_with_its_own_reason(make_worker):
    dataset = factories.dataset("two-groups")
    first, second = make_worker(username="first"), make_worker(username="second")
    study = code_study(dataset, "two-groups")
    run = a_run(dataset)
    one, two = stored_group(run, 1, first), stored_group(run, 2, second)
    sessions = finished(study, first, "first"), finished(study, second, "second")
    assert correlated_runs.hold_money_of_members(run, [one, two]) == 2
    assert [session.code_holds.get().text for session in sessions] == [
        correlated_runs.group_reason(one),
        correlated_runs.group_reason(two),
    ]


# --- the group of a worker, the groups of the pages ------------------------------------------------------


def test_a_workers_group_is_the_one_of_the_latest_finished_run_of_that_dataset(make_worker):
    dataset, other = factories.dataset("latest"), factories.dataset("latest-other")
    earlier_only, latest_member, elsewhere = (make_worker(username=name) for name in ("earlier", "latest", "away"))
    older = a_run(dataset, JobStatus.DONE)
    stored_group(older, 1, earlier_only, latest_member)
    latest = a_run(dataset, JobStatus.DONE)
    in_latest = stored_group(latest, 1, latest_member)
    pending = a_run(dataset, JobStatus.PENDING)
    stored_group(pending, 1, earlier_only, latest_member)
    failed = a_run(dataset, JobStatus.FAILED)
    stored_group(failed, 1, earlier_only)
    stored_group(a_run(other, JobStatus.DONE), 1, elsewhere)

    found = correlated_runs.correlated_group_of(latest_member, dataset.pk)
    assert found == in_latest and found is not None and found.run == latest
    assert correlated_runs.correlated_group_of(earlier_only, dataset.pk) is None
    assert correlated_runs.correlated_group_of(elsewhere, dataset.pk) is None
    assert correlated_runs.correlated_group_of(elsewhere, other.pk) is not None


def test_the_pages_show_the_groups_of_each_datasets_latest_finished_run_in_scope(make_worker):
    second, first = factories.dataset("b-second"), factories.dataset("a-first")
    workers = {name: make_worker(username=name) for name in ("w1", "w2", "w3", "w4", "w5")}
    w1, w2, w3, w4, w5 = workers.values()
    stored_group(a_run(second, JobStatus.DONE), 1, w1)  # an earlier run of the dataset
    second_latest = a_run(second, JobStatus.DONE)
    second_two = stored_group(second_latest, 2, w4)
    second_one = stored_group(second_latest, 1, w3, w2, w1)
    stored_group(a_run(second, JobStatus.RUNNING), 1, w5)
    first_run = a_run(first, JobStatus.DONE)
    first_one = stored_group(first_run, 1, w5)
    first_one.evidence = [{"worker_a": str(w5.pk), "co_errors": 4}]
    first_one.save()
    empty = stored_group(first_run, 2)
    stored_group(a_run(first, JobStatus.FAILED), 1, w1)
    for _ in range(3):
        pair = factories.pair(first, factories.premise(first), ["neutral", "neutral"])
        GroupDecidedPair.objects.create(run=first_run, pair=pair, group=first_one, gold_label="neutral", reason="r")
    pair = factories.pair(second, factories.premise(second), ["neutral", "neutral"])
    GroupDecidedPair.objects.create(run=second_latest, pair=pair, group=second_two, gold_label="neutral", reason="r")

    shown = correlated_runs.groups_of_runs(correlated_runs.latest_run_ids())
    assert [row["group"] for row in shown] == [first_one, empty, second_one, second_two]
    assert [row["dataset"] for row in shown] == [first, first, second, second]
    assert [row["members"] for row in shown] == [[w5], [], sorted([w1, w2, w3], key=lambda w: w.pk), [w4]]
    assert [row["pairs"] for row in shown] == [3, 0, 0, 1]
    assert shown[0]["evidence"] == [{"worker_a": str(w5.pk), "co_errors": 4}] and shown[2]["evidence"] == []
    assert shown[2]["members"][0].user.username == "w1"

    in_scope = correlated_runs.groups_of_runs(correlated_runs.latest_run_ids(Scope.of_dataset(second)))
    assert [row["group"] for row in in_scope] == [second_one, second_two]
    no_run = Scope.of_dataset(factories.dataset("none-run"))
    assert correlated_runs.groups_of_runs(correlated_runs.latest_run_ids(no_run)) == []
    assert Pair.objects.count() == 4
