"""A researcher previews only their own teams' studies (crowd.selectors.previewable_study): a
preview serves the study's premises and pairs, which are its team's. Another team's study answers
exactly as an unknown slug, for every kind of task (one door serves them all), and a preview under
way ends when its study is no longer of the user's teams."""

import re

import pytest
from django.urls import reverse

from crowd.models import StudySession, TaskKind
from crowd.preview import PREVIEW_KEY
from teams.models import Membership
from tests.two_teams import two_teams

pytestmark = pytest.mark.django_db


@pytest.fixture
def labs(django_user_model, make_worker):
    return two_teams(django_user_model, make_worker)


def _without_names(response, slug):
    page = response.content.replace(slug.encode(), b"SLUG")
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]*"', b"", page)


@pytest.mark.parametrize("kind", [TaskKind.WRITING, TaskKind.VALIDATION, TaskKind.ADVERSARIAL])
def test_another_teams_owner_cannot_preview_a_study_and_learns_nothing(client, labs, kind):
    study = labs.studies_a[kind]
    client.force_login(labs.owner_b)
    url = reverse("study_preview_start", args=[study.slug])
    unknown_url = reverse("study_preview_start", args=["no-such-study"])

    asked, unknown = client.get(url), client.get(unknown_url)
    assert asked.status_code == unknown.status_code == 404
    assert _without_names(asked, study.slug) == _without_names(unknown, "no-such-study")
    assert study.name.encode() not in asked.content

    started = client.post(url)
    assert started.status_code == 404
    assert not StudySession.objects.filter(study=study).exists()
    assert PREVIEW_KEY not in client.session


@pytest.mark.parametrize("kind", [TaskKind.WRITING, TaskKind.VALIDATION])
def test_the_owning_teams_owner_previews_it(client, labs, kind):
    study = labs.studies_a[kind]
    client.force_login(labs.owner_a)
    url = reverse("study_preview_start", args=[study.slug])
    assert client.get(url).status_code == 200
    assert client.post(url).status_code == 302
    assert StudySession.objects.filter(study=study, is_preview=True, worker__user=labs.owner_a).exists()


def test_a_preview_under_way_ends_when_the_user_leaves_the_team(client, labs):
    study = labs.studies_a[TaskKind.WRITING]
    client.force_login(labs.owner_a)
    client.post(reverse("study_preview_start", args=[study.slug]))
    assert b"Lab A premise" in client.get(reverse("writing_next"), follow=True).content

    Membership.objects.filter(user=labs.owner_a, team=labs.team_a).delete()
    after = client.get(reverse("writing_next"))
    assert after.status_code == 404
    assert b"Lab A premise" not in after.content
    assert PREVIEW_KEY not in client.session
