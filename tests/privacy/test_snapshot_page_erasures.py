"""The snapshot page lists, per snapshot, the erasures its team recorded since it was made, linked
to the privacy page: a released snapshot still holds those people, the next one leaves them out."""

import re

import pytest
from django.urls import reverse

from base.long_tasks import JobStatus
from base.permissions import ensure_researcher_group
from corpus.models import Worker
from crowd.models import Study, StudySession
from modeling.models import Snapshot
from privacy.services import erase_by_market_id
from teams.models import Role, Team
from teams.services import join
from tests import factories

pytestmark = pytest.mark.django_db


def participant(make_worker, team, slug, market_id):
    dataset = factories.dataset(f"{slug}-data", team=team)
    study = Study.objects.create(slug=slug, name=slug, dataset=dataset, completion_code="C0DE", team=team)
    person = make_worker(username=f"prolific-{market_id}")
    Worker.objects.filter(pk=person.pk).update(market="prolific", external_id=market_id)
    StudySession.objects.create(study=study, worker=person, external_session_id=f"SESSION-{market_id}")


def cell(page, snapshot):
    row = re.search(rf'<tr id="snapshot-{snapshot.pk}".*?</tr>\s*$', page, re.S | re.M)
    assert row is not None, f"no row of snapshot {snapshot.pk}"
    found = re.search(r'data-field="erasures-since">(.*?)</td>', row.group(0), re.S)
    assert found is not None
    return found.group(1)


def test_each_snapshot_shows_its_teams_erasures_since_it_was_made_with_a_link(client, make_worker, django_user_model):
    factories.genre("fiction")
    lab, other = (Team.objects.create(slug=f"lab-{name}", name=f"Lab {name}") for name in "ab")
    participant(make_worker, lab, "lab-study", "PERSON01")
    participant(make_worker, lab, "lab-study-2", "PERSON02")
    participant(make_worker, other, "other-study", "PERSON03")
    researcher = django_user_model.objects.create_user("researcher", password="pass-word-1", is_staff=True)
    researcher.groups.add(ensure_researcher_group())
    join(researcher, lab, Role.RESEARCHER)

    before_both = Snapshot.objects.create(team=lab, status=JobStatus.DONE)
    erase_by_market_id("PERSON01", team_id=lab.pk)
    erase_by_market_id("PERSON03", team_id=other.pk)  # another team's erasure: not this team's snapshots'
    between = Snapshot.objects.create(team=lab, status=JobStatus.DONE)
    erase_by_market_id("PERSON02", team_id=lab.pk)
    after_both = Snapshot.objects.create(team=lab, status=JobStatus.DONE)

    client.force_login(researcher)
    page = client.get(reverse("dashboard:snapshots")).content.decode()
    privacy = reverse("dashboard:privacy")
    assert re.fullmatch(rf'<a href="{privacy}"[^>]*>2</a>', cell(page, before_both))
    assert re.fullmatch(rf'<a href="{privacy}"[^>]*>1</a>', cell(page, between))
    assert cell(page, after_both) == "0"
    assert "erasures since" in page
    # The progress poll re-renders the row with its count too.
    polled = client.get(reverse("dashboard:snapshots_progress"), {"ids": str(before_both.pk)})
    (item,) = polled.json()["items"]
    assert cell(item["html"], before_both).startswith(f'<a href="{privacy}"')
