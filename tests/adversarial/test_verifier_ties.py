"""Verifiers of a fooled example are kept apart by more than the device cookie: two verifiers in
fresh browsers on one network group, on one device, or in one correlated-error group, or a
verifier on the writer's network, verify nothing; the example stays pending with a tie recorded,
and verifiers tied to nobody still verify it."""

import pytest
from django.test import RequestFactory

from adversarial.models import TieKind, Verification, VerifierTie
from authorship.networks import CROWDED_NETWORK_IDS, network_group, note_network
from base.long_tasks import JobStatus
from crowd.models import DeviceSighting
from quality.models import AggregationRun, BonusEntry, CorrelatedWorkerGroup

from . import test_verification
from .test_verification import verify, writer_label

fooled_pair = test_verification.fooled_pair  # the fixture, shared

pytestmark = pytest.mark.django_db


def seen_from(address, *workers):
    for worker in workers:
        note_network(RequestFactory().get("/", REMOTE_ADDR=address), worker)


def state(attempt):
    attempt.refresh_from_db()
    return attempt.verification


def test_network_groups_are_the_24_and_the_48():
    assert network_group("203.0.113.7") == network_group("203.0.113.250") == "203.0.113.0/24"
    assert network_group("203.0.114.7") != network_group("203.0.113.7")
    assert network_group("2001:db8:1:2::7") == network_group("2001:db8:1:ffff::1") == "2001:db8:1::/48"
    assert network_group("::ffff:203.0.113.9") == "203.0.113.0/24"
    assert network_group("") == network_group("not an address") == ""


def test_two_verifiers_of_one_network_group_verify_nothing(fooled_pair, make_worker):
    writer, _, attempt = fooled_pair
    first, second = make_worker(), make_worker()
    seen_from("198.51.100.7", first)
    seen_from("198.51.100.201", second)  # a fresh browser, the same /24
    verify(first, attempt, writer_label(attempt))
    verify(second, attempt, writer_label(attempt))
    assert state(attempt) == Verification.PENDING
    tie = VerifierTie.objects.get(attempt=attempt)
    assert (tie.verifier, tie.tied_to, tie.kind) == (second, first, TieKind.NETWORK)
    assert not BonusEntry.objects.filter(worker=writer).exists()
    # A verifier tied to nobody decides it with the first.
    verify(make_worker(), attempt, writer_label(attempt))
    assert state(attempt) == Verification.VERIFIED
    assert BonusEntry.objects.filter(worker=writer).count() == 1


def test_a_verifier_on_the_writers_network_is_not_counted(fooled_pair, make_worker):
    writer, _, attempt = fooled_pair  # the writer's tries came from 127.0.0.1 (the test client)
    colluder = make_worker()
    seen_from("127.0.0.9", colluder)
    verify(colluder, attempt, writer_label(attempt))
    verify(make_worker(), attempt, writer_label(attempt))
    assert state(attempt) == Verification.PENDING
    tie = VerifierTie.objects.get(attempt=attempt)
    assert (tie.verifier, tie.tied_to, tie.kind) == (colluder, writer, TieKind.WRITER)


def test_two_verifiers_on_one_device_verify_nothing(fooled_pair, make_worker):
    _, _, attempt = fooled_pair
    first, second = make_worker(), make_worker()
    for worker in (first, second):
        DeviceSighting.objects.create(device="f" * 32, worker=worker)
    verify(first, attempt, writer_label(attempt))
    verify(second, attempt, writer_label(attempt))
    assert state(attempt) == Verification.PENDING
    assert VerifierTie.objects.get(attempt=attempt).kind == TieKind.DEVICE


def test_two_verifiers_of_one_correlated_group_verify_nothing(fooled_pair, make_worker):
    _, _, attempt = fooled_pair
    first, second = make_worker(), make_worker()
    run = AggregationRun.objects.create(dataset=attempt.pair.dataset, status=JobStatus.DONE)
    group = CorrelatedWorkerGroup.objects.create(
        run=run, number=1, shared=12, disagreements=0, expected_disagreements=4.0, co_errors=5
    )
    group.members.set([first, second])
    verify(first, attempt, writer_label(attempt))
    verify(second, attempt, writer_label(attempt))
    assert state(attempt) == Verification.PENDING
    assert VerifierTie.objects.get(attempt=attempt).kind == TieKind.CORRELATED


def test_a_crowded_network_group_ties_nobody(fooled_pair, make_worker):
    """A campus or carrier gateway: more ids than a household, so sharing it is no evidence."""
    _, _, attempt = fooled_pair
    first, second = make_worker(), make_worker()
    seen_from("192.0.2.1", first, second, *[make_worker() for _ in range(CROWDED_NETWORK_IDS)])
    verify(first, attempt, writer_label(attempt))
    verify(second, attempt, writer_label(attempt))
    assert state(attempt) == Verification.VERIFIED
    assert not VerifierTie.objects.exists()
