"""A second lab starts from the site (docs/teams.md, "A second lab"): the
operator's `create_team` makes the team and its first owner; the owner invites members (a new
account with a one-time set-password link, or an existing one), sets their roles and removes them
from the dashboard, never leaving the team without an owner; each change is an audit entry. Only
the team's owners reach its member page: another team's owner gets the unknown team's 404, a
researcher or annotator of the team 403."""

import re

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from audit.models import AuditEntry
from base.permissions import is_researcher
from teams.models import Membership, Role, Team
from tests.two_teams import member

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(django_user_model):
    team = Team.objects.create(slug="lab-a", name="Lab A")
    other = Team.objects.create(slug="lab-b", name="Lab B")
    return {
        "team": team,
        "other": other,
        "owner": member(django_user_model, "owner-a", team, Role.OWNER),
        "researcher": member(django_user_model, "researcher-a", team, Role.RESEARCHER),
        "annotator": member(django_user_model, "annotator-a", team, Role.ANNOTATOR),
        "other_owner": member(django_user_model, "owner-b", other, Role.OWNER),
    }


def _url(name, *args):
    return reverse(f"dashboard:{name}", args=["lab-a", *args])


def _membership(username, team="lab-a"):
    return Membership.objects.get(team__slug=team, user__username=username)


def _entries(action):
    return list(AuditEntry.objects.filter(action=action).order_by("pk"))


def test_an_owner_invites_a_new_account_whose_link_sets_its_password_once(client, lab):
    client.force_login(lab["owner"])
    response = client.post(_url("team_invite"), {"username": "newcomer", "role": Role.ANNOTATOR, "new_account": "on"})
    assert response.status_code == 200
    shown = re.search(r'id="set-password-link"[^>]*value="([^"]+)"', response.content.decode())
    assert shown is not None
    link = shown.group(1)
    newcomer = User.objects.get(username="newcomer")
    assert _membership("newcomer").role == Role.ANNOTATOR
    assert is_researcher(newcomer) and not newcomer.has_usable_password()
    (entry,) = _entries("team.member_added")
    assert (entry.actor, entry.team_id, entry.after) == (
        "owner-a",
        lab["team"].pk,
        {"user": "newcomer", "role": Role.ANNOTATOR, "account": "created"},
    )

    client.logout()
    form_page = client.get(link, follow=True)
    assert b'name="new_password1"' in form_page.content
    set_url = form_page.redirect_chain[-1][0]
    done = client.post(set_url, {"new_password1": "a-long-new-pass-7", "new_password2": "a-long-new-pass-7"})
    assert done.status_code == 302
    assert client.login(username="newcomer", password="a-long-new-pass-7")
    assert client.get(reverse("dashboard:teams")).status_code == 200
    client.logout()
    again = client.get(link, follow=True)
    assert b'name="new_password1"' not in again.content  # the link was good once


def test_an_owner_adds_an_existing_account_of_another_team(client, lab):
    client.force_login(lab["owner"])
    response = client.post(_url("team_invite"), {"username": "owner-b", "role": Role.RESEARCHER})
    assert response.status_code == 302
    assert _membership("owner-b").role == Role.RESEARCHER
    assert _membership("owner-b", team="lab-b").role == Role.OWNER
    assert b"set-password-link" not in client.get(response["Location"]).content
    assert _entries("team.member_added")[0].after["account"] == "existing"


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"username": "nobody-yet", "role": Role.RESEARCHER}, "No account &#x27;nobody-yet&#x27;"),
        ({"username": "owner-b", "role": Role.RESEARCHER, "new_account": "on"}, "exists already"),
        ({"username": "researcher-a", "role": Role.OWNER}, "is in the team already (researcher)"),
        ({"username": "participant-1", "role": Role.RESEARCHER}, "a participant&#x27;s account"),
        ({"username": "two words", "role": Role.RESEARCHER, "new_account": "on"}, "cannot be a username"),
        ({"username": "fine-name", "role": "boss", "new_account": "on"}, "Choose a role"),
        ({"username": "", "role": Role.RESEARCHER, "new_account": "on"}, "Give the member&#x27;s username"),
    ],
)
def test_a_refused_invitation_says_why_keeps_what_was_typed_and_changes_nothing(
    client, lab, make_worker, form, message
):
    make_worker(username="participant-1")
    accounts, memberships = User.objects.count(), Membership.objects.count()
    client.force_login(lab["owner"])
    response = client.post(_url("team_invite"), form)
    text = response.content.decode()
    assert response.status_code == 400
    assert message in text and "Nobody was added." in text
    assert f'value="{form["username"]}"' in text
    assert (User.objects.count(), Membership.objects.count()) == (accounts, memberships)
    assert _membership("researcher-a").role == Role.RESEARCHER
    assert not _entries("team.member_added")


