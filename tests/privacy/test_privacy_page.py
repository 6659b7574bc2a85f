"""The privacy page (dashboard:privacy): a team's researchers find, download and erase their own
participants only; another team's participant answers as an unknown id does."""

import pytest
from django.urls import reverse

from base.permissions import ensure_researcher_group
from corpus.models import Worker
from crowd.models import Study, StudySession
from privacy.models import ErasureRecord
from teams.models import Role, Team
from teams.services import join
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def labs(make_worker, django_user_model):
    factories.genre("fiction")
    teams = {name: Team.objects.create(slug=f"lab-{name}", name=f"Lab {name}") for name in "ab"}
    dataset = factories.dataset("lab-a-data", team=teams["a"])
    study = Study.objects.create(slug="lab-a-study", name="A", dataset=dataset, completion_code="A", team=teams["a"])
    person = make_worker(username="prolific-PERSON01")
    Worker.objects.filter(pk=person.pk).update(market="prolific", external_id="PERSON01")
    StudySession.objects.create(study=study, worker=person, external_session_id="SESSION01")
    researchers = {}
    for name, team in teams.items():
        user = django_user_model.objects.create_user(f"researcher-{name}", password="pass-word-1", is_staff=True)
        user.groups.add(ensure_researcher_group())
        join(user, team, Role.RESEARCHER)
        researchers[name] = user
    return researchers


def test_the_teams_researcher_finds_downloads_and_erases(client, labs):
    client.force_login(labs["a"])
    page = client.get(reverse("dashboard:privacy"), {"market_id": "PERSON01"})
    assert "Found participant" in page.content.decode()
    download = client.get(reverse("dashboard:privacy_download"), {"market_id": "PERSON01"})
    assert download.status_code == 200 and b"SESSION01" in download.content
    refused = client.post(reverse("dashboard:privacy_erase"), {"market_id": "PERSON01", "confirm": "PERSON0"})
    assert refused.status_code == 302 and not ErasureRecord.objects.exists()  # not confirmed: nothing erased
    client.post(reverse("dashboard:privacy_erase"), {"market_id": "PERSON01", "confirm": "PERSON01"})
    assert ErasureRecord.objects.count() == 1
    assert not Worker.objects.filter(external_id="PERSON01").exists()


def test_another_teams_researcher_gets_what_an_unknown_id_gets(client, labs):
    client.force_login(labs["b"])
    page = client.get(reverse("dashboard:privacy"), {"market_id": "PERSON01"})
    assert "Found participant" not in page.content.decode()
    assert client.get(reverse("dashboard:privacy_download"), {"market_id": "PERSON01"}).status_code == 404
    client.post(reverse("dashboard:privacy_erase"), {"market_id": "PERSON01", "confirm": "PERSON01"})
    assert Worker.objects.filter(external_id="PERSON01").exists() and not ErasureRecord.objects.exists()
