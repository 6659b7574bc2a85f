"""Who is in a team and the rule that a team keeps an owner (teams/selectors.py, teams/services.py),
at the edges the team pages' tests leave open: a team's members come owners first, then
researchers, then annotators, each role by username, and never another team's; a user's teams come
by name with their role there, a superuser's every team as owner; a team and a membership are
found only by their exact slug and within their own team; joining puts a user in the default team
as a researcher unless told otherwise and changes the role of a member already there; the team's
row is locked for the rest of the transaction; and the last owner of a team can be neither made
another role nor removed, while an owner with a fellow owner (of the same team) can."""

import threading
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction

from teams.models import DEFAULT_TEAM_SLUG, Membership, Role, Team, default_team
from teams.selectors import members, membership_in, team_named, teams_of
from teams.services import LastOwnerError, join, keep_an_owner, lock_team


def _user(name: str, *, superuser: bool = False) -> User:
    if superuser:
        return User.objects.create_superuser(username=name, password="pw")
    return User.objects.create_user(username=name)


def _in(team: Team, name: str, role: str) -> Membership:
    return Membership.objects.create(team=team, user=_user(name), role=role)


@pytest.fixture
def labs(db: None) -> tuple[Team, Team]:
    # Slugs and names in opposite orders, and the first made last by name: an order by pk, slug or
    # name each gives a different list.
    return Team.objects.create(slug="a-lab", name="Zebra lab"), Team.objects.create(slug="z-lab", name="Alpha lab")


def test_a_teams_members_come_by_role_then_username_and_only_its_own(labs: tuple[Team, Team]) -> None:
    lab, other = labs
    # Usernames whose alphabetical order is the reverse of the roles' order.
    _in(lab, "cat-annotator", Role.ANNOTATOR)
    _in(lab, "bob-researcher", Role.RESEARCHER)
    _in(lab, "zed-owner", Role.OWNER)
    _in(lab, "amy-annotator", Role.ANNOTATOR)
    _in(lab, "yan-owner", Role.OWNER)
    _in(other, "abe-owner", Role.OWNER)

    listed = [(m.user.username, m.role) for m in members(lab)]

    assert listed == [
        ("yan-owner", Role.OWNER),
        ("zed-owner", Role.OWNER),
        ("bob-researcher", Role.RESEARCHER),
        ("amy-annotator", Role.ANNOTATOR),
        ("cat-annotator", Role.ANNOTATOR),
    ]


def test_a_role_the_choices_do_not_know_comes_after_every_known_one(labs: tuple[Team, Team]) -> None:
    lab, _ = labs
    odd = _in(lab, "aaa-odd", Role.OWNER)
    Membership.objects.filter(pk=odd.pk).update(role="visitor")
    _in(lab, "zzz-annotator", Role.ANNOTATOR)
    _in(lab, "mmm-owner", Role.OWNER)

    assert [m.user.username for m in members(lab)] == ["mmm-owner", "zzz-annotator", "aaa-odd"]
    assert [m.role_rank for m in members(lab)] == [0, 2, len(Role.values)]  # type: ignore[attr-defined]


def test_the_members_page_reads_the_accounts_with_the_memberships(
    labs: tuple[Team, Team], django_assert_num_queries: Any
) -> None:
    lab, _ = labs
    _in(lab, "one", Role.OWNER)
    _in(lab, "two", Role.RESEARCHER)
    with django_assert_num_queries(1):
        assert [m.user.username for m in members(lab)] == ["one", "two"]


def test_a_users_teams_come_by_name_with_their_role_there(labs: tuple[Team, Team]) -> None:
    lab, other = labs
    user = _user("both")
    Membership.objects.create(team=lab, user=user, role=Role.ANNOTATOR)
    Membership.objects.create(team=other, user=user, role=Role.RESEARCHER)
    _in(lab, "someone-else", Role.OWNER)

    assert teams_of(user) == [(other, Role.RESEARCHER), (lab, Role.ANNOTATOR)]
    assert teams_of(_user("nowhere")) == []


def test_a_users_teams_are_read_with_their_memberships(labs: tuple[Team, Team], django_assert_num_queries: Any) -> None:
    lab, other = labs
    user = _user("reader")
    Membership.objects.create(team=lab, user=user, role=Role.OWNER)
    Membership.objects.create(team=other, user=user, role=Role.OWNER)
    with django_assert_num_queries(1):
        assert [team.name for team, _ in teams_of(user)] == ["Alpha lab", "Zebra lab"]


def test_a_superuser_has_every_team_by_name_as_owner(labs: tuple[Team, Team]) -> None:
    lab, other = labs
    root = _user("root", superuser=True)
    Membership.objects.create(team=lab, user=root, role=Role.ANNOTATOR)
    everything = sorted(Team.objects.all(), key=lambda team: team.name)

    assert teams_of(root) == [(team, Role.OWNER) for team in everything]
    listed = [team for team, _ in teams_of(root)]
    assert listed.index(other) < listed.index(lab)


def test_a_team_is_found_by_its_exact_slug_only(labs: tuple[Team, Team]) -> None:
    lab, other = labs
    assert team_named("a-lab") == lab
    assert team_named("z-lab") == other
    assert team_named("a") is None
    assert team_named("Zebra lab") is None