def test_an_owner_sets_roles_and_removes_members_each_change_audited(client, lab):
    client.force_login(lab["owner"])
    researcher = _membership("researcher-a")
    client.post(_url("team_member_role", researcher.pk), {"role": Role.OWNER})
    assert _membership("researcher-a").role == Role.OWNER
    (changed,) = _entries("team.member_role")
    assert (changed.actor, changed.before, changed.after) == ("owner-a", {"role": "researcher"}, {"role": "owner"})

    client.post(_url("team_member_remove", _membership("annotator-a").pk))
    assert not Membership.objects.filter(user__username="annotator-a").exists()
    assert User.objects.filter(username="annotator-a").exists()  # the account stays
    (removed,) = _entries("team.member_removed")
    assert (removed.actor, removed.team_id, removed.before) == (
        "owner-a",
        lab["team"].pk,
        {"user": "annotator-a", "role": "annotator"},
    )


def test_the_last_owner_is_neither_demoted_nor_removed(client, lab):
    client.force_login(lab["owner"])
    owner = _membership("owner-a")
    demoted = client.post(_url("team_member_role", owner.pk), {"role": Role.RESEARCHER}, follow=True)
    assert "last owner" in demoted.content.decode() and "Nothing was changed." in demoted.content.decode()
    client.post(_url("team_member_remove", owner.pk))
    assert _membership("owner-a").role == Role.OWNER
    assert not _entries("team.member_role") and not _entries("team.member_removed")

    # With a second owner, the first may leave; the page is then no longer theirs.
    client.post(_url("team_member_role", _membership("researcher-a").pk), {"role": Role.OWNER})
    left = client.post(_url("team_member_remove", owner.pk))
    assert left["Location"] == reverse("dashboard:teams")
    assert not Membership.objects.filter(team=lab["team"], user=lab["owner"]).exists()
    assert client.get(_url("team_members")).status_code == 404


def test_only_the_teams_owners_reach_its_member_page(client, lab):
    client.force_login(lab["other_owner"])
    foreign = client.get(_url("team_members"))
    unknown = client.get(reverse("dashboard:team_members", args=["no-such-lab"]))
    assert foreign.status_code == unknown.status_code == 404
    token = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"')
    assert token.sub(b"", foreign.content.replace(b"lab-a", b"X")) == token.sub(
        b"", unknown.content.replace(b"no-such-lab", b"X")
    )
    assert client.post(_url("team_invite"), {"username": "owner-b", "role": Role.OWNER}).status_code == 404
    for role in ("researcher", "annotator"):
        client.force_login(lab[role])
        assert client.get(_url("team_members")).status_code == 403
        invite = client.post(_url("team_invite"), {"username": "sneaky", "role": Role.OWNER, "new_account": "on"})
        promote = client.post(_url("team_member_role", _membership(f"{role}-a").pk), {"role": Role.OWNER})
        assert invite.status_code == promote.status_code == 403
    assert not User.objects.filter(username="sneaky").exists()
    assert _membership("researcher-a").role == Role.RESEARCHER
    assert not Membership.objects.filter(team=lab["team"], user=lab["other_owner"]).exists()


