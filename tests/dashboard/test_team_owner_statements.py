"""A team's owner (no superuser) reads a study's page and each adjudication queue in as many
statements as a superuser, cold and warm: their permissions and their role in each team come with
their account's row (`teams.backends.MemberBackend`), read once per request, and the queues ask
nothing of the datasets the page has not read already. The wall stands: another team's study is
unknown to them (404), and a weaker role is refused what it may not do (403), from the same
remembered roles.

The crowd is `cost_factories.build` (two studies, five workers, six pairs, claims, bonuses) in the
default team, with a catch trial served by its validation study."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from base.permissions import ensure_researcher_group
from crowd.models import Study
from quality.models import ReferenceLabel
from teams.models import Membership, Role, Team, default_team
from teams.services import join
from validation import adjudication

from . import cost_factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowd():
    _ds, writing, validation, pairs = cost_factories.build("owner-statements", prefix="o-")
    ReferenceLabel.objects.create(pair=pairs["A"], label=cost_factories.E, is_catch_trial=True)
    Study.objects.filter(pk=validation.pk).update(catch_trial_share=0.2, is_active=True)
    assert writing.team_id == validation.team_id == default_team().pk
    return writing, validation


def team_member(django_user_model, name, role, team=None):
    """A staff researcher (the researcher group), no superuser, in `team` (the default) as `role`."""
    user = django_user_model.objects.create_user(username=name, password="x", is_staff=True)
    user.groups.add(ensure_researcher_group())
    join(user, team or default_team(), role)
    return user


def pages(writing, validation):
    yield "validation study", reverse("dashboard:study", args=[validation.slug])
    yield "writing study", reverse("dashboard:study", args=[writing.slug])
    for queue in adjudication.FILTERS:
        yield f"{queue.slug} queue", f"{reverse('dashboard:adjudication')}?queue={queue.slug}"


def counts(client, writing, validation):
    """Each page's statements cold (the figure cache emptied) and warm (asked again at once)."""
    found = {}
    for name, url in pages(writing, validation):
        cache.clear()
        with CaptureQueriesContext(connection) as cold:
            assert client.get(url).status_code == 200, url
        with CaptureQueriesContext(connection) as warm:
            assert client.get(url).status_code == 200, url
        found[name] = (len(cold), len(warm))
    return found


def test_a_team_owner_reads_as_many_statements_as_a_superuser(crowd, researcher, django_user_model, settings):
    writing, validation = crowd
    settings.DASHBOARD_CACHE_SECONDS = 600
    superuser, owner = Client(), Client()
    superuser.force_login(researcher)
    owner.force_login(team_member(django_user_model, "owner", Role.OWNER))
    for client in (superuser, owner):  # the maintained worker-flag rows computed by a first load
        for _, url in pages(writing, validation):
            client.get(url)

    assert counts(owner, writing, validation) == counts(superuser, writing, validation)


def test_the_account_is_read_with_its_permissions_and_roles_once_per_request(crowd, django_user_model):
    _writing, validation = crowd
    client = Client()
    client.force_login(team_member(django_user_model, "researcher-of-team", Role.RESEARCHER))
    for url in (reverse("dashboard:study", args=[validation.slug]), reverse("dashboard:adjudication")):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        statements = [query["sql"].replace('"', "") for query in captured.captured_queries]
        assert sum("teams_membership" in sql for sql in statements) == 1, url
        assert sum("auth_permission" in sql for sql in statements) == 1, url


def test_the_remembered_roles_keep_the_wall(crowd, django_user_model):
    _writing, validation = crowd
    elsewhere = Team.objects.create(slug="elsewhere", name="Elsewhere")
    outsider, annotator = Client(), Client()
    outsider.force_login(team_member(django_user_model, "outsider", Role.OWNER, team=elsewhere))
    annotator.force_login(team_member(django_user_model, "annotator", Role.ANNOTATOR))
    page = reverse("dashboard:study", args=[validation.slug])
    settings_page = reverse("dashboard:study_settings", args=[validation.slug])
    sessions = reverse("dashboard:study_sessions_csv", args=[validation.slug])

    assert outsider.get(page).status_code == 404  # another team's study answers as an unknown one
    assert outsider.get(sessions).status_code == 404
    assert annotator.get(page).status_code == 200
    assert annotator.get(settings_page).status_code == 403  # the study is theirs, the action not
    assert annotator.get(sessions).status_code == 403
    assert annotator.get(reverse("dashboard:adjudication")).status_code == 200

    Membership.objects.filter(user__username="annotator").update(role=Role.RESEARCHER)
    assert annotator.get(sessions).status_code == 200  # the next request reads the new role
    Membership.objects.filter(user__username="annotator").delete()
    assert annotator.get(page).status_code == 404


def test_a_staff_account_without_the_research_permission_is_refused(crowd, django_user_model):
    _writing, validation = crowd
    staff = django_user_model.objects.create_user(username="staff", password="x", is_staff=True)
    join(staff, default_team(), Role.OWNER)
    client = Client()
    client.force_login(staff)
    assert client.get(reverse("dashboard:study", args=[validation.slug])).status_code == 403
