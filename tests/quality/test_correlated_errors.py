"""Correlated errors: ids sharing a rule are found as a group and honest independent
workers are not; a pair whose gold rests on a group's votes waits in the adjudication queue with
the reason; the workers page shows the group. The replay (bench/gold_flip_replay.py) runs on a slice
of SNLI dev through the database path the platform takes (an aggregation run)."""

import re

import pandas as pd
import pytest
from django.urls import reverse

from base.long_tasks import JobStatus
from bench.gold_flip_replay import BOT_PREFIX, HONEST_PREFIX, label_table, read_pairs, replay
from corpus.labels import NO_GOLD
from corpus.models import Label, Pair, ValidationLabel
from corpus.scope import Scope
from corpus.services import create_pairs
from quality import aggregation_runs, correlated
from quality.correlated_runs import CORRELATED
from quality.models import AggregationRun, CorrelatedWorkerGroup, GroupDecidedPair
from quality.tasks import aggregate_labels
from tests import factories
from tests.conftest import shared_file
from validation import adjudication

E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
SLICE = 400  # SNLI dev pairs in the database tests
# A slice small enough for a test still gives bots enough shared pairs: few ids of each kind.
HONEST, BOTS, RATE = 12, 3, 0.3


@pytest.fixture(scope="module")
def snli_pairs():
    return read_pairs(shared_file("snli_1.0_dev.jsonl"), limit=2000)


def members(check: correlated.CorrelatedCheck) -> set[str]:
    return {member for group in check.groups for member in group.members}


# --- the statistics, on the replay's label tables (no database) -------------------------------------


def test_ids_sharing_a_rule_are_one_group_and_honest_workers_are_in_none(snli_pairs):
    data = label_table(snli_pairs, rate=0.2, seed=3, honest=40, bots=6)
    check = correlated.find_correlated_groups(data)
    assert len(check.groups) == 1
    assert set(check.groups[0].members) == {f"{BOT_PREFIX}{number}" for number in range(6)}
    for edge in check.groups[0].edges:
        assert edge.disagreements == 0 and edge.co_errors >= correlated.MIN_CO_ERRORS
        # Each link passed the pair test (Bonferroni) or lies in a clique too large for chance.
        limit = (
            check.alpha / check.tested_pairs
            if edge.linked_by == correlated.PAIR_TEST
            else max(correlated.CLIQUE_LEVELS)
        )
        assert edge.p_value <= limit


def test_many_bot_ids_that_each_share_few_pairs_are_found_by_their_clique():
    # 10% of SNLI dev's validation labels over 10 bot ids: two bots share about 13 pairs, too few for
    # the pair test under Bonferroni; ten ids that all agree pairwise are too many for chance.
    data = label_table(read_pairs(shared_file("snli_1.0_dev.jsonl")), rate=0.1, seed=0, honest=100, bots=10)
    check = correlated.find_correlated_groups(data)
    assert len(check.groups) == 1
    found = set(check.groups[0].members)
    assert found <= {f"{BOT_PREFIX}{number}" for number in range(10)} and len(found) >= 8
    # The clique stage links them (the shared-errors stage may too).
    assert correlated.CLIQUE_TEST in {edge.linked_by for edge in check.groups[0].edges}


def test_honest_workers_alone_form_no_group_however_often_they_share_pairs(snli_pairs):
    # Real SNLI annotators' labels, given to a few ids so that every pair of them shares many pairs:
    # they agree beyond independence (hard pairs are hard for everyone), which the calibration absorbs.
    data = label_table(snli_pairs, rate=0.0, seed=1, honest=8, bots=0)
    check = correlated.find_correlated_groups(data)
    assert check.tested_pairs == 8 * 7 // 2
    assert check.groups == ()
    assert check.calibration < 1.0  # honest workers disagree less than independent ones would


