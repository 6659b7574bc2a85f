"""A second lab in a browser: the operator's `create_team` makes the lab and
its owner; the owner, signed in, goes from the dashboard's nav to the team's members, invites a
new member and passes on the one-time link; the member sets a password there, signs in and sees
the team's pages (its study), and nothing of the first lab's. Against the site as it is deployed
(gunicorn, the production settings with DEBUG off, collected static files) on the test database."""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from crowd.models import Study, TaskKind
from teams.models import Membership, Role, Team
from tests import factories
from tests.conftest import subprocess_database_url
from tests.production.conftest import Gunicorn, collected_static, gunicorn_server, production_environment

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

__all__ = ["collected_static"]  # the session's collectstatic, a fixture of tests/production


@pytest.fixture(scope="module")
def production_site(collected_static: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gunicorn]:
    folder = tmp_path_factory.mktemp("team-members-site")
    env = production_environment(
        collected_static,
        DATABASE_URL=subprocess_database_url(),
        DATABASE_CONN_MAX_AGE="0",  # the suite flushes the tables between tests
        GUNICORN_WORKERS="1",
    )
    with gunicorn_server(env, folder / "gunicorn.log") as server:
        yield server


@pytest.fixture(autouse=True)
def _real_password_hashing(settings):
    # The server checks passwords with the production hashers; the suite's fast MD5 is not among them.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]


def _sign_in(page, base, username, password, then):
    page.goto(f"{base}/accounts/login/?next={then}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf".*{re.escape(then)}$"))


def test_an_owner_invites_a_member_who_signs_in_and_sees_the_teams_pages(production_site, page, django_user_model):
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

    _sign_in(page, production_site.url, "grace", "owner-pass-123", "/dashboard/studies/")
    page.click("#nav-team")
    page.click("#members-harbour-lab")
    page.wait_for_url(re.compile(r".*/dashboard/team/harbour-lab/$"))
    page.fill("#invite-username", "linnea")
    page.select_option("#invite-role", Role.RESEARCHER)
    page.click("#invite-submit")
    link = page.input_value("#set-password-link")
    assert link.startswith(production_site.url + "/accounts/reset/")
    assert page.locator("#member-linnea").count() == 1
    assert Membership.objects.get(team=team, user__username="linnea").role == Role.RESEARCHER

    page.context.clear_cookies()  # the owner passes the link on; the member opens it in their browser
    page.goto(link)
    page.fill("#id_new_password1", "member-pass-456")
    page.fill("#id_new_password2", "member-pass-456")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/accounts/reset/done/$"))

    _sign_in(page, production_site.url, "linnea", "member-pass-456", "/dashboard/team/")
    teams = page.locator("#your-teams").inner_text()
    assert "Harbour lab" in teams and "researcher" in teams
    page.goto(f"{production_site.url}/dashboard/studies/")
    studies = page.content()
    assert "harbour-study" in studies and "first-lab-study" not in studies
    assert page.goto(f"{production_site.url}/dashboard/team/harbour-lab/").status == 403
