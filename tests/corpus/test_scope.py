"""The one Scope every selector takes: its keys (kept in cache keys and the stored tables' keys),
the scope a key names back, and the rows it narrows to."""

import pytest
from django.db import connection

from corpus.models import Dataset, Pair
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import pairs_in
from teams.models import Team
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_keys_are_the_stored_ones_and_equal_scopes_have_equal_keys():
    team = Team.objects.create(slug="lab-k", name="Lab K")
    dataset = factories.dataset("keyed", team=team)
    assert EVERYTHING.key == Scope.everything().key == Scope.of_teams(None).key == "all:all"
    assert Scope.of_dataset(dataset, "train").key == f"{dataset.pk}:train"
    assert Scope.of_teams([3, 1]).key == Scope.of_teams(frozenset({1, 3})).key == "teams-1-3:all"
    assert Scope.figures_of(None, [1, 3], "dev") == Scope.of_teams([3, 1], "dev")
    assert Scope.figures_of(dataset, [1, 3]) == Scope.of_dataset(dataset) == Scope.named("keyed")
    assert Scope.of_dataset(dataset, "").split is None  # an empty choice is every split


def test_a_key_names_its_scope_back_and_a_gone_dataset_none():
    dataset = factories.dataset("named-back")
    for scope in (EVERYTHING, Scope.of_teams([2, 5], "dev"), Scope.of_dataset(dataset, "test")):
        assert Scope.of_key(scope.datasets_key, scope.split) == scope
    assert Scope.of_key(None) == EVERYTHING
    gone = dataset.pk
    Dataset.objects.filter(pk=gone).delete()
    assert Scope.of_key(str(gone)) is None


def test_a_scope_is_of_one_dataset_or_of_teams_not_both():
    dataset = factories.dataset("both")
    with pytest.raises(ValueError):
        Scope(dataset=dataset, teams=frozenset({1}))


def test_the_rows_of_a_scope():
    ours, theirs = Team.objects.create(slug="ours", name="Ours"), Team.objects.create(slug="theirs", name="Theirs")
    mine, other = factories.dataset("mine", team=ours), factories.dataset("other", team=theirs)
    train = factories.pair(mine, factories.premise(mine, split="train"), ["entailment"])
    dev = factories.pair(mine, factories.premise(mine, split="dev"), ["neutral"])
    elsewhere = factories.pair(other, factories.premise(other, split="train"), ["neutral"])
    assert set(pairs_in(Scope.of_dataset(mine))) == {train, dev}
    assert set(pairs_in(Scope.of_dataset(mine, "dev"))) == {dev}
    assert set(pairs_in(Scope.of_teams([ours.pk], "train"))) == {train}
    assert set(pairs_in(EVERYTHING)) == {train, dev, elsewhere}
    assert set(Scope.of_teams([theirs.pk]).filter(Pair.objects.all())) == {elsewhere}
    assert set(Scope.of_teams([]).filter(Pair.objects.all())) == set()
    condition = Scope.of_teams([ours.pk]).sql("dataset_id")
    assert condition is not None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {Pair._meta.db_table} WHERE {condition[0]}", condition[1])
        assert {row[0] for row in cursor.fetchall()} == {train.pk, dev.pk}
    assert EVERYTHING.sql("dataset_id") is None
