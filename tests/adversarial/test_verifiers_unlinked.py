"""Verifiers of an adversarial example are never the writer or ids linked to the
writer's device, nor excluded workers, and the bonus waits for verification by unlinked people.

Before: two ids of one person verified `xrcm qwbw xnqb`, paid its bonus and made it verified dev/test
data; verification read every label, excluded workers' too."""

import pytest

from adversarial.models import Verification
from corpus.exclusions import set_workers_excluded
from corpus.models import Worker
from corpus.services import add_labels
from crowd.models import DeviceSighting
from quality.models import BonusEntry
from teams.models import default_team_id
from validation.batch_claims import claim_validation_batch

from . import test_verification
from .test_verification import verify, writer_label

fooled_pair = test_verification.fooled_pair  # the fixture, shared

pytestmark = pytest.mark.django_db


def same_device(*workers, device="0123456789abcdef0123456789abcdef"):
    for worker in workers:
        DeviceSighting.objects.get_or_create(device=device, worker=worker)


def test_ids_linked_to_the_writer_are_never_offered_the_example(fooled_pair, make_worker):
    writer, _, attempt = fooled_pair
    sibling = make_worker()
    same_device(writer, sibling)
    assert claim_validation_batch(sibling, dataset=attempt.pair.dataset) is None
    assert claim_validation_batch(writer, dataset=attempt.pair.dataset) is None
    assert claim_validation_batch(make_worker(), dataset=attempt.pair.dataset) is not None


def test_labels_of_linked_ids_do_not_verify_and_the_bonus_waits_for_unlinked_verifiers(fooled_pair, make_worker):
    writer, _, attempt = fooled_pair
    siblings = [make_worker(), make_worker()]
    same_device(writer, *siblings)
    # Their labels arrive anyway (a batch claimed before the link was seen): they count for nothing.
    for sibling in siblings:
        add_labels([(attempt.pair, writer_label(attempt))], worker=sibling)
    verify(make_worker(), attempt, writer_label(attempt))
    attempt.refresh_from_db()
    assert attempt.verification == Verification.PENDING
    assert not BonusEntry.objects.filter(worker=writer).exists()
    verify(make_worker(), attempt, writer_label(attempt))  # two unlinked verifiers agree
    attempt.refresh_from_db()
    assert attempt.verification == Verification.VERIFIED
    assert BonusEntry.objects.filter(worker=writer).count() == 1


def test_an_excluded_workers_label_does_not_verify(fooled_pair, make_worker):
    writer, _, attempt = fooled_pair
    cheat = make_worker()
    verify(cheat, attempt, writer_label(attempt))
    set_workers_excluded(Worker.objects.filter(pk=cheat.pk), True, teams=[default_team_id()])
    verify(make_worker(), attempt, writer_label(attempt))
    attempt.refresh_from_db()
    assert attempt.verification == Verification.PENDING and not BonusEntry.objects.exists()
    verify(make_worker(), attempt, writer_label(attempt))
    attempt.refresh_from_db()
    assert attempt.verification == Verification.VERIFIED
    assert BonusEntry.objects.filter(worker=writer).count() == 1
