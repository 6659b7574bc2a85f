"""The `catch_only` flag needs at least CATCH_ONLY_MIN_SEEN (3) catch trials:
one or two right catch trials beside chance labels are too little to say the worker found the catch
trials some other way. At three, all right, beside labels at chance, the flag fires."""

import pytest

from quality.sequential import (
    CATCH_ONLY,
    CATCH_ONLY_MIN_ACCURACY,
    CATCH_ONLY_MIN_SEEN,
    catch_only_flag,
    sequential_guesser_test,
)

AT_CHANCE = sequential_guesser_test(agreements=10, items=30, chance=1 / 3)  # a uniform guesser's labels
ORDINARY = sequential_guesser_test(agreements=24, items=30, chance=1 / 3)


def test_the_evidence_used_here_is_what_it_says():
    assert AT_CHANCE.holds_code and not ORDINARY.holds_code
    assert CATCH_ONLY_MIN_SEEN == 3


@pytest.mark.parametrize("seen", [1, 2])
def test_fewer_than_three_catch_trials_never_flag(seen):
    assert catch_only_flag(7, seen, seen, AT_CHANCE) is None


def test_three_right_catch_trials_beside_chance_labels_flag():
    flag = catch_only_flag(7, 3, 3, AT_CHANCE)
    assert flag is not None and flag.kind == CATCH_ONLY and flag.figures["catch_seen"] == 3
    assert "Catch trials right (3 of 3)" in flag.reason


def test_catch_accuracy_below_the_bar_or_ordinary_labels_never_flag():
    seen = 10
    below = int(CATCH_ONLY_MIN_ACCURACY * seen) - 1
    assert catch_only_flag(7, seen, below, AT_CHANCE) is None
    assert catch_only_flag(7, seen, int(CATCH_ONLY_MIN_ACCURACY * seen), AT_CHANCE) is not None
    assert catch_only_flag(7, seen, seen, ORDINARY) is None
