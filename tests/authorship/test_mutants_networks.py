"""Network groups (authorship.networks) at their edges: an address is cut to its /24 or /48 after
its spaces are trimmed, an IPv4 address written as IPv6 falls in its IPv4 group; a sighting is
stored once per id and group, never for a request without an address nor in a preview; and the ids
sharing a group are the other ids asked about, a group of exactly the crowded size still counting
and one id more (an id not asked about included) leaving the group out."""

from typing import Any

import pytest
from django.test import RequestFactory

from authorship.models import NetworkSighting
from authorship.networks import CROWDED_NETWORK_IDS, ids_sharing_a_network, network_group, note_network
from corpus.models import Worker
from crowd.arrival import SESSION_KEY
from crowd.models import StudySession
from crowd.preview import PREVIEW_KEY
from tests.collection.writing_helpers import make_study, writing_setup

pytestmark = pytest.mark.django_db


def sighted(network: str, *workers: Worker) -> None:
    NetworkSighting.objects.bulk_create([NetworkSighting(network=network, worker=worker) for worker in workers])


def test_an_address_is_trimmed_and_cut_to_its_group() -> None:
    assert network_group(" 203.0.113.7\n") == "203.0.113.0/24"
    assert network_group("2001:db8:1:2::7") == "2001:db8:1::/48"
    assert network_group("::ffff:198.51.100.9") == "198.51.100.0/24"
    # An IPv6 address that maps no IPv4 one keeps its /48.
    assert network_group("2001:db8:ffff:1::1") == "2001:db8:ffff::/48"
    assert network_group("") == ""


def test_a_request_is_noted_once_per_id_and_group(make_worker: Any) -> None:
    worker = make_worker()
    for address in ("203.0.113.7", "203.0.113.8", "198.51.100.1"):
        note_network(RequestFactory().get("/", REMOTE_ADDR=address), worker)
    assert sorted(NetworkSighting.objects.filter(worker=worker).values_list("network", flat=True)) == [
        "198.51.100.0/24",
        "203.0.113.0/24",
    ]


def test_a_request_without_an_address_notes_nothing(make_worker: Any) -> None:
    note_network(RequestFactory().get("/", REMOTE_ADDR=""), make_worker())
    assert not NetworkSighting.objects.exists()


def test_a_preview_notes_nothing_and_a_study_session_does(make_worker: Any) -> None:
    dataset, _genre = writing_setup()
    study = make_study(dataset)
    worker = make_worker()
    preview = StudySession.objects.create(study=study, worker=worker, external_session_id="p", is_preview=True)
    request = RequestFactory().get("/", REMOTE_ADDR="203.0.113.7")
    request.user = worker.user
    request.session = {PREVIEW_KEY: preview.pk, SESSION_KEY: preview.pk}  # type: ignore[assignment]
    note_network(request, worker)
    assert not NetworkSighting.objects.exists()
    request.session = {}  # type: ignore[assignment]
    note_network(request, worker)
    assert NetworkSighting.objects.filter(worker=worker, network="203.0.113.0/24").exists()


def test_the_ids_sharing_a_group_are_the_other_ids_asked_about(make_worker: Any) -> None:
    first, second, third, alone, outside = (make_worker() for _ in range(5))
    sighted("203.0.113.0/24", first, second, outside)
    sighted("198.51.100.0/24", second, third)
    sighted("192.0.2.0/24", alone)
    shared = ids_sharing_a_network([first.pk, second.pk, third.pk, alone.pk])
    assert shared == {first.pk: {second.pk}, second.pk: {first.pk, third.pk}, third.pk: {second.pk}}
    assert ids_sharing_a_network([]) == {}


def test_a_group_of_the_crowded_size_counts_and_one_id_more_does_not(make_worker: Any) -> None:
    first, second = make_worker(), make_worker()
    others = [make_worker() for _ in range(CROWDED_NETWORK_IDS - 2)]
    sighted("203.0.113.0/24", first, second, *others)
    assert CROWDED_NETWORK_IDS == 20
    assert ids_sharing_a_network([first.pk, second.pk]) == {first.pk: {second.pk}, second.pk: {first.pk}}
    # One more id, not one of those asked about: the group is a gateway's now.
    sighted("203.0.113.0/24", make_worker())
    sighted("198.51.100.0/24", first, second)
    assert ids_sharing_a_network([first.pk, second.pk]) == {first.pk: {second.pk}, second.pk: {first.pk}}
    assert ids_sharing_a_network([first.pk, others[0].pk]) == {}