def test_a_membership_is_found_only_in_its_own_team(labs: tuple[Team, Team], django_assert_num_queries: Any) -> None:
    lab, other = labs
    here = _in(lab, "here", Role.RESEARCHER)
    there = _in(other, "there", Role.RESEARCHER)

    with django_assert_num_queries(1):
        found = membership_in(lab, here.pk)
        assert found is not None and found.user.username == "here"
    assert membership_in(lab, there.pk) is None
    assert membership_in(other, here.pk) is None
    assert membership_in(lab, here.pk + there.pk + 1000) is None


def test_joining_without_a_word_puts_a_researcher_in_the_default_team(db: None) -> None:
    user = _user("newcomer")

    membership = join(user)

    assert (membership.team.slug, membership.role) == (DEFAULT_TEAM_SLUG, Role.RESEARCHER)
    assert list(Membership.objects.filter(user=user).values_list("team__slug", "role")) == [
        (DEFAULT_TEAM_SLUG, Role.RESEARCHER)
    ]


def test_joining_a_team_in_a_role_and_again_in_another_changes_the_role(labs: tuple[Team, Team]) -> None:
    lab, other = labs
    user = _user("mover")

    first = join(user, lab, Role.ANNOTATOR)
    assert (first.team, first.role) == (lab, Role.ANNOTATOR)
    again = join(user, lab, Role.OWNER)

    assert again.pk == first.pk and again.role == Role.OWNER
    assert Membership.objects.get(pk=first.pk).role == Role.OWNER
    assert Membership.objects.filter(user=user).count() == 1
    assert not Membership.objects.filter(team=other).exists()
    assert not Membership.objects.filter(team=default_team()).exists()


def test_joining_again_in_the_same_role_keeps_the_membership(labs: tuple[Team, Team]) -> None:
    lab, _ = labs
    user = _user("stayer")
    first = join(user, lab, Role.OWNER)

    again = join(user, lab, Role.OWNER)

    assert (again.pk, again.role) == (first.pk, Role.OWNER)
    assert Membership.objects.get(pk=first.pk).role == Role.OWNER


def test_joining_again_without_a_role_makes_an_owner_a_researcher(labs: tuple[Team, Team]) -> None:
    lab, _ = labs
    user = _user("demoted")
    join(user, lab, Role.OWNER)

    assert join(user, lab).role == Role.RESEARCHER
    assert Membership.objects.get(team=lab, user=user).role == Role.RESEARCHER


def _last_owner(lab: Team, name: str = "only-owner") -> Membership:
    owner = _in(lab, name, Role.OWNER)
    _in(lab, f"{name}-helper", Role.RESEARCHER)
    return owner


@pytest.mark.parametrize(
    ("new_role", "said"),
    [(Role.RESEARCHER, "made researcher"), (Role.ANNOTATOR, "made annotator"), (None, "removed")],
)
def test_the_last_owner_can_be_neither_demoted_nor_removed(
    labs: tuple[Team, Team], new_role: str | None, said: str
) -> None:
    lab, other = labs
    owner = _last_owner(lab)
    _in(other, "owner-elsewhere", Role.OWNER)  # another team's owner is no fellow owner

    with pytest.raises(LastOwnerError) as refused:
        keep_an_owner(owner, new_role)

    assert str(refused.value) == (
        f"only-owner is the team's last owner and cannot be {said}: make another member owner first."
    )
    assert isinstance(refused.value, ValueError)


@pytest.mark.parametrize("new_role", [Role.RESEARCHER, Role.ANNOTATOR, None])
def test_an_owner_with_a_fellow_owner_may_go(labs: tuple[Team, Team], new_role: str | None) -> None:
    lab, _ = labs
    owner = _last_owner(lab)
    _in(lab, "fellow", Role.OWNER)

    keep_an_owner(owner, new_role)  # no LastOwnerError


def test_the_last_owner_may_stay_owner_and_others_may_change_freely(labs: tuple[Team, Team]) -> None:
    lab, _ = labs
    owner = _last_owner(lab)
    researcher = Membership.objects.get(team=lab, user__username="only-owner-helper")

    keep_an_owner(owner, Role.OWNER)  # no LastOwnerError
    for new_role in (Role.OWNER, Role.ANNOTATOR, None):
        keep_an_owner(researcher, new_role)


def test_locking_a_team_returns_its_row_and_refuses_an_unknown_one(labs: tuple[Team, Team]) -> None:
    lab, other = labs
    with transaction.atomic():
        assert lock_team(lab.pk) == lab
        assert lock_team(other.pk).name == "Alpha lab"
        with pytest.raises(Team.DoesNotExist):
            lock_team(lab.pk + other.pk + 1000)


@pytest.mark.django_db(transaction=True)
def test_a_locked_team_cannot_be_locked_by_another_transaction_until_the_first_ends() -> None:
    lab = Team.objects.create(slug="locked-lab", name="Locked lab")
    seen: list[str] = []

    def try_to_lock() -> None:
        try:
            with transaction.atomic():
                Team.objects.select_for_update(nowait=True).get(pk=lab.pk)
            seen.append("locked")
        except DatabaseError:
            seen.append("refused")
        finally:
            connection.close()

    with transaction.atomic():
        lock_team(lab.pk)
        during = threading.Thread(target=try_to_lock)
        during.start()
        during.join()
    after = threading.Thread(target=try_to_lock)
    after.start()
    after.join()

    assert seen == ["refused", "locked"]