def test_the_test_needs_agreement_on_wrong_labels_not_only_on_right_ones(snli_pairs):
    # Two careful ids that always give the real gold label agree all the time, but never on a wrong label.
    data = label_table(snli_pairs[:600], rate=0.0, seed=2, honest=10, bots=0)
    gold = {pair.pair_id: max(set(pair.labels), key=pair.labels.count) for pair in snli_pairs[:600]}
    careful = data["worker"].isin([f"{HONEST_PREFIX}0", f"{HONEST_PREFIX}1"])
    data.loc[careful, "label"] = data.loc[careful, "task"].map(gold)
    assert correlated.find_correlated_groups(data).groups == ()


def test_a_pair_decided_by_a_group_is_at_risk_with_its_reason():
    rows = [("decided", "bot-a", C), ("decided", "bot-b", C), ("decided", "h1", C), ("decided", "h2", E)]
    rows += [("decided", "h3", E), ("outvoted", "bot-a", N), ("outvoted", "h1", N), ("outvoted", "h2", N)]
    rows += [("outvoted", "h3", E), ("outvoted", "h4", E), ("safe", "bot-a", E), ("safe", "h1", E)]
    rows += [("safe", "h2", E), ("safe", "h3", E), ("safe", "h4", C), ("alone", "h1", E), ("alone", "h2", E)]
    rows += [("alone", "h3", E), ("alone", "h4", N), ("alone", "h5", N)]
    data = pd.DataFrame(rows, columns=["task", "worker", "label"])
    group = correlated.CorrelatedGroup(number=1, members=("bot-a", "bot-b"), edges=())
    check = correlated.CorrelatedCheck(groups=(group,), tested_pairs=1, calibration=1.0, alpha=0.01)
    at_risk = correlated.gold_at_risk(data, check, use_dawid_skene=False).set_index("task")
    assert set(at_risk.index) == {"decided", "outvoted"}
    # C by 3 of 5, two of them the group's: as one vote it is a 2-2 tie.
    assert at_risk.loc["decided", "reason"] == f"gold {C} rests on group 1: as one vote it is {NO_GOLD}"
    # N by 3 of 5 with one bot vote: the others are tied 2-2, and the bot broke the tie.
    assert at_risk.loc["outvoted", "reason"] == f"gold {N} rests on group 1: the other labels are tied"


def test_the_replay_meets_its_target_on_a_slice(snli_pairs):
    outcome, routed = replay(snli_pairs, 0.2, seed=0, honest=40, bots=6)
    assert outcome.honest_in_groups == 0 and outcome.bots_in_groups == 6
    assert outcome.silent_before > 2 * outcome.pairs // 100  # the problem is there ...
    assert outcome.silent_after <= outcome.pairs // 100  # ... and at most 1% stays silent
    assert outcome.routed == len(routed)


# --- through the database: an aggregation run, the queue, the workers page ----------------------------


def load_into_database(pairs, data: pd.DataFrame, make_worker):
    """The replay's label table as a dataset: pairs with their five labels, each label its worker's."""
    dataset = factories.dataset("gold-flip-slice")
    premise = factories.premise(dataset)
    rows = dict(list(data.groupby("task", sort=False)))
    workers = {name: make_worker(username=name) for name in sorted(data["worker"].unique())}
    created = create_pairs(
        dataset,
        premise.split,
        [
            Pair(premise=premise, pair_id=pair.pair_id, hypothesis=f"hypothesis of {pair.pair_id}", author_label=label)
            for pair in pairs
            for label in [rows[pair.pair_id]["label"].iloc[0]]
        ],
        [list(rows[pair.pair_id]["label"]) for pair in pairs],
    )
    label_rows = ValidationLabel.objects.filter(pair__dataset=dataset).order_by("pair_id", "position")
    by_pair: dict[int, list[int]] = {}
    for pk, pair_id in label_rows.values_list("pk", "pair_id"):
        by_pair.setdefault(pair_id, []).append(pk)
    owners: dict[str, list[int]] = {}
    for pair in created:
        for pk, worker in zip(by_pair[pair.pk], rows[pair.pair_id]["worker"], strict=True):
            owners.setdefault(worker, []).append(pk)
    for worker, pks in owners.items():
        ValidationLabel.objects.filter(pk__in=pks).update(worker=workers[worker])
    return dataset, {pair.pair_id: pair.pk for pair in created}, workers