def test_a_membership_of_another_team_is_unknown_on_this_teams_urls(client, lab):
    """An owner of lab A naming lab B's membership id under lab A's URL reaches nothing of lab B."""
    client.force_login(lab["owner"])
    theirs = _membership("owner-b", team="lab-b")
    assert client.post(_url("team_member_remove", theirs.pk)).status_code == 404
    assert client.post(_url("team_member_role", theirs.pk), {"role": Role.ANNOTATOR}).status_code == 404
    assert _membership("owner-b", team="lab-b").role == Role.OWNER


def test_the_team_page_is_in_the_nav_and_links_owners_to_their_members(client, lab):
    client.force_login(lab["owner"])
    nav = client.get(reverse("dashboard:collection")).content.decode()
    assert f'href="{reverse("dashboard:teams")}"' in nav
    mine = client.get(reverse("dashboard:teams")).content.decode()
    assert "Lab A" in mine and _url("team_members") in mine and "Lab B" not in mine
    client.force_login(lab["researcher"])
    theirs = client.get(reverse("dashboard:teams")).content.decode()
    assert "Lab A" in theirs and _url("team_members") not in theirs


def test_create_team_makes_a_team_and_its_first_owner(capsys):
    call_command("create_team", "harbour-lab", "--name", "Harbour lab", "--owner", "grace", "--create-owner")
    team = Team.objects.get(slug="harbour-lab")
    grace = User.objects.get(username="grace")
    assert (team.name, _membership("grace", team="harbour-lab").role) == ("Harbour lab", Role.OWNER)
    assert is_researcher(grace) and not grace.is_superuser
    assert [entry.action for entry in AuditEntry.objects.filter(team_id=team.pk).order_by("pk")] == [
        "team.created",
        "team.member_added",
    ]
    assert "/accounts/reset/" in capsys.readouterr().out


def test_create_team_refuses_and_leaves_nothing_behind(django_user_model):
    Team.objects.create(slug="taken", name="Taken")
    django_user_model.objects.create_user("ada")
    with pytest.raises(CommandError, match="exists already"):
        call_command("create_team", "taken", "--name", "Again", "--owner", "ada")
    with pytest.raises(CommandError, match="No account 'nobody'"):
        call_command("create_team", "fresh-lab", "--name", "Fresh", "--owner", "nobody")
    with pytest.raises(CommandError, match="may not contain"):
        call_command("create_team", "a--b", "--name", "Dashes", "--owner", "ada")
    assert not Team.objects.filter(slug__in=["fresh-lab", "a--b"]).exists()
    assert not Membership.objects.filter(user__username="ada").exists()
    assert not AuditEntry.objects.filter(action__startswith="team.").exists()


def test_every_door_keeps_the_last_owner(client, lab, django_user_model):
    """The admin's membership inline and `grant_researcher` keep the rule the Team page keeps."""
    with pytest.raises(CommandError, match="last owner"):
        call_command("grant_researcher", "owner-a", "--team", "lab-a", "--role", Role.RESEARCHER)
    root = django_user_model.objects.create_user("root", password="pw", is_staff=True, is_superuser=True)
    client.force_login(root)
    rows = list(Membership.objects.filter(team=lab["team"]).order_by("pk"))
    form = {
        "slug": "lab-a",
        "name": "Lab A",
        "memberships-TOTAL_FORMS": str(len(rows)),
        "memberships-INITIAL_FORMS": str(len(rows)),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for number, row in enumerate(rows):
        form |= {
            f"memberships-{number}-id": str(row.pk),
            f"memberships-{number}-team": str(lab["team"].pk),
            f"memberships-{number}-user": str(row.user_id),
            f"memberships-{number}-role": row.role,
        }
    owner_row = next(number for number, row in enumerate(rows) if row.role == Role.OWNER)
    response = client.post(
        reverse("admin:teams_team_change", args=[lab["team"].pk]), form | {f"memberships-{owner_row}-DELETE": "on"}
    )
    assert response.status_code == 200 and "A team keeps an owner" in response.content.decode()
    assert _membership("owner-a").role == Role.OWNER
    demoted = client.post(
        reverse("admin:teams_team_change", args=[lab["team"].pk]),
        form | {f"memberships-{owner_row}-role": Role.ANNOTATOR},
    )
    assert demoted.status_code == 200 and _membership("owner-a").role == Role.OWNER
