"""The pair test's minimum where tasks average fewer than two labels: what two workers would share at
random counts each task's labels beyond the first, so half a label of overlap a task gives half the
minimum that a whole one would."""

import pandas as pd

from quality import correlated

E = "entailment"


def test_tasks_of_one_and_a_half_labels_on_average_ask_for_half_a_labels_overlap() -> None:
    # Two workers of 30 labels over 40 tasks, 20 of them shared: k = 1.5, so they would share
    # 30 * 30 * 0.5 / (1.5 * 40) = 7.5 tasks at random, and half of that (4) is asked. A whole
    # label beyond the first would ask 8.
    rows = [(f"t{task}", "a", E) for task in range(30)] + [(f"t{task}", "b", E) for task in range(10, 40)]
    assert correlated.scaled_min_shared(pd.DataFrame(rows, columns=["task", "worker", "label"])) == 4
