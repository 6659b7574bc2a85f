"""Correlated-error groups that form on a live study's overlap: rule bots spread over 200 ids (a
pair of ids shares a task or two) or answering 30% of their labels at random switched 4.2% / 3.3%
of SNLI dev's gold silently with no group found (the pair test needed 10 shared tasks a pair and
disagreements at most a quarter of the expected). The shared-errors stage finds them as a set, and
the pair test's `min_shared` follows the study's overlap. Every SNLI dev five-label pair is replayed
(bench/gold_flip_replay.py); no database."""

import pandas as pd
import pytest

from bench.gold_flip_replay import BOT_PREFIX, HONEST_PREFIX, ReplayPair, label_table, read_pairs, replay
from quality import correlated
from tests.conftest import SHARED_DATA


@pytest.fixture(scope="module")
def snli_pairs() -> list[ReplayPair]:
    path = SHARED_DATA / "snli_1.0_dev.jsonl"
    assert path.exists(), f"{path} is not here (public data lives in ../shared/data; set NLI_SHARED_DATA)"
    return read_pairs(path)


def test_rule_bots_spread_over_200_ids_form_a_group_and_switch_at_most_one_percent_silently(snli_pairs):
    outcome, _ = replay(snli_pairs, 0.2, 0, honest=100, bots=200)
    assert outcome.silent_before > 0.03 * outcome.pairs  # the attack works without the stage
    assert outcome.silent_after <= 0.01 * outcome.pairs
    assert outcome.bots_in_groups >= 100 and outcome.honest_in_groups == 0


def test_rule_bots_with_30_percent_noise_form_a_group_and_switch_at_most_one_percent_silently(snli_pairs):
    outcome, _ = replay(snli_pairs, 0.2, 0, honest=100, bots=10, noise=0.3)
    assert outcome.silent_before > 0.02 * outcome.pairs
    assert outcome.silent_after <= 0.01 * outcome.pairs
    assert outcome.bots_in_groups == 10 and outcome.honest_in_groups == 0


@pytest.mark.parametrize("honest", [100, 30])
def test_honest_workers_alone_form_no_group(snli_pairs, honest):
    check = correlated.find_correlated_groups(label_table(snli_pairs, 0.0, 1, honest, 0))
    assert check.groups == ()


def test_independent_guessers_form_no_group(snli_pairs):
    data = label_table(snli_pairs, 0.2, 2, 100, 10, uniform=True)
    members = {member for group in correlated.find_correlated_groups(data).groups for member in group.members}
    assert not any(member.startswith(HONEST_PREFIX) for member in members)
    assert not any(member.startswith(BOT_PREFIX) for member in members)


def test_min_shared_follows_the_studys_overlap():
    def table(workers: int, tasks: int, per_task: int = 5) -> pd.DataFrame:
        rows = [
            (f"t{task}", f"w{(task * per_task + slot) % workers}", "entailment")
            for task in range(tasks)
            for slot in range(per_task)
        ]
        return pd.DataFrame.from_records(rows, columns=["task", "worker", "label"])

    # 20 workers over 1,000 tasks: 250 labels each, about 50 tasks shared a pair: the full 10.
    assert correlated.scaled_min_shared(table(20, 1000)) == correlated.MIN_SHARED
    # 1,000 workers over 1,000 tasks: 5 labels each, a pair shares almost nothing: the floor.
    assert correlated.scaled_min_shared(table(1000, 1000)) == correlated.MIN_SHARED_FLOOR
    # In between, half the expected overlap: 50 workers of 100 labels over 1,000 tasks of 5 labels
    # would share 100 * 100 * 4 / (5 * 1000) = 8 tasks a pair.
    assert correlated.scaled_min_shared(table(50, 1000)) == 4
