"""The stopping rules themselves (corpus/stopping.py), on every shape of label sequence."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus.gold import gold_from_votes
from corpus.labels import LABELS, LABELS_PER_PAIR, NO_GOLD
from corpus.stopping import (
    DECIDED,
    FIXED,
    PooledModel,
    confident_stop,
    decided_stop,
    fit_pooled_dawid_skene,
    fleiss_kappa,
    gold_is_decided,
    majority_gold,
    replay,
    replay_sequence,
)

label = st.sampled_from(LABELS)
prefix = st.lists(label, min_size=0, max_size=LABELS_PER_PAIR)


def votes(labels) -> tuple[int, int, int]:
    entailment, neutral, contradiction = (sum(1 for x in labels if x == name) for name in LABELS)
    return entailment, neutral, contradiction


def every_completion_gold(labels):
    """The 3-of-5 gold of every way the remaining labels could come."""
    rest = LABELS_PER_PAIR - len(labels)
    return {majority_gold([*labels, *more]) for more in itertools.product(LABELS, repeat=rest)}


@given(prefix)
def test_decided_means_no_remaining_labels_can_change_the_gold(labels):
    """Decided exactly when every completion to five labels gives one gold label."""
    decided = gold_is_decided(*votes(labels), len(labels))
    assert decided == (len(every_completion_gold(labels)) == 1)


def test_decided_on_every_sequence_exhaustively():
    for length in range(LABELS_PER_PAIR + 1):
        for labels in itertools.product(LABELS, repeat=length):
            assert gold_is_decided(*votes(labels), length) == (len(every_completion_gold(labels)) == 1), labels


@given(prefix)
def test_the_rule_agrees_with_corpus_gold(labels):
    """Where decided, the gold so far (corpus.gold's rule) is the five-label gold."""
    if gold_is_decided(*votes(labels), len(labels)):
        assert every_completion_gold(labels) == {gold_from_votes(*votes(labels))}


@given(st.lists(label, min_size=LABELS_PER_PAIR, max_size=LABELS_PER_PAIR))
def test_replaying_the_decided_rule_never_changes_a_gold_label(labels):
    used, gold = replay_sequence(labels, DECIDED)
    assert gold == majority_gold(labels)
    assert 3 <= used <= LABELS_PER_PAIR
    # It stops at the first decided prefix, and no earlier.
    assert all(not decided_stop(*votes(labels[:k]), k) for k in range(used))
    assert used == LABELS_PER_PAIR or decided_stop(*votes(labels[:used]), used)


def test_decided_examples():
    assert decided_stop(3, 0, 0, 3)  # three agree: stop at three labels
    assert not decided_stop(2, 1, 0, 3)
    assert decided_stop(2, 2, 0, 4) is False  # a fifth label decides between them
    assert not decided_stop(2, 1, 1, 4)  # a fifth entailment would make three
    # With five labels and three to agree, "no label can reach three" never comes before the fifth
    # label (four labels over three labels leave one with two), so '-' is decided only at five.
    assert not any(
        decided_stop(*votes(labels), len(labels)) and majority_gold(labels) == NO_GOLD
        for length in range(LABELS_PER_PAIR)
        for labels in itertools.product(LABELS, repeat=length)
    )
    assert not decided_stop(3, 1, 1, 5)  # five labels: nothing left to save
    with pytest.raises(ValueError):
        gold_is_decided(1, 1, 1, 2)


def test_fixed_never_stops():
    assert replay_sequence(["entailment"] * 5, FIXED) == (5, "entailment")


def test_confident_rule():
    model = PooledModel(
        prior=dict.fromkeys(LABELS, 1 / 3),
        confusion={t: {g: 0.9 if g == t else 0.05 for g in LABELS} for t in LABELS},
    )
    two = ["entailment", "entailment"]
    assert confident_stop(model.posterior(two), two, threshold=0.95)
    assert not confident_stop(model.posterior(two), two, threshold=0.999)
    # Never on the author's label alone.
    assert not confident_stop(model.posterior(two[:1]), two[:1], threshold=0.5)
    # A leading label that is a minority of the labels never stops early, whatever the posterior.
    minority = ["entailment", "neutral", "contradiction"]
    assert not confident_stop({"entailment": 0.99, "neutral": 0.005, "contradiction": 0.005}, minority, 0.9)
    # The maximum of labels stops it.
    assert confident_stop(model.posterior(minority), minority, threshold=0.999, max_labels=3)
    assert not confident_stop(
        model.posterior([*minority, "neutral", "neutral"]), [*minority, "neutral", "neutral"], 0.5
    )


def test_pooled_model_recovers_its_confusion():
    truth_e = [["entailment"] * 4 + ["neutral"]] * 50
    truth_c = [["contradiction"] * 5] * 50
    model = fit_pooled_dawid_skene(truth_e + truth_c)
    assert model.confusion["entailment"]["entailment"] == pytest.approx(0.8, abs=0.02)
    assert model.prior["contradiction"] == pytest.approx(0.5, abs=0.02)


def test_replay_counts_and_kappa():
    seqs = [["entailment"] * 5, ["entailment", "neutral", "neutral", "contradiction", "entailment"]]
    results = {(r.rule, r.order): r for r in replay(seqs, rules=((FIXED, None), (DECIDED, None)), shuffles=1)}
    fixed, decided = results[(FIXED, "file")], results[(DECIDED, "file")]
    assert (fixed.labels_saved, fixed.gold_changed, fixed.full_label_pairs) == (0, 0, 2)
    # The unanimous pair stops at three labels; the other is '-' only after its fifth.
    assert (decided.labels_saved, decided.stopped_early, decided.gold_changed) == (2, 1, 0)
    assert decided.saved_share == 2 / 8
    assert decided.full_label_pairs == 1
    assert results[(DECIDED, "shuffled (seed 0)")].gold_changed == 0
    assert majority_gold(seqs[1]) == NO_GOLD


def test_fleiss_kappa_is_statsmodels():
    import numpy as np
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_kappa

    rows = [list(seq) for seq in itertools.islice(itertools.product(LABELS, repeat=5), 0, 243, 7)]
    table, _ = aggregate_raters(np.array([[LABELS.index(x) for x in row] for row in rows]))
    assert fleiss_kappa(rows) == pytest.approx(statsmodels_kappa(table), abs=1e-12)
