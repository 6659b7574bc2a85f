"""A validator's batch saved set-based (`corpus.services.add_labels`): the guarantees of
`add_label` for the whole batch, nothing saved when any pair is refused, and a claim and a
submit in a handful of statements."""

import pytest

from corpus.models import Label, ValidationLabel
from corpus.recompute import recompute_gold
from corpus.services import LabelRefused, add_label, add_labels
from model_annotators.live_vote import votes_on
from tests import factories
from tests.present import present
from validation import batch_claims, services
from validation.models import ValidationClaim

from .validation_factories import make_pair

pytestmark = pytest.mark.django_db


def test_a_batch_moves_every_pairs_counters_like_single_labels(dataset, make_worker):
    pairs = [make_pair(dataset, label=Label.NEUTRAL) for _ in range(5)]
    for pair in pairs[:3]:
        add_label(pair, Label.NEUTRAL, worker=make_worker())
    validator = make_worker()
    saved = add_labels([(pair, Label.NEUTRAL) for pair in pairs], worker=validator, seconds=2.0)
    assert [label.pair_id for label in saved] == [pair.pk for pair in pairs]
    assert [pair.label_count for pair in pairs] == [3, 3, 3, 2, 2]
    assert [pair.gold_label for pair in pairs] == [Label.NEUTRAL] * 3 + ["-"] * 2
    assert [label.position for label in saved] == [3, 3, 3, 2, 2]
    assert recompute_gold(fix=False).disagreements == 0


@pytest.mark.parametrize("problem", ["sixth", "twice", "author", "excluded", "not a label"])
def test_one_refused_pair_saves_nothing_for_the_batch(dataset, make_worker, problem):
    author = make_worker()
    pairs = [make_pair(dataset, author=author) for _ in range(3)]
    validator = make_worker()
    label: str = Label.ENTAILMENT
    if problem == "sixth":
        for _ in range(4):
            add_label(pairs[2], Label.NEUTRAL, worker=make_worker())
    elif problem == "twice":
        add_label(pairs[2], Label.NEUTRAL, worker=validator)
    elif problem == "author":
        validator = author
    elif problem == "excluded":
        factories.exclude(validator)
    else:
        label = "maybe"
    before = ValidationLabel.objects.count()
    with pytest.raises(LabelRefused):
        add_labels([(pair, label) for pair in pairs], worker=validator)
    assert ValidationLabel.objects.count() == before
    assert recompute_gold(fix=False).disagreements == 0


def test_a_claim_and_a_submit_take_a_handful_of_statements(dataset, make_worker, django_assert_max_num_queries):
    for _ in range(12):
        make_pair(dataset)
    worker = make_worker()
    # Seven statements (the last keeps the candidates' held places, crowd.claiming's `after`) and
    # the savepoint pair.
    with django_assert_max_num_queries(9):
        batch = present(batch_claims.claim_validation_batch(worker))
    pairs = list(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
    assert len(pairs) == 5
    # Nine statements (the eighth appends the maintained aggregates' deltas, corpus.tallies, the
    # ninth the word tally's: a first validation label moves each hypothesis from its author's
    # label to no gold), the adversarial verification's one lookup of pending fooled examples among
    # these pairs, and the savepoint pair of the submit's transaction (the test runs in one). A
    # batch that moves gold labels adds one more: the tag tally's INSERT ... SELECT (artifacts).
    # Whether any study has a model's vote is kept in the cache (model_annotators.live_vote): the
    # first submit of a process asks once a minute, the others not at all. And four for the workers'
    # figures (corpus.worker_tally): the pairs' rows read before and after the labels, and
    # the INSERTs of their deltas (the labels', the seconds histogram's; a writer's row moves only
    # with a gold label or a fifth label), whatever the batch's size.
    votes_on()
    with django_assert_max_num_queries(16):
        services.submit_validation_batch(worker, batch, dict.fromkeys(pairs, Label.CONTRADICTION))
    assert ValidationLabel.objects.filter(worker=worker).count() == 5
