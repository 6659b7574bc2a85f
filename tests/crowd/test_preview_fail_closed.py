"""A researcher's preview is fail-closed (crowd.preview): every request of a previewing browser
that could write is rolled back, whatever app serves it, a task app that nothing registers or lists
included (tests/crowd/unlisted_task_app.py, mounted here beside the site's URLs), an endpoint of an
app the preview once did not know (the qualification test), an API-style JSON endpoint and the
admin. Only leaving the preview, or signing out, commits.
"""

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.contrib.sessions.models import Session
from django.urls import reverse

from collection.models import WritingClaim
from corpus.models import Pair, Premise
from crowd.models import ClaimStatus, StudyAccess, StudySession
from crowd.preview import PREVIEW_NOT_SAVED, PREVIEW_NOTHING_SAVED
from quality.models import QualificationAttempt
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.quality.qualification_helpers import answers, qualified_study

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.crowd.unlisted_task_app")]

BANNER = "nothing you do here is saved"
# Rows a preview leaves by design (tests/crowd/test_preview.py says why).
LEFT_BY_DESIGN = {"crowd.StudySession", "corpus.Worker", "sessions.Session"}


def rows():
    return {
        model._meta.label: model._default_manager.count()
        for model in apps.get_models()
        if model._meta.label not in LEFT_BY_DESIGN
    }


@pytest.fixture
def study():
    dataset, genre = writing_setup(slug="unlisted")
    add_premises(dataset, genre, 3)
    return make_study(dataset, slug="unlisted-study", access=StudyAccess.OPEN)


@pytest.fixture
def previewing(client, make_researcher, study):
    client.force_login(make_researcher("previewer"))
    assert client.post(reverse("study_preview_start", args=[study.slug])).status_code == 302
    return client


def test_the_unlisted_app_saves_outside_a_preview(client, make_researcher, study):
    """The control: the same pages, in a browser that is not previewing, do save."""
    client.force_login(make_researcher("previewer"))
    token = client.get(reverse("unlisted_next", args=["unlisted"])).content.decode()
    assert client.post(reverse("unlisted_submit", args=[token])).status_code == 302
    assert Pair.objects.filter(premise__dataset__slug="unlisted").count() == 3
    claim = WritingClaim.objects.get(token=token)
    assert claim.status == ClaimStatus.SUBMITTED
    assert client.post(reverse("unlisted_record", args=[claim.premise_id])).json() == {"recorded": True}
    assert Premise.objects.get(pk=claim.premise_id).writings_done == 2


def test_a_task_app_nothing_lists_saves_nothing_in_a_preview(previewing):
    before = rows()
    written = list(Premise.objects.order_by("pk").values_list("pk", "writings_done"))

    # Its GET claims, as a task page does: the claim holds no place between the preview's requests.
    token = previewing.get(reverse("unlisted_next", args=["unlisted"])).content.decode()
    claim = WritingClaim.objects.get(token=token)
    assert claim.status == ClaimStatus.RELEASED and claim.study_session.is_preview
    # Its submit runs (the claim is opened for it) and is rolled back whole; the page it sends the
    # browser on to says so.
    page = previewing.post(reverse("unlisted_submit", args=[token]), follow=True).content.decode()
    assert BANNER in page and PREVIEW_NOT_SAVED in page
    assert not Pair.objects.filter(premise__dataset__slug="unlisted").exists()
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.RELEASED
    # Its JSON record endpoint answers as ever, by any writing method, and records nothing.
    record = reverse("unlisted_record", args=[claim.premise_id])
    assert previewing.post(record).json() == {"recorded": True}
    assert previewing.put(record).json() == {"recorded": True}
    assert previewing.delete(record).json() == {"recorded": True}
    assert previewing.patch(record, "{}", content_type="application/json").json() == {"recorded": True}
    assert list(Premise.objects.order_by("pk").values_list("pk", "writings_done")) == written

    previewing.post(reverse("preview_end"))
    assert rows() == before
    assert not WritingClaim.objects.exists()


def test_the_qualification_test_of_a_previewed_study_saves_no_try(client, make_researcher):
    """An existing page the preview once did not list (quality's qualification test): a passing
    try in a preview is checked and scored as a worker's, and not kept."""
    study, test = qualified_study()
    client.force_login(make_researcher("previewer"))
    client.post(reverse("study_preview_start", args=[study.slug]))
    url = reverse("qualification", args=[study.slug])
    assert BANNER in client.get(url).content.decode()
    chosen = {f"label-{pair}": label for pair, label in answers(test, correct=4).items()}
    page = client.post(url, chosen, follow=True).content.decode()
    assert "You passed the qualification test" in page and PREVIEW_NOTHING_SAVED.replace("'", "&#x27;") in page
    assert not QualificationAttempt.objects.exists()


def test_the_admin_in_a_previewing_browser_saves_nothing_until_the_preview_ends(previewing):
    group = Group.objects.create(name="to delete")
    delete = reverse("admin:auth_group_delete", args=[group.pk])
    page = previewing.post(delete, {"post": "yes"}, follow=True).content.decode()
    assert PREVIEW_NOTHING_SAVED.replace("'", "&#x27;") in page
    assert Group.objects.filter(pk=group.pk).exists()
    previewing.post(reverse("preview_end"))
    previewing.post(delete, {"post": "yes"})
    assert not Group.objects.filter(pk=group.pk).exists()


def test_signing_out_commits_and_ends_the_preview(previewing):
    session_key = previewing.session.session_key
    assert previewing.post(reverse("logout")).status_code == 302
    assert not Session.objects.filter(session_key=session_key).exists()
    assert BANNER not in previewing.get(reverse("home"), follow=True).content.decode()
    # The preview's session stays, never counting a task (its claims go when the next preview starts).
    assert {session.tasks_done for session in StudySession.objects.filter(is_preview=True)} == {0}
