"""The role checks' edges that mutmut found unguarded (teams/access.py): what each role may do (a
researcher moves no money, an annotator exports nothing), that an inactive or anonymous user and a
member of no team reach no team's rows (the audit log's export included), what a superuser
reaches, the team a new object goes to, and 404 for a foreign row against 403 for a weaker role."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from crowd.models import Study
from teams import access
from teams.models import Membership, Role, Team, default_team_id
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def teams():
    # Named so that the teams' order by name is not their order by id.
    return Team.objects.create(slug="lab-b", name="B lab"), Team.objects.create(slug="lab-a", name="A lab")


def member(django_user_model, name, *roles):
    """A user with `roles` (team, role) pairs."""
    user = django_user_model.objects.create_user(username=name)
    for team, role in roles:
        Membership.objects.create(team=team, user=user, role=role)
    return user


def study_of(team, slug):
    dataset = make_dataset(slug)
    dataset.team = team
    dataset.save(update_fields=["team"])
    return Study.objects.create(slug=slug, name=slug, dataset=dataset, team=team)


def test_each_role_may_do_only_its_actions():
    assert {a for a in access.ACTIONS if access.may_role(Role.OWNER, a)} == set(access.ACTIONS)
    assert {a for a in access.ACTIONS if access.may_role(Role.RESEARCHER, a)} == {
        access.VIEW,
        access.LABEL,
        access.RESEARCH,
        access.EXPORT,
    }
    assert {a for a in access.ACTIONS if access.may_role(Role.ANNOTATOR, a)} == {access.VIEW, access.LABEL}
    assert not access.may_role("visitor", access.VIEW)


def test_a_researcher_moves_no_money_and_an_annotator_exports_nothing(teams, django_user_model):
    lab_b, lab_a = teams
    researcher = member(django_user_model, "r", (lab_b, Role.RESEARCHER), (lab_a, Role.OWNER))
    annotator = member(django_user_model, "a", (lab_b, Role.ANNOTATOR))

    assert access.team_ids(researcher, access.MONEY) == {lab_a.pk}
    assert access.team_ids(researcher, access.RESEARCH) == {lab_a.pk, lab_b.pk}
    assert access.team_ids(annotator, access.EXPORT) == set(), "the audit log's export is no annotator's"
    assert access.team_ids(annotator, access.VIEW) == {lab_b.pk}
    assert access.may(researcher, lab_b.pk, access.MONEY) is False
    assert access.may(researcher, lab_a.pk, access.MONEY) is True
    assert access.may(researcher, None, access.VIEW) is False


def test_a_user_in_no_team_an_inactive_one_and_a_visitor_reach_no_team(teams, django_user_model):
    lab_b, _ = teams
    nobody = member(django_user_model, "n")
    gone = member(django_user_model, "g", (lab_b, Role.OWNER))
    gone.is_active = False
    study_of(lab_b, "b-study")

    for user in (nobody, gone, AnonymousUser(), None):
        assert access.team_ids(user, access.VIEW) == set()
        assert access.teams_acted_on(user, access.VIEW) == []
        assert list(access.teams_to_choose(user, access.VIEW)) == []
        assert not access.scoped(Study.objects.all(), user).exists()
        assert access.figure_teams(user) == frozenset()
        assert access.home_team_id(user) is None
    assert access.role_in(AnonymousUser(), lab_b.pk) is None


def test_an_inactive_superuser_is_no_superuser(teams, django_user_model):
    boss = django_user_model.objects.create_superuser(username="boss", password="x")
    assert access.team_ids(boss) is None and access.role_in(boss, None) == Role.OWNER
    boss.is_active = False
    assert access.team_ids(boss) == set()


def test_a_superuser_acts_in_every_team_and_chooses_among_them_by_name(teams, django_user_model):
    lab_b, lab_a = teams
    boss = django_user_model.objects.create_superuser(username="boss", password="x")
    study_of(lab_b, "b-study")

    assert access.teams_acted_on(boss, access.MONEY) == sorted(Team.objects.values_list("pk", flat=True))
    assert list(access.teams_to_choose(boss, access.MONEY))[:2] == [lab_a, lab_b]
    assert access.scoped(Study.objects.all(), boss, access.MONEY).count() == 1
    assert access.figure_teams(boss) is None
    assert access.kept([lab_a, lab_b], boss, attr="pk") == [lab_a, lab_b]


def test_the_teams_to_choose_are_those_of_the_role_by_name_each_once(teams, django_user_model):
    lab_b, lab_a = teams
    owner = member(django_user_model, "o", (lab_b, Role.OWNER), (lab_a, Role.OWNER))
    member(django_user_model, "other", (lab_b, Role.OWNER))
    researcher = member(django_user_model, "r", (lab_b, Role.RESEARCHER), (lab_a, Role.OWNER))

    assert list(access.teams_to_choose(owner, access.MONEY)) == [lab_a, lab_b]
    assert list(access.teams_to_choose(researcher, access.MONEY)) == [lab_a]
    assert list(access.teams_to_choose(researcher, access.RESEARCH)) == [lab_a, lab_b]
    assert access.teams_acted_on(researcher, access.RESEARCH) == sorted([lab_a.pk, lab_b.pk])


def test_rows_are_narrowed_by_the_action_and_the_path_to_their_team(teams, django_user_model):
    lab_b, lab_a = teams
    researcher = member(django_user_model, "r", (lab_b, Role.RESEARCHER), (lab_a, Role.OWNER))
    in_b, in_a = study_of(lab_b, "b-study"), study_of(lab_a, "a-study")

    assert set(access.scoped(Study.objects.all(), researcher)) == {in_a, in_b}
    assert list(access.scoped(Study.objects.all(), researcher, access.MONEY)) == [in_a]
    assert list(access.scoped(Study.objects.all(), researcher, access.MONEY, via="dataset__team")) == [in_a]
    assert access.kept([in_b, in_a], researcher, access.MONEY) == [in_a]
    assert access.kept([in_b, in_a], researcher, access.MONEY, attr="dataset.team_id") == [in_a]
    assert access.in_teams([in_b, in_a], None) == [in_b, in_a]
    assert access.in_teams([in_b, in_a], {lab_b.pk}) == [in_b]


def test_a_new_object_goes_to_the_first_team_the_user_may_act_in(teams, django_user_model):
    lab_b, lab_a = teams
    first, second = sorted([lab_a, lab_b], key=lambda t: t.pk)
    both = member(django_user_model, "r", (second, Role.RESEARCHER), (first, Role.RESEARCHER))
    annotator = member(django_user_model, "a", (first, Role.ANNOTATOR), (second, Role.RESEARCHER))
    boss = django_user_model.objects.create_superuser(username="boss", password="x")
    member_boss = django_user_model.objects.create_superuser(username="boss2", password="x")
    Membership.objects.create(team=second, user=member_boss, role=Role.OWNER)

    assert access.home_team_id(both) == first.pk
    assert access.home_team_id(annotator) == second.pk
    assert access.home_team_id(annotator, access.LABEL) == first.pk
    assert access.home_team_id(boss) == default_team_id()
    assert access.home_team_id(member_boss) == second.pk
    assert access.team_ids_of_member(annotator) == {first.pk, second.pk}


def test_a_foreign_row_is_unknown_and_a_weaker_role_is_refused(teams, django_user_model):
    lab_b, lab_a = teams
    researcher = member(django_user_model, "r", (lab_b, Role.RESEARCHER))
    in_b, in_a = study_of(lab_b, "b-study"), study_of(lab_a, "a-study")

    assert access.get_or_404(Study.objects.all(), researcher, access.RESEARCH, slug="b-study") == in_b
    assert access.get_or_404(Study.objects.all(), researcher, slug="b-study", via="dataset__team") == in_b
    with pytest.raises(Http404, match=r"^Not found\.$"):
        access.get_or_404(Study.objects.all(), researcher, slug="a-study")
    with pytest.raises(PermissionDenied, match=r"^Your role in this team \(researcher\) may not do this \(money\)\.$"):
        access.get_or_404(Study.objects.all(), researcher, access.MONEY, slug="b-study")
    with pytest.raises(Http404, match=r"^No such study\.$"):
        access.checked(in_a, researcher, missing="No such study.")
    with pytest.raises(Http404, match=r"^No such study\.$"):
        access.checked(None, researcher, missing="No such study.")
    assert access.checked(in_b, researcher, access.EXPORT, via="dataset__team") == in_b
    with pytest.raises(Http404, match=r"^Not found\.$"):
        access.require(researcher, lab_a.pk, access.VIEW)


def test_the_team_of_a_row_follows_its_path_and_stops_at_an_empty_key(teams):
    lab_b, _ = teams
    study = study_of(lab_b, "b-study")
    assert access.team_of(study) == lab_b.pk
    assert access.team_of(study, "dataset__team") == lab_b.pk
    assert access.team_of(lab_b, "pk") == lab_b.pk
    assert access.team_of(Team(slug="unsaved"), "pk") is None
    assert access.team_of(Study(slug="loose"), "dataset__team") is None
