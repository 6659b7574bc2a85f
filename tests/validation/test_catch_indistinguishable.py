"""Catch trials cannot be told apart by anything a participant reads.

Each test runs an attack from `catch_attack` over a simulated study (16 participants, two
batches each, a pool of 8 catch pairs among 36 ordinary ones, catch share 0.3) through the pages
alone. Figures before/after the fix: bench/RESULTS-catch.md (`pytest ... -s` prints them).

The study is simulated once for the module and each attack reads that one observation (plain
data: what the participants saw); the tests used to simulate the same study once each.
"""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from corpus.models import Worker
from tests.conftest import rows_for_the_module

from . import catch_attack

pytestmark = pytest.mark.django_db


def make_worker(username):
    user = get_user_model().objects.create_user(username=username, password="worker-pass-1")
    return Worker.objects.create(user=user)


@pytest.fixture(scope="module")
def observation(django_db_setup, django_db_blocker, tmp_path_factory):
    with rows_for_the_module(django_db_blocker, tmp_path_factory.mktemp("catch-attack")):
        study = catch_attack.build_study()
        yield catch_attack.simulate(Client, make_worker, study)


def test_the_home_counter_rises_by_every_item_shown_whatever_the_catch_trials(observation):
    exact, blind = catch_attack.counter_exactness(observation)
    print(f"\ncounter: items shown - rise == catch trials in {exact:.2f} of batches (blind guess 'none': {blind:.2f})")
    assert sum(catch for _, catch, _ in observation.counter_rises) > 0, "the simulation served no catch trial"
    assert all(rise == shown for rise, _, shown in observation.counter_rises)


def test_no_primary_key_on_the_task_page(observation):
    precision, recall = catch_attack.pk_gap_attack(observation)
    print(f"\npk-gap classifier: precision {precision:.2f}, recall {recall:.2f}")
    assert catch_attack.pks_on_page(observation) == set()
    names = [item.name for item in observation.items]
    assert len(set(names)) == len(names), "a token names one item of one claim"


def test_a_catch_pair_is_served_to_no_more_participants_than_an_ordinary_pair_gets_labels(observation):
    precision, recall = catch_attack.served_attack(observation)
    print(f"\nserved > 4: precision {precision:.2f}, recall {recall:.2f}")
    catch_served = [
        n
        for n, item in zip(catch_attack.served_counts(observation.items), observation.items, strict=True)
        if item.is_catch
    ]
    assert catch_served and max(catch_served) <= 4


def test_a_classifier_over_everything_the_participant_sees_does_no_better_than_chance(observation):
    accuracy, rule = catch_attack.stump_attack(observation)
    # Chance at this sample size (about 45 held-out items, a handful of them catch trials) is not
    # a fixed 0.50: a rule fitted to noise often scores 0.6-0.7 held out. The attack must do no
    # better than the same attack with the catch marks shuffled within each batch (2,000 draws: a
    # false alarm 1 time in 2,001), and the old page's rules scored 1.00.
    luck = catch_attack.stump_chance_accuracies(observation)
    print(
        f"\nbest one-feature rule {rule}: held-out balanced accuracy {accuracy:.2f} "
        f"(shuffled marks: median {sorted(luck)[len(luck) // 2]:.2f}, max {max(luck):.2f})"
    )
    assert accuracy <= max(0.65, max(luck))