@pytest.fixture
def slice_in_database(db, snli_pairs, make_worker):
    pairs = snli_pairs[:SLICE]
    data = label_table(pairs, RATE, seed=0, honest=HONEST, bots=BOTS)
    dataset, pks, workers = load_into_database(pairs, data, make_worker)
    return pairs, data, dataset, pks, workers


def run_check(dataset, researcher, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = aggregation_runs.request_aggregation(researcher, dataset, ["dawid_skene"])
    aggregate_labels.apply(args=(run.pk,))
    run.refresh_from_db()
    assert run.status == JobStatus.DONE, run.error
    return run


def test_an_aggregation_run_finds_the_bots_and_sends_what_rests_on_them_to_adjudication(
    slice_in_database, researcher, django_capture_on_commit_callbacks
):
    _, data, dataset, pks, workers = slice_in_database
    run = run_check(dataset, researcher, django_capture_on_commit_callbacks)
    # The platform read the same table from the label rows (worker names are now database ids) ...
    bots = {workers[f"{BOT_PREFIX}{number}"].pk for number in range(BOTS)}
    (group,) = CorrelatedWorkerGroup.objects.filter(run=run)
    assert set(group.members.values_list("pk", flat=True)) == bots
    assert group.disagreements == 0 and group.co_errors > 0 and group.evidence
    # ... and sent the pairs the replay's own call sends, with their reasons.
    expected = correlated.gold_at_risk(data, correlated.find_correlated_groups(data))
    stored = dict(GroupDecidedPair.objects.filter(run=run).values_list("pair_id", "reason"))
    assert stored and set(stored) == {pks[task] for task in expected["task"]}
    for task, reason in expected[["task", "reason"]].itertuples(index=False):
        assert re.sub(r"group \d+", "group 1", stored[pks[task]]) == reason
    assert run.figures["correlated"]["groups"] == 1
    assert run.figures["correlated"]["pairs_to_adjudicate"] == len(stored)

    # The queue annotates each pair with the reason (an annotation mypy's plugin cannot see: vars()).
    queued = {
        pair.pk: vars(pair)["correlated_reason"]
        for pair in adjudication.queue(Scope.of_dataset(dataset), slug="correlated")
    }
    assert queued == stored
    # A researcher's decision takes a pair out of the queue, as in every queue.
    decided = Pair.objects.get(pk=min(queued))
    adjudication.decide(decided, E, researcher=researcher, reason="read it: entailment")
    assert decided.pk not in {pair.pk for pair in adjudication.queue(Scope.of_dataset(dataset), slug="correlated")}
    assert adjudication.queue_counts(Scope.of_dataset(dataset))["correlated"] == len(stored) - 1


def test_the_adjudication_page_shows_the_reason(
    slice_in_database, client, researcher, django_capture_on_commit_callbacks
):
    _, _, dataset, _, _ = slice_in_database
    run = run_check(dataset, researcher, django_capture_on_commit_callbacks)
    first = GroupDecidedPair.objects.filter(run=run).order_by("pair_id").first()
    assert first is not None
    client.force_login(researcher)
    page = client.get(reverse("dashboard:adjudication"), {"dataset": dataset.slug, "queue": "correlated"})
    text = page.content.decode()
    assert f'data-pair="{first.pair_id}"' in text
    assert first.reason in text


def test_the_workers_page_shows_the_group_with_its_members_and_evidence(
    slice_in_database, client, researcher, django_capture_on_commit_callbacks
):
    _, _, dataset, _, workers = slice_in_database
    run = run_check(dataset, researcher, django_capture_on_commit_callbacks)
    client.force_login(researcher)
    text = client.get(reverse("dashboard:workers"), {"dataset": dataset.slug}).content.decode()
    section = text[text.index('id="correlated-groups"') :]
    section = section[: section.index("</section>")]
    assert f'data-run="{run.pk}"' in section
    for number in range(BOTS):
        assert f'data-worker="{workers[f"{BOT_PREFIX}{number}"].pk}"' in section
    honest_ids = [worker.pk for name, worker in workers.items() if name.startswith(HONEST_PREFIX)]
    assert not any(f'data-worker="{pk}"' in section for pk in honest_ids)
    assert "same wrong" in section  # the evidence per pair of members
    detail = client.get(reverse("dashboard:aggregation_detail", args=[run.pk])).content.decode()
    assert f"Correlated errors: 1 group ({BOTS} workers" in detail


def test_without_a_group_nothing_is_sent_and_the_page_says_so(
    db, snli_pairs, make_worker, client, researcher, django_capture_on_commit_callbacks
):
    pairs = snli_pairs[:200]
    dataset, _, _ = load_into_database(pairs, label_table(pairs, 0.0, seed=0, honest=HONEST, bots=0), make_worker)
    run = run_check(dataset, researcher, django_capture_on_commit_callbacks)
    assert not CorrelatedWorkerGroup.objects.filter(run=run).exists()
    assert not GroupDecidedPair.objects.exists()
    assert adjudication.queue_counts(Scope.of_dataset(dataset))["correlated"] == 0
    client.force_login(researcher)
    text = client.get(reverse("dashboard:workers"), {"dataset": dataset.slug}).content.decode()
    assert "No correlated group in the latest aggregation runs." in text
    # The page's button asks for a Dawid–Skene aggregation run of the dataset, which checks it again.
    form = text[text.index('id="correlated-check-form"') :]
    assert f'name="dataset" value="{dataset.slug}"' in form[: form.index("</form>")]
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.post(reverse("dashboard:aggregation"), {"dataset": dataset.slug, "methods": "dawid_skene"})
    assert response.status_code == 302 and len(queued) == 1
    again = AggregationRun.objects.exclude(pk=run.pk).get()
    assert again.methods == ["dawid_skene"] and again.dataset == dataset


def test_a_group_found_after_its_members_finished_holds_their_money_and_their_next_codes(
    slice_in_database, researcher, django_capture_on_commit_callbacks
):
    from django.utils import timezone

    from crowd.holds import money_may_go
    from crowd.models import Study, StudySession, TaskKind
    from quality.correlated_runs import correlated_group_of
    from quality.guessers import hold_findings

    _, _, dataset, _, workers = slice_in_database
    study = Study.objects.create(
        slug="correlated-hold",
        name="correlated hold",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="DONE",
        hold_code_at_chance=True,
    )
    bot, honest = workers[f"{BOT_PREFIX}0"], workers[f"{HONEST_PREFIX}0"]
    finished = {
        worker.pk: StudySession.objects.create(
            study=study, worker=worker, external_session_id=f"s-{worker.pk}", completed_at=timezone.now()
        )
        for worker in (bot, honest)
    }
    assert correlated_group_of(bot, dataset.pk) is None  # no run yet: nothing links the bot to the others

    run = run_check(dataset, researcher, django_capture_on_commit_callbacks)
    assert run.figures["correlated"]["sessions_held"] == 1
    for session in finished.values():
        session.refresh_from_db()
    (held,) = finished[bot.pk].code_holds.all()
    assert held.kind == CORRELATED and "correlated group 1" in held.text and not held.decision
    assert not finished[honest.pk].code_holds.exists()
    payable = set(StudySession.objects.filter(money_may_go()).values_list("pk", flat=True))
    assert finished[bot.pk].pk not in payable and finished[honest.pk].pk in payable
    # The next session of a member is held when it completes (`hold_findings`, whose first finding on
    # this slice's bots may be the chance test's); an honest worker's is not.
    group = correlated_group_of(bot, dataset.pk)
    assert group is not None and group.run_id == run.pk
    assert correlated_group_of(honest, dataset.pk) is None
    assert hold_findings(bot, study) and not hold_findings(honest, study)


# --- the beat's periodic check (quality.aggregate_changed_datasets) ------------------------------------


def code_holding_study(dataset, slug):
    from crowd.models import Study, TaskKind

    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="DONE",
        hold_code_at_chance=True,
    )


