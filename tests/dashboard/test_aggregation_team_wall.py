"""The aggregation form (dashboard:aggregation) offers and starts runs only on the datasets of the
user's teams where they may do research: another team's slug in a POST is refused as an unknown
one and starts nothing. A run a researcher starts is in its team's audit log, with the run."""

import pytest
from django.urls import reverse

from audit.models import AuditEntry
from quality.models import AggregationRun
from teams.models import Role
from tests.two_teams import member, two_teams

pytestmark = pytest.mark.django_db


@pytest.fixture
def labs(django_user_model, make_worker):
    return two_teams(django_user_model, make_worker)


def test_the_form_lists_only_the_users_teams_datasets(client, labs):
    client.force_login(labs.owner_b)
    page = client.get(reverse("dashboard:aggregation")).content.decode()
    assert '<option value="lab-b-data">' in page
    assert "lab-a-data" not in page


def test_another_teams_dataset_is_refused_as_unknown_and_nothing_starts(client, labs):
    client.force_login(labs.owner_b)
    foreign = client.post(reverse("dashboard:aggregation"), {"dataset": "lab-a-data"}, follow=True)
    unknown = client.post(reverse("dashboard:aggregation"), {"dataset": "no-such-data"}, follow=True)
    said = [str(m) for m in foreign.context["messages"]]
    assert said == [str(m) for m in unknown.context["messages"]]
    assert said == ["Nothing was started: choose one of your teams' datasets."]
    assert not AggregationRun.objects.exists()
    assert not AuditEntry.objects.filter(action="aggregation.started").exists()


def test_an_annotator_is_offered_no_dataset_and_starts_nothing(client, labs, django_user_model):
    annotator = member(django_user_model, "annotator-a", labs.team_a, Role.ANNOTATOR)
    client.force_login(annotator)
    assert "lab-a-data" not in client.get(reverse("dashboard:aggregation")).content.decode()
    client.post(reverse("dashboard:aggregation"), {"dataset": "lab-a-data"})
    assert not AggregationRun.objects.exists()


def test_a_started_run_is_in_its_teams_audit_log(client, labs):
    client.force_login(labs.owner_a)
    client.post(reverse("dashboard:aggregation"), {"dataset": "lab-a-data", "methods": ["dawid_skene"]})
    run = AggregationRun.objects.get()
    entry = AuditEntry.objects.get(action="aggregation.started")
    assert (entry.team_id, entry.actor_id, entry.subject_id) == (labs.team_a.pk, labs.owner_a.pk, str(run.pk))
    assert entry.dataset_slugs == ["lab-a-data"]
    assert entry.after == {"methods": ["dawid_skene"]}
