"""A researcher's preview is fail-closed (crowd.preview): every request of a previewing browser
that could write is rolled back, whatever app serves it, a task app that nothing registers or lists
included (tests/crowd/unlisted_task_app.py, mounted here beside the site's URLs), an endpoint of an
app the preview once did not know (the qualification test) and an API-style JSON endpoint. The
researchers' own forms (the admin, the dashboard) are refused instead, never run: a payment on a
market is not rolled back. Only leaving the preview, or signing out, commits.
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
from quality.models import BonusEntry, BonusKind, QualificationAttempt
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.markets.conftest import arrive, connect_prolific, owe_bonuses
from tests.markets.conftest import make_study as market_study
from tests.markets.standin import MarketStandIn
from tests.present import present
from tests.quality.qualification_helpers import form_data, qualified_study

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
    assert claim.status == ClaimStatus.RELEASED and present(claim.study_session).is_preview
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
    study, _test = qualified_study()
    client.force_login(make_researcher("previewer"))
    client.post(reverse("study_preview_start", args=[study.slug]))
    url = reverse("qualification", args=[study.slug])
    assert BANNER in client.get(url).content.decode()
    chosen = form_data(client, study, correct=4)
    page = client.post(url, chosen, follow=True).content.decode()
    assert "You passed the qualification test" in page and PREVIEW_NOTHING_SAVED.replace("'", "&#x27;") in page
    assert not QualificationAttempt.objects.exists()


def test_the_admin_in_a_previewing_browser_is_refused_its_forms_until_the_preview_ends(previewing):
    group = Group.objects.create(name="to delete")
    delete = reverse("admin:auth_group_delete", args=[group.pk])
    # Its pages are read as ever; a form is refused, not run.
    assert previewing.get(delete).status_code == 200
    refused = previewing.post(delete, {"post": "yes"})
    assert refused.status_code == 403 and "End the preview first" in refused.content.decode()
    assert Group.objects.filter(pk=group.pk).exists()
    previewing.post(reverse("preview_end"))
    previewing.post(delete, {"post": "yes"})
    assert not Group.objects.filter(pk=group.pk).exists()


@pytest.fixture
def market(settings):
    standin = MarketStandIn().start()
    settings.PROLIFIC_API_URL = f"{standin.url}/api/v1/"
    yield standin
    standin.stop()


def test_paying_bonuses_from_a_previewing_browser_sends_nothing_to_the_market(previewing, market, django_user_model):
    """A rollback would not take back a payment the market has made: the dashboard's forms are
    refused during a preview, so the market is never called."""
    study = market_study()
    connect_prolific(study, market)
    owe_bonuses(study, arrive(study, market, django_user_model, 2))
    pay = reverse("dashboard:market_pay", args=[study.slug])
    assert previewing.post(pay).status_code == 403
    assert not market.bulk_pay_calls and set(market.prolific_paid_cents().values()) == {0}
    assert not BonusEntry.objects.filter(study=study, kind=BonusKind.PAID).exists()
    previewing.post(reverse("preview_end"))
    previewing.post(pay)
    assert len(market.bulk_pay_calls) == 1 and set(market.prolific_paid_cents().values()) == {100}


def test_signing_out_commits_and_ends_the_preview(previewing):
    session_key = previewing.session.session_key
    assert previewing.post(reverse("logout")).status_code == 302
    assert not Session.objects.filter(session_key=session_key).exists()
    assert BANNER not in previewing.get(reverse("home"), follow=True).content.decode()
    # The preview's session stays, never counting a task (its claims go when the next preview starts).
    assert {session.tasks_done for session in StudySession.objects.filter(is_preview=True)} == {0}
