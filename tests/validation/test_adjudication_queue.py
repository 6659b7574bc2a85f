"""Adjudication for every dataset: the queues pick the pairs their names say, a
decision (label, retire, undo) is kept with its reason and researcher, moves the gold label
everywhere it is read, and the statistics are given before and after."""

from pathlib import Path

import pytest

from base.long_tasks import JobStatus
from corpus.agreement import agreement_stats
from corpus.models import Adjudication, Label, Pair, Split
from corpus.scope import Scope
from corpus.services import LabelRefused, add_labels
from modeling.snapshots.selectors import pairs_for_export
from modeling.snapshots.services import create_snapshot, export_snapshot
from quality.models import AggregatedLabel, AggregationRun
from tests import factories
from validation import adjudication

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value

PLAN = {
    "split_221": [E, E, N, N, C],  # no gold, a 2-2-1 split
    "against_author": [N, E, E, E, C],  # gold E, the author said N
    "unanimous": [E, E, E, E, E],
    "torn": [C, E, C, E, C],  # gold C = author, but 3-2 between entailment and contradiction
    "short": [E, N],  # still taking labels
}


@pytest.fixture
def corpus(make_worker):
    dataset = factories.dataset("adjudicate-me")
    pairs = {
        name: factories.pair(dataset, factories.premise(dataset, split=Split.DEV), labels)
        for name, labels in PLAN.items()
    }
    # A worker the quality checks flag (too fast: ten labels at a second each) labels ten train pairs.
    fast = make_worker(username="speedy")
    rushed = [factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [E]) for _ in range(10)]
    add_labels([(pair, N) for pair in rushed], worker=fast, seconds=1.0)
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"], status=JobStatus.DONE)
    AggregatedLabel.objects.create(
        run=run, method="dawid_skene", pair=pairs["unanimous"], label=N, posterior=0.9, gold_label=E, differs=True
    )
    return dataset, pairs, rushed


def names(corpus, slug, **options):
    dataset, pairs, rushed = corpus
    by_pk = {pair.pk: name for name, pair in pairs.items()} | {pair.pk: "rushed" for pair in rushed}
    return sorted({by_pk[pair.pk] for pair in adjudication.queue(Scope.of_dataset(dataset), slug, **options)})


def test_each_queue_holds_the_pairs_its_filter_names(corpus):
    assert names(corpus, "no_gold") == ["split_221"]
    assert names(corpus, "gold_ne_author") == ["against_author"]  # the rushed pairs (E, N) have no gold yet
    assert names(corpus, "aggregation_ne_majority") == ["unanimous"]
    assert names(corpus, "flagged") == ["rushed"]
    assert names(corpus, "two_two_one") == ["split_221"]
    assert names(corpus, "mpe") == ["split_221", "torn"]
    assert adjudication.queue_counts(Scope.of_dataset(corpus[0]))["mpe"] == 2


def test_a_decision_moves_the_gold_everywhere_is_kept_with_its_reason_and_is_undone(corpus, researcher):
    dataset, pairs, _ = corpus
    pair = pairs["split_221"]
    before = agreement_stats(Scope.of_dataset(dataset))
    adjudication.decide(pair, N, researcher=researcher, reason="the hypothesis says 'may'")
    pair.refresh_from_db()
    assert (pair.gold_label, pair.gold_source, pair.label_count) == (N, "adjudicated", 5)
    decision = Adjudication.objects.get(pair=pair)
    assert (decision.action, decision.label, decision.previous_gold) == ("label", N, "-")
    assert (decision.reason, decision.researcher) == ("the hypothesis says 'may'", researcher)
    assert names(corpus, "no_gold") == [] and names(corpus, "no_gold", include_decided=True) == []
    assert names(corpus, "two_two_one", include_decided=True) == ["split_221"]

    after = agreement_stats(Scope.of_dataset(dataset))
    assert after["gold_counts"][N] == before["gold_counts"][N] + 1
    assert after["gold_counts"]["-"] == before["gold_counts"]["-"] - 1
    assert after["gold_sources"]["adjudicated"] == 1 and after["pairs"] == before["pairs"]
    assert after["five_label_pairs"] == before["five_label_pairs"]
    # Read from the tallies (votes only) with the decisions put in, or from the pairs: the same figures.
    assert after == agreement_stats(Scope.of_dataset(dataset), source="pairs")
    assert (
        agreement_stats(Scope.of_dataset(dataset), adjudicated=False)
        == before
        == agreement_stats(Scope.of_dataset(dataset), source="pairs", adjudicated=False)
    )
    effect = adjudication.before_and_after(Scope.of_dataset(dataset))
    assert {label: (b, a) for label, b, a in effect["gold_counts"]}[N] == (
        before["gold_counts"][N],
        after["gold_counts"][N],
    )
    assert {key: (b, a) for key, b, a in effect["rows"]}["no_gold"] == (before["no_gold"], after["no_gold"])

    adjudication.decide(pair, adjudication.WITHDRAW, researcher=researcher, reason="second look: no majority")
    pair.refresh_from_db()
    assert (pair.gold_label, pair.adjudicated_label, pair.gold_source) == ("-", "", "none")
    assert agreement_stats(Scope.of_dataset(dataset)) == before
    assert list(Adjudication.objects.filter(pair=pair).values_list("action", flat=True)) == ["label", "withdraw"]
    assert names(corpus, "no_gold") == ["split_221"]  # undone: back in its queue


