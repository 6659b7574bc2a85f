"""The confident stopping rule after an aggregation run."""

import random

import pytest

from corpus.models import Pair, Split, StoppingPolicy, StoppingRule
from quality import aggregation_runs
from quality.models import AggregatedLabel
from quality.tasks import aggregate_labels
from tests import factories

pytestmark = pytest.mark.django_db
LABELS = ["entailment", "neutral", "contradiction"]


def test_confident_pairs_stop_where_the_posterior_is_sure_and_not_a_minority(make_worker, researcher):
    rng = random.Random(3)
    dataset = factories.dataset("confident")
    StoppingPolicy.objects.create(
        dataset=dataset, split=Split.DEV, rule=StoppingRule.CONFIDENT, threshold=0.9, max_labels=4
    )
    careful = [make_worker(username=f"careful{i}") for i in range(6)]
    # Five-label pairs teach the model the workers; open pairs are at two to four labels.
    for number in range(18):
        truth = LABELS[number % 3]
        people = rng.sample(careful, 5)
        factories.pair(dataset, factories.premise(dataset), [truth] * 5, author=people[0], validators=people[1:])
    agreeing = factories.pair(
        dataset, factories.premise(dataset), ["neutral", "neutral"], author=careful[0], validators=careful[1:2]
    )
    minority = factories.pair(
        dataset,
        factories.premise(dataset),
        ["entailment", "neutral", "contradiction"],
        author=careful[0],
        validators=careful[1:3],
    )
    at_max = factories.pair(
        dataset,
        factories.premise(dataset),
        ["entailment", "neutral", "contradiction", "neutral"],
        author=careful[0],
        validators=careful[1:4],
    )
    assert {p.stopping_rule for p in Pair.objects.filter(dataset=dataset)} == {StoppingRule.CONFIDENT}
    requested = aggregation_runs.request_aggregation(researcher, dataset, ["dawid_skene"])
    aggregate_labels.apply(args=(requested.pk,))
    requested.refresh_from_db()
    for pair in (agreeing, minority, at_max):
        pair.refresh_from_db()
    posterior = AggregatedLabel.objects.get(run=requested, method="dawid_skene", pair=agreeing).posterior
    assert posterior >= 0.9
    assert (agreeing.stopped_early, agreeing.needs_validation) == (True, False)
    assert minority.stopped_early is False and minority.needs_validation  # leading label is a minority
    assert at_max.stopped_early is True  # the maximum of four labels
    assert requested.figures["stopped_confident"] == 2
    # Five-label pairs never count as stopped early.
    assert not Pair.objects.filter(dataset=dataset, label_count=5, stopped_early=True).exists()
