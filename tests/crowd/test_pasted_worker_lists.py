"""A study's allow- and block-lists are pasted ids (Prolific lets researchers paste
them), not a multi-select of every worker; an id that names nobody is reported by name and
nothing is saved; a blocked worker is refused at the study link whatever the access."""

import pytest
from django.urls import reverse

from corpus.models import Market
from crowd import selectors
from crowd.models import Study, StudyAccess, StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.crowd.test_crowd_entry import PROLIFIC, entry

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    return make_study(dataset, tasks_per_batch=2, completion_code="CODE-41")


@pytest.fixture
def participants(make_worker):
    return {
        "ann": make_worker(username="ann", market=Market.PROLIFIC, external_id="5f00000000000000000000a1"),
        "bob": make_worker(username="bob", market=Market.PROLIFIC, external_id="5f00000000000000000000b2"),
        "tim": make_worker(username="tim", market=Market.MTURK, external_id="A3TURKER"),
    }


def test_pasted_ids_are_split_on_lines_commas_and_spaces_each_once():
    text = " 5f00a1\n5f00b2, A3TURKER;\r\n\n5f00a1  carol "
    assert selectors.pasted_ids(text) == ["5f00a1", "5f00b2", "A3TURKER", "carol"]


def test_ids_name_workers_by_market_id_or_username_and_unknown_ones_come_back(participants):
    found, unknown = selectors.workers_by_pasted_ids("5f00000000000000000000a1\nA3TURKER, bob, NOBODY-1 NOBODY-2")
    assert {w.pk for w in found} == {participants[n].pk for n in ("ann", "tim", "bob")}
    assert unknown == ["NOBODY-1", "NOBODY-2"]


def change_form_data(admin_client, study):
    """What the admin's change form would post back unchanged."""
    form = admin_client.get(reverse("admin:crowd_study_change", args=[study.pk])).context["adminform"].form
    data: dict[str, object] = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        if isinstance(value, bool):
            if value:
                data[name] = "on"
        elif value is not None:
            data[name] = getattr(value, "pk", value)
    management = {"TOTAL_FORMS": 0, "INITIAL_FORMS": 0, "MIN_NUM_FORMS": 0, "MAX_NUM_FORMS": 0}
    data.update({f"sessions-{key}": value for key, value in management.items()})
    return data


def test_the_admin_takes_pasted_lists_and_shows_them_back(admin_client, study, participants):
    page = admin_client.get(reverse("admin:crowd_study_change", args=[study.pk])).content.decode()
    assert 'name="allowed_ids"' in page and 'name="blocked_ids"' in page
    assert 'name="allowed_workers"' not in page  # no multi-select of every worker
    data = change_form_data(admin_client, study)
    data.update(access=StudyAccess.CLOSED, allowed_ids="5f00000000000000000000a1, bob", blocked_ids="A3TURKER")
    response = admin_client.post(reverse("admin:crowd_study_change", args=[study.pk]), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    study.refresh_from_db()
    assert study.access == StudyAccess.CLOSED
    assert set(study.allowed_workers.all()) == {participants["ann"], participants["bob"]}
    assert list(study.blocked_workers.all()) == [participants["tim"]]
    shown = admin_client.get(reverse("admin:crowd_study_change", args=[study.pk])).context["adminform"].form
    assert shown.initial["allowed_ids"] == "5f00000000000000000000a1\n5f00000000000000000000b2"


def test_an_unknown_id_is_named_and_nothing_is_saved(admin_client, study, participants):
    study.allowed_workers.set([participants["ann"]])
    data = change_form_data(admin_client, study)
    data.update(name="A new name", allowed_ids="bob\nTYPO-5f00", blocked_ids="")
    response = admin_client.post(reverse("admin:crowd_study_change", args=[study.pk]), data)
    assert response.status_code == 200
    page = response.content.decode()
    assert "No worker has this id: TYPO-5f00. Nothing was saved" in page
    assert "bob\nTYPO-5f00" in page  # the pasted text is kept for correcting
    study = Study.objects.get(pk=study.pk)
    assert study.name != "A new name"
    assert list(study.allowed_workers.all()) == [participants["ann"]]


def test_a_worker_on_both_lists_is_refused(admin_client, study, participants):
    data = change_form_data(admin_client, study)
    data.update(allowed_ids="bob", blocked_ids="bob")
    response = admin_client.post(reverse("admin:crowd_study_change", args=[study.pk]), data)
    assert response.status_code == 200
    assert "On both lists" in response.content.decode()
    assert not study.blocked_workers.exists()


def test_a_blocked_worker_is_refused_at_the_link_and_nothing_is_created(client, study, make_worker):
    blocked = make_worker(username="blocked", market=Market.PROLIFIC, external_id=PROLIFIC["PROLIFIC_PID"])
    study.blocked_workers.add(blocked)
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 403
    assert "not open to your account" in response.content.decode()
    assert not StudySession.objects.exists()
    study.blocked_workers.remove(blocked)
    assert client.get(entry(study), PROLIFIC).status_code == 302
    assert StudySession.objects.filter(worker=blocked).exists()
