"""The replay of SNLI dev's own label sequences (as bench/replay_stopping.py runs it; docs/quality.md figures)."""

from corpus.stopping import CONFIDENT, DECIDED, FIXED, read_label_sequences, replay
from tests.conftest import shared_file
from tests.present import present


def statsmodels_kappa(rows):
    """Fleiss κ of five-label rows as statsmodels computes it, the check the bench runs too."""
    import numpy as np
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    index = {"entailment": 0, "neutral": 1, "contradiction": 2}
    table, _ = aggregate_raters(np.array([[index[label] for label in row] for row in rows]), n_cat=3)
    return float(fleiss_kappa(table))


def test_label_sequences_are_read_as_the_replay_takes_them(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        '{"annotator_labels": ["neutral", "", "entailment"]}\n\n{"label_sequence": ["contradiction"]}\n{"gold_label": "-"}\n'
    )
    assert read_label_sequences(path) == [["neutral", "entailment"], ["contradiction"], []]


def test_snli_dev_replayed_under_each_rule():
    sequences = read_label_sequences(shared_file("snli_1.0_dev.jsonl"))
    assert len(sequences) == 10000
    results = {
        (r.rule, r.threshold, r.order): r
        for r in replay(sequences, rules=((FIXED, None), (DECIDED, None), (CONFIDENT, 0.95), (CONFIDENT, 0.99)))
    }
    fixed = results[(FIXED, None, "file")]
    decided = results[(DECIDED, None, "file")]
    assert (fixed.pairs, fixed.validation_labels_full, fixed.labels_saved) == (9986, 39944, 0)
    assert round(present(fixed.kappa_full), 3) == 0.670
    # 39.6% saved: every saved label is one that could not change the gold label.
    assert (decided.labels_saved, decided.gold_changed, decided.stopped_early) == (15827, 0, 8946)
    assert round(100 * decided.saved_share, 1) == 39.6
    confident = results[(CONFIDENT, 0.95, "file")], results[(CONFIDENT, 0.99, "file")]
    assert [(r.labels_saved, r.gold_changed) for r in confident] == [(25549, 174), (17942, 17)]
    # The statsmodels check the bench runs agrees with the replay's own κ.
    assert abs(statsmodels_kappa(fixed.full_label_rows) - present(fixed.kappa_full)) < 1e-9


def test_snli_dev_alpha_under_the_decided_rule_covers_every_pair_kappa_does_not():
    """Under *decided* κ over the pairs still taking five labels collapses; α over every
    pair (labels up to its stop) stays the corpus's agreement, and equals the package's."""
    import krippendorff
    import numpy as np

    sequences = read_label_sequences(shared_file("snli_1.0_dev.jsonl"))
    fixed, decided = replay(sequences, rules=((FIXED, None), (DECIDED, None)))
    index = {"entailment": 0, "neutral": 1, "contradiction": 2}
    data = np.full((5, len(decided.used_label_rows)), np.nan)
    for column, labels in enumerate(decided.used_label_rows):
        for row, label in enumerate(labels):
            data[row, column] = index[label]
    package = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal", value_domain=[0, 1, 2])
    assert abs(present(decided.alpha_all) - package) < 1e-9
    assert round(present(fixed.alpha_all), 3) == round(present(fixed.alpha_full), 3) == 0.670
    assert round(present(decided.alpha_all), 3) == 0.670 and round(present(decided.alpha_full), 3) == -0.005
    assert round(present(decided.kappa_full), 3) == -0.005