def beat_tick(django_capture_on_commit_callbacks) -> list[int]:
    """One run of the beat's task; the runs it queues are then fitted here, as a worker would."""
    from quality.tasks import aggregate_changed_datasets

    with django_capture_on_commit_callbacks(execute=False):
        run_ids = aggregate_changed_datasets.apply().get()
    for run_id in run_ids:
        aggregate_labels.apply(args=(run_id,))
    return run_ids


def test_the_beat_starts_a_run_for_a_dataset_with_new_labels_and_none_for_an_unchanged_one(
    slice_in_database, django_capture_on_commit_callbacks
):
    from django.utils import timezone

    from crowd.models import StudySession

    _, _, changed, _, workers = slice_in_database
    study = code_holding_study(changed, "changed")
    bot = workers[f"{BOT_PREFIX}0"]
    session = StudySession.objects.create(
        study=study, worker=bot, external_session_id="bot-session", completed_at=timezone.now()
    )
    # A code-holding dataset whose labels its latest run has read, and a dataset without a
    # code-holding study: the beat leaves both alone.
    unchanged = factories.dataset("unchanged")
    factories.pair(unchanged, factories.premise(unchanged), ["neutral", "neutral", "entailment"])
    code_holding_study(unchanged, "unchanged")
    now = timezone.now()
    AggregationRun.objects.create(dataset=unchanged, status=JobStatus.DONE, started_at=now, finished_at=now)
    no_codes = factories.dataset("no-codes")
    factories.pair(no_codes, factories.premise(no_codes), ["neutral", "neutral", "entailment"])

    (run_id,) = beat_tick(django_capture_on_commit_callbacks)
    run = AggregationRun.objects.get(pk=run_id)
    assert run.dataset == changed and run.status == JobStatus.DONE, run.error
    assert not AggregationRun.objects.filter(dataset__in=[no_codes]).exists()
    assert AggregationRun.objects.filter(dataset=unchanged).count() == 1
    # The run's group holds the bot's finished session: the money waits without a researcher's button.
    session.refresh_from_db()
    assert "correlated group 1" in session.code_held_reason

    assert beat_tick(django_capture_on_commit_callbacks) == []  # nothing changed since that run
    factories.pair(changed, factories.premise(changed), ["neutral", "contradiction"])
    (again,) = beat_tick(django_capture_on_commit_callbacks)
    assert AggregationRun.objects.get(pk=again).dataset == changed


def test_the_beat_starts_no_second_run_while_one_is_pending(slice_in_database, django_capture_on_commit_callbacks):
    _, _, dataset, _, _ = slice_in_database
    code_holding_study(dataset, "pending")
    AggregationRun.objects.create(dataset=dataset, status=JobStatus.PENDING)
    assert beat_tick(django_capture_on_commit_callbacks) == []
    assert AggregationRun.objects.filter(dataset=dataset).count() == 1


def test_a_dataset_with_nothing_to_aggregate_is_tried_once_until_labels_arrive(db, django_capture_on_commit_callbacks):
    dataset = factories.dataset("authors-only")
    factories.pair(dataset, factories.premise(dataset), ["neutral"])
    code_holding_study(dataset, "authors-only")
    (failed,) = beat_tick(django_capture_on_commit_callbacks)
    assert AggregationRun.objects.get(pk=failed).status == JobStatus.FAILED  # one label a pair: nothing to fit
    assert beat_tick(django_capture_on_commit_callbacks) == []
