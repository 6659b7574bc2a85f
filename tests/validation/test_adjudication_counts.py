"""The adjudication page's queue counts read the pair tally and the few adjudicated pairs,
not every pair, and still equal the queues they count: after labels, a pair stopped early without
a gold label, an imported file's gold, researchers' decisions (a label, a retirement, a withdrawal,
an undo), an exclusion, in every scope (a dataset, a team's datasets, every dataset) and split."""

import pytest

from corpus.exclusions import set_workers_excluded
from corpus.models import Dataset, Label, Pair, Split, Worker
from corpus.scope import Scope
from corpus.services import add_labels, create_pairs
from corpus.stopping_policies import stop_pairs
from teams.models import default_team_id
from tests import factories
from tests.present import present
from validation import adjudication

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value


def assert_counts_are_the_queues(dataset):
    """Every queue's count equals the pairs its list holds (decided ones left out), in every scope."""
    for scope in (Scope.of_dataset(dataset), Scope.of_teams([dataset.team_id]), Scope.everything()):
        for split in (None, Split.DEV, Split.TRAIN):
            listed = {f.slug: adjudication.queue(scope.with_split(split), f.slug).count() for f in adjudication.FILTERS}
            assert adjudication.queue_counts(scope.with_split(split)) == listed, (scope, split)


def imported_with_gold(dataset, labels, gold):
    """A pair imported with its file's gold, which is not its votes' majority (MPE's items): an
    adjudication from the file, which no researcher made."""
    premise = factories.premise(dataset, split=Split.DEV)
    (pair,) = create_pairs(
        dataset,
        Split.DEV,
        [
            Pair(
                premise=premise,
                pair_id=f"imported-{premise.pk}",
                hypothesis="A file's pair.",
                author_label=labels[0],
                adjudicated_label=gold,
            )
        ],
        [labels],
        adjudication_reasons=["the file's gold"],
    )
    return pair


@pytest.fixture
def corpus(make_worker):
    dataset = factories.dataset("counted")
    validator = make_worker(username="validator")
    pair = {
        name: factories.pair(
            dataset, factories.premise(dataset, split=split), labels, validators=[validator], needs_validation=True
        )
        for name, split, labels in (
            ("split_221", Split.DEV, [E, E, N, N, C]),
            ("split_221_train", Split.TRAIN, [N, E, E, C, N]),
            ("against_author", Split.DEV, [N, E, E, E, C]),
            ("torn", Split.TRAIN, [C, E, C, E, C]),
            ("unanimous", Split.DEV, [E, E, E, E, E]),
            ("short", Split.DEV, [E, N]),
            ("stopped", Split.TRAIN, [E, N]),
        )
    }
    # Stopped before five labels and without a gold label (the confident rule's way): settled.
    assert stop_pairs(Pair.objects.filter(pk=pair["stopped"].pk)) == 1
    rushed = make_worker(username="rushed")
    quick = [factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [E]) for _ in range(10)]
    add_labels([(p, N) for p in quick], worker=rushed, seconds=1.0)  # flagged: ten labels a second each
    return dataset, pair, rushed, validator


def test_the_counts_equal_the_queues_through_decisions_imports_stops_and_exclusions(corpus, researcher):
    dataset, pair, rushed, validator = corpus
    assert_counts_are_the_queues(dataset)
    counts = adjudication.queue_counts(Scope.of_dataset(dataset))
    assert (counts["no_gold"], counts["two_two_one"], counts["mpe"], counts["gold_ne_author"]) == (3, 2, 3, 1)
    assert counts["flagged"] == 10

    imported_with_gold(dataset, [E, E, N, N, C], N)  # a 2-2-1 split the file decided: waits still
    assert adjudication.queue_counts(Scope.of_dataset(dataset))["two_two_one"] == 3
    assert_counts_are_the_queues(dataset)

    adjudication.decide(pair["split_221"], N, researcher=researcher, reason="the hypothesis says 'may'")
    adjudication.decide(pair["against_author"], adjudication.RETIRE, researcher=researcher, reason="broken")
    undone = adjudication.decide(pair["torn"], C, researcher=researcher, reason="reads as C")
    adjudication.decide(pair["stopped"], E, researcher=researcher, reason="clearly E")
    rushed_pair = present(Pair.objects.filter(labels__worker=rushed).order_by("pk").first())
    adjudication.decide(rushed_pair, N, researcher=researcher, reason="checked by hand")  # leaves the flagged queue
    assert adjudication.queue_counts(Scope.of_dataset(dataset))["flagged"] == 9
    assert_counts_are_the_queues(dataset)
    adjudication.undo(undone, researcher=researcher)  # the torn pair waits again
    adjudication.decide(pair["stopped"], adjudication.WITHDRAW, researcher=researcher, reason="not sure after all")
    assert_counts_are_the_queues(dataset)

    # Their labels leave the counters: five-label pairs are four-label ones again.
    set_workers_excluded(Worker.objects.filter(pk__in=[validator.pk, rushed.pk]), True, teams=[default_team_id()])
    assert adjudication.queue_counts(Scope.of_dataset(dataset))["two_two_one"] == 1  # the file's item only
    assert_counts_are_the_queues(dataset)


def test_another_teams_pairs_are_in_no_count(corpus):
    dataset, _, _, _ = corpus
    from teams.models import Team

    other = factories.dataset("elsewhere", team=Team.objects.create(slug="other-lab", name="Other lab"))
    factories.pair(other, factories.premise(other, split=Split.DEV), [E, E, N, N, C], needs_validation=True)
    mine = adjudication.queue_counts(Scope.of_teams([dataset.team_id]))
    everyone = adjudication.queue_counts(Scope.everything())
    assert (everyone["no_gold"], mine["no_gold"]) == (4, 3)
    assert Dataset.objects.count() == 2
    assert_counts_are_the_queues(dataset)
