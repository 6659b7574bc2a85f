"""Teams' models at the edges mutmut found unguarded (teams/models.py).

Everything made without a word about teams lives in one default team, made on first use with its
slug and name and found again after that; a team reads in the admin and the audit log as its name,
a membership as who, in which team, in which role.
"""

import pytest
from django.contrib.auth.models import User

from teams.models import DEFAULT_TEAM_SLUG, Membership, Role, Team, default_team, default_team_id

pytestmark = pytest.mark.django_db


def test_the_default_team_is_made_once_with_its_slug_and_name() -> None:
    Team.objects.filter(slug=DEFAULT_TEAM_SLUG).delete()
    made = default_team()
    assert (made.slug, made.name) == ("default", "Default team")
    assert default_team().pk == made.pk
    assert default_team_id() == made.pk
    assert Team.objects.filter(slug="default").count() == 1


def test_the_default_team_is_the_one_already_there_whatever_its_name() -> None:
    Team.objects.filter(slug=DEFAULT_TEAM_SLUG).delete()
    Team.objects.create(slug="other-lab", name="Other lab")
    renamed = Team.objects.create(slug="default", name="Our lab")
    assert default_team() == renamed and default_team().name == "Our lab"
    assert default_team_id() == renamed.pk


def test_a_team_and_a_membership_read_as_a_researcher_names_them() -> None:
    team = Team.objects.create(slug="nli-lab", name="The NLI lab")
    user = User.objects.create_user(username="ada")
    membership = Membership.objects.create(team=team, user=user, role=Role.OWNER)
    assert str(team) == "The NLI lab"
    assert str(membership) == "ada in The NLI lab (owner)"
