"""The roles a signed-in request's user carries (`teams.backends.MemberBackend`, `access.remember_roles`):
every check reads them without a statement, they answer as the memberships do, and a membership
saved or deleted during the request is read again (an owner who leaves a team is told so at once)."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from teams import access
from teams.backends import MemberBackend
from teams.models import Membership, Role, Team

pytestmark = pytest.mark.django_db


@pytest.fixture
def labs():
    return Team.objects.create(slug="lab-b", name="B lab"), Team.objects.create(slug="lab-a", name="A lab")


def signed_in(user):
    """The user as a request's: read by the backend, with their permissions and roles."""
    return MemberBackend().get_user(user.pk)


def test_the_account_comes_with_its_roles_and_permissions_in_one_statement(labs, django_user_model):
    lab_b, lab_a = labs
    user = django_user_model.objects.create_user(username="r", is_staff=True)
    Membership.objects.create(team=lab_b, user=user, role=Role.RESEARCHER)
    Membership.objects.create(team=lab_a, user=user, role=Role.ANNOTATOR)
    with CaptureQueriesContext(connection) as captured:
        loaded = signed_in(user)
        checks = (
            access.team_ids(loaded, access.RESEARCH),
            access.team_ids(loaded, access.LABEL),
            access.role_in(loaded, lab_a.pk),
            access.role_in(loaded, 0),
            access.may(loaded, lab_b.pk, access.MONEY),
            access.team_ids_of_member(loaded),
            access.home_team_id(loaded),
            loaded.has_perm("corpus.use_research_tools"),
        )
    assert len(captured) == 1
    assert checks == (
        {lab_b.pk},
        {lab_b.pk, lab_a.pk},
        Role.ANNOTATOR,
        None,
        False,
        {lab_b.pk, lab_a.pk},
        lab_b.pk,
        False,
    )


def test_the_permissions_are_the_users_and_their_groups(django_user_model):
    from django.contrib.auth.models import Group, Permission

    user = django_user_model.objects.create_user(username="p", is_staff=True)
    group = Group.objects.create(name="some")
    group.permissions.add(Permission.objects.get(codename="add_study", content_type__app_label="crowd"))
    user.groups.add(group)
    user.user_permissions.add(Permission.objects.get(codename="pay_bonus", content_type__app_label="corpus"))
    loaded = signed_in(user)
    assert loaded.get_all_permissions() == {"crowd.add_study", "corpus.pay_bonus"}
    assert loaded.has_perm("corpus.pay_bonus") and not loaded.has_perm("corpus.exclude_worker")


def test_a_superuser_holds_every_permission_and_an_inactive_account_is_no_user(django_user_model):
    boss = signed_in(django_user_model.objects.create_superuser(username="boss", password="x"))
    assert boss.has_perm("corpus.use_research_tools") and access.team_ids(boss) is None
    assert len(boss.get_all_permissions()) > 1
    gone = django_user_model.objects.create_user(username="gone", is_active=False)
    assert signed_in(gone) is None
    assert MemberBackend().get_user(0) is None


def test_a_membership_changed_during_the_request_is_read_again(labs, django_user_model):
    lab_b, lab_a = labs
    owner = django_user_model.objects.create_user(username="o", is_staff=True)
    membership = Membership.objects.create(team=lab_b, user=owner, role=Role.OWNER)
    loaded = signed_in(owner)
    assert access.may(loaded, lab_b.pk, access.MEMBERS)

    membership.role = Role.ANNOTATOR
    membership.save(update_fields=["role"])
    assert access.role_in(loaded, lab_b.pk) == Role.ANNOTATOR
    assert not access.may(loaded, lab_b.pk, access.MEMBERS)
    Membership.objects.create(team=lab_a, user=get_user_model().objects.get(pk=owner.pk), role=Role.RESEARCHER)
    assert access.team_ids(loaded, access.RESEARCH) == {lab_a.pk}
    membership.delete()
    assert access.role_in(loaded, lab_b.pk) is None and access.team_ids_of_member(loaded) == {lab_a.pk}
