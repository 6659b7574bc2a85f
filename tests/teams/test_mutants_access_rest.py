"""More of the walls' edges (teams/access.py): a user's role in a team is their own membership's,
never another member's; the teams an action on shared rows acts in are those where the role may do
that action, not merely view; a list already read is narrowed by the attribute it is given; and a row
with no team yet (a new row before its team is chosen) or reached by a path naming no team key
belongs to no team, so no role reaches it."""

import pytest
from django.http import Http404

from corpus.models import Pair
from crowd.models import Study
from privacy.models import ErasureRecord
from teams import access
from teams.models import Role, Team

from .test_mutants_access import member

pytestmark = pytest.mark.django_db


@pytest.fixture
def labs():
    return Team.objects.create(slug="lab-b", name="B lab"), Team.objects.create(slug="lab-a", name="A lab")


def test_a_users_role_is_their_own_membership_not_another_members(labs, django_user_model):
    lab_b, lab_a = labs
    # The owners join first, so a membership read without the user would find theirs.
    member(django_user_model, "owner", (lab_b, Role.OWNER), (lab_a, Role.OWNER))
    researcher = member(django_user_model, "r", (lab_b, Role.RESEARCHER))

    assert access.role_in(researcher, lab_b.pk) == Role.RESEARCHER
    assert access.role_in(researcher, lab_a.pk) is None
    assert access.may(researcher, lab_b.pk, access.MONEY) is False
    assert access.may(researcher, lab_a.pk, access.VIEW) is False
    with pytest.raises(Http404):
        access.require(researcher, lab_a.pk, access.VIEW)


def test_the_teams_acted_on_are_those_where_the_role_may_do_the_action_not_only_view(labs, django_user_model):
    lab_b, lab_a = labs
    researcher = member(django_user_model, "r", (lab_b, Role.RESEARCHER), (lab_a, Role.OWNER))

    assert access.teams_acted_on(researcher, access.MONEY) == [lab_a.pk]
    assert access.teams_acted_on(researcher, access.VIEW) == sorted([lab_a.pk, lab_b.pk])


def test_a_list_already_read_is_narrowed_by_the_attribute_it_is_given(labs, django_user_model):
    lab_b, lab_a = labs
    researcher = member(django_user_model, "r", (lab_b, Role.RESEARCHER), (lab_a, Role.OWNER))

    # Teams carry their id as `pk` and have no `team_id`: the attribute named is the one read.
    assert access.kept([lab_b, lab_a], researcher, access.MONEY, attr="pk") == [lab_a]
    assert access.kept([lab_b, lab_a], researcher, access.VIEW, attr="pk") == [lab_b, lab_a]


def test_a_new_row_not_yet_given_a_team_belongs_to_no_team(labs, django_user_model):
    lab_b, _ = labs
    owner = member(django_user_model, "o", (lab_b, Role.OWNER))
    # The admin's add form asks the team of its unsaved row before the team is chosen.
    new = ErasureRecord(subject_hash="h")

    assert access.team_of(new) is None
    assert access.team_of(Study(slug="loose", team=None)) is None
    assert access.may(owner, access.team_of(new), access.VIEW) is False


def test_a_path_naming_no_team_key_on_the_row_answers_no_team(labs, django_user_model):
    lab_b, _ = labs
    owner = member(django_user_model, "o", (lab_b, Role.OWNER))
    # A pair reaches its team only through its dataset: it has no team key of its own.
    pair = Pair(pair_id="p1")

    assert access.team_of(pair, "team") is None
    assert access.may(owner, access.team_of(pair, "team"), access.VIEW) is False


def test_a_deactivated_member_has_no_role_by_any_check(labs, django_user_model):
    lab_b, _ = labs
    owner = member(django_user_model, "o", (lab_b, Role.OWNER))
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    # Read as a command or a task reads an account, not through the sign-in backend (which refuses it).
    account = django_user_model.objects.get(pk=owner.pk)

    assert access.role_in(account, lab_b.pk) is None
    assert access.may(account, lab_b.pk, access.VIEW) is False
    assert access.team_ids(account, access.VIEW) == set()
    with pytest.raises(Http404):
        access.require(account, lab_b.pk, access.VIEW)