def test_a_retired_pair_reads_no_gold_and_leaves_every_snapshot(corpus, researcher):
    dataset, pairs, _ = corpus
    pair = pairs["against_author"]
    adjudication.decide(pair, adjudication.RETIRE, researcher=researcher, reason="premise is not English")
    pair.refresh_from_db()
    assert (pair.gold_label, pair.adjudicated_label) == ("-", "-")
    assert not pairs_for_export([dataset.slug], {"splits": ["dev"]}).filter(pk=pair.pk).exists()
    assert pairs_for_export([dataset.slug], {"splits": ["dev"]}).count() == len(PLAN) - 1
    # The files too, on both export paths (PostgreSQL makes the lines in the database).
    snapshot = export_snapshot(create_snapshot(None, datasets=[dataset.slug], filters={"splits": ["dev"]}))
    exported = (Path(snapshot.directory) / "dev.jsonl").read_text(encoding="utf-8")
    assert pair.pair_id not in exported and exported.count("\n") == len(PLAN) - 1
    assert agreement_stats(Scope.of_dataset(dataset)) == agreement_stats(Scope.of_dataset(dataset), source="pairs")
    adjudication.decide(pair, adjudication.WITHDRAW, researcher=researcher, reason="kept after all")
    assert Pair.objects.get(pk=pair.pk).gold_label == E
    assert pairs_for_export([dataset.slug], {"splits": ["dev"]}).filter(pk=pair.pk).exists()


@pytest.mark.parametrize(("decision", "reason", "says"), [("maybe", "why", "not a decision"), (E, "  ", "Say why")])
def test_a_decision_without_a_reason_or_outside_the_choices_is_refused_and_changes_nothing(
    corpus, researcher, decision, reason, says
):
    pair = corpus[1]["split_221"]
    with pytest.raises(LabelRefused, match=says):
        adjudication.decide(pair, decision, researcher=researcher, reason=reason)
    assert not Adjudication.objects.exists() and Pair.objects.get(pk=pair.pk).gold_label == "-"


def test_a_worker_flagged_on_one_teams_labels_is_not_flagged_on_anothers(make_worker):
    """The flagged queue of a team's pages reads the quality checks on that team's labels only: a
    worker who rushed team A's pairs is flagged for team A and not for team B, whose pairs they
    labelled at an ordinary pace (another lab's data never shows on this lab's pages)."""
    from teams.models import Team

    team_a, team_b = (Team.objects.create(slug=slug, name=slug) for slug in ("lab-a", "lab-b"))
    worker = make_worker(username="two-labs")
    for team, seconds in ((team_a, 1.0), (team_b, 14.0)):
        dataset = factories.dataset(f"data-of-{team.slug}", team=team)
        pairs = [factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [E]) for _ in range(10)]
        add_labels([(pair, E) for pair in pairs], worker=worker, seconds=seconds)
    assert worker.pk in adjudication.flagged_workers(Scope.of_teams([team_a.pk]))
    assert worker.pk not in adjudication.flagged_workers(Scope.of_teams([team_b.pk]))
    team_b_queue = adjudication.queue_counts(Scope.of_teams([team_b.pk]))
    assert team_b_queue["flagged"] == 0
