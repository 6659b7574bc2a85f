"""A second lab in a browser (issue 73, defect 4): the operator's `create_team` makes the lab and
its owner; the owner, signed in, goes from the dashboard's nav to the team's members, invites a
new member and passes on the one-time link; the member sets a password there, signs in and sees
the team's pages (its study), and nothing of the first lab's."""

import re

import pytest
from django.core.management import call_command

from crowd.models import Study, TaskKind
from teams.models import Membership, Role, Team
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _sign_in(page, base, username, password, then):
    page.goto(f"{base}/accounts/login/?next={then}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf".*{re.escape(then)}$"))


def test_an_owner_invites_a_member_who_signs_in_and_sees_the_teams_pages(live_server, page, django_user_model):
    first_lab = factories.dataset("first-lab-data")
    Study.objects.create(
        slug="first-lab-study",
        name="First lab's study",
        dataset=first_lab,
        task_kind=TaskKind.WRITING,
        completion_code="F",
    )
    call_command("create_team", "harbour-lab", "--name", "Harbour lab", "--owner", "grace", "--create-owner")
    grace = django_user_model.objects.get(username="grace")
    grace.set_password("owner-pass-123")
    grace.save()
    team = Team.objects.get(slug="harbour-lab")
    dataset = factories.dataset("harbour-data", team=team)
    Study.objects.create(
        slug="harbour-study",
        name="Harbour study",
        dataset=dataset,
        team=team,
        task_kind=TaskKind.WRITING,
        completion_code="H",
    )

    _sign_in(page, live_server.url, "grace", "owner-pass-123", "/dashboard/studies/")
    page.click("#nav-team")
    page.click("#members-harbour-lab")
    page.wait_for_url(re.compile(r".*/dashboard/team/harbour-lab/$"))
    page.fill("#invite-username", "linnea")
    page.select_option("#invite-role", Role.RESEARCHER)
    page.click("#invite-submit")
    link = page.input_value("#set-password-link")
    assert link.startswith(live_server.url + "/accounts/reset/")
    assert page.locator("#member-linnea").count() == 1
    assert Membership.objects.get(team=team, user__username="linnea").role == Role.RESEARCHER

    page.context.clear_cookies()  # the owner passes the link on; the member opens it in their browser
    page.goto(link)
    page.fill("#id_new_password1", "member-pass-456")
    page.fill("#id_new_password2", "member-pass-456")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/accounts/reset/done/$"))

    _sign_in(page, live_server.url, "linnea", "member-pass-456", "/dashboard/team/")
    teams = page.locator("#your-teams").inner_text()
    assert "Harbour lab" in teams and "researcher" in teams
    page.goto(f"{live_server.url}/dashboard/studies/")
    studies = page.content()
    assert "harbour-study" in studies and "first-lab-study" not in studies
    assert page.goto(f"{live_server.url}/dashboard/team/harbour-lab/").status == 403
