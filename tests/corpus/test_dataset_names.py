"""Dataset names are per team. A name a researcher types means one of their teams'
datasets or a new one of their team; another team's dataset of that name is neither reached nor
said to exist (the answer is the one an unknown name gets)."""

import pytest

from corpus.models import Dataset
from corpus.selectors import DatasetNameRefused, NamedDataset, dataset_named
from teams.models import Team, default_team

pytestmark = pytest.mark.django_db


@pytest.fixture
def teams():
    return default_team(), Team.objects.create(slug="lab-b", name="Lab B")


def test_a_name_another_team_uses_makes_a_new_dataset_of_ones_own_team(teams):
    default, lab_b = teams
    Dataset.objects.create(slug="mnli", name="mnli", team=default)
    # Lab B types the default team's name: a new dataset of lab B, under its prefix, as an unknown name.
    assert dataset_named("mnli", teams={lab_b.pk}, home=lab_b.pk) == NamedDataset("lab-b--mnli", False, lab_b.pk)
    assert dataset_named("unused", teams={lab_b.pk}, home=lab_b.pk) == NamedDataset("lab-b--unused", False, lab_b.pk)
    Dataset.objects.create(slug="lab-b--mnli", name="mnli", team=lab_b)
    # Then the name is lab B's own dataset, by its name or its slug; the default team's is its own.
    assert dataset_named("mnli", teams={lab_b.pk}, home=lab_b.pk).slug == "lab-b--mnli"
    assert dataset_named("lab-b--mnli", teams={lab_b.pk}, home=lab_b.pk).exists
    assert dataset_named("mnli", teams={default.pk}, home=default.pk).slug == "mnli"


def test_another_teams_slug_is_refused_as_any_new_name_with_the_separator_is(teams):
    default, lab_b = teams
    Dataset.objects.create(slug="lab-b--private", name="private", team=lab_b)
    with pytest.raises(DatasetNameRefused) as foreign:
        dataset_named("lab-b--private", teams={default.pk}, home=default.pk)
    with pytest.raises(DatasetNameRefused) as unknown:
        dataset_named("lab-b--nothing-here", teams={default.pk}, home=default.pk)
    assert str(foreign.value) == str(unknown.value)


def test_a_command_or_a_superuser_names_any_dataset_by_its_slug(teams):
    _, lab_b = teams
    Dataset.objects.create(slug="lab-b--mnli", name="mnli", team=lab_b)
    assert dataset_named("lab-b--mnli", teams=None, home=None).exists
    assert dataset_named("snli", teams=None, home=None) == NamedDataset("snli", False, None)
