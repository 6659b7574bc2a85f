"""Verifiers and validators are never the writer.

The attack: a writer opened the validation study in a fresh browser under a second participant id
and was offered 5 of 5 of their own pairs (the only link the server knew was a browser cookie).
Now a second id that presents the writer's own market session (the same SESSION_ID), or that the
market's record links to the writer, is linked to them (`crowd.WorkerLink`), and neither the
validation claim's candidates nor adversarial verification ever give one the other's pairs.
"""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from adversarial.models import Verification
from corpus.models import Market, Worker
from corpus.services import add_labels
from crowd.arrival import link_workers
from crowd.models import LinkReason, StudySession, TaskKind, WorkerLink
from tests.adversarial import test_verification
from tests.adversarial.test_verification import verify, writer_label
from tests.quality.test_catch_trials import make_study
from tests.validation.validation_factories import make_dataset, make_pair
from validation.batch_claims import claim_validation_batch
from validation.models import ValidationClaim
from validation.selectors import claimable_pairs

fooled_pair = test_verification.fooled_pair  # the fixture, shared

pytestmark = pytest.mark.django_db

WRITERS_SESSION = "5f00000000000000000000aa"


def the_writer_and_their_pairs(make_worker, n=5):
    dataset = make_dataset()
    writer = make_worker(market=Market.PROLIFIC, external_id="writer-pid")
    writing = make_study(dataset, share=0.0, slug="writing-study")
    writing.task_kind = TaskKind.WRITING
    writing.save()
    StudySession.objects.create(study=writing, worker=writer, external_session_id=WRITERS_SESSION)
    pairs = [make_pair(dataset, author=writer) for _ in range(n)]
    return dataset, writer, pairs


def open_link(study):
    """The paid test study opened without a market connection: its ids are the links' own claims."""
    study.open_link_unverified = True
    study.save(update_fields=["open_link_unverified"])


def offered(worker, dataset):
    batch = claim_validation_batch(worker, dataset=dataset)
    return set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)) if batch else set()


def test_a_second_id_on_the_writers_market_session_is_never_offered_their_pairs(make_worker):
    dataset, writer, pairs = the_writer_and_their_pairs(make_worker)
    strangers_pair = make_pair(dataset, author=make_worker())
    validation = make_study(dataset, share=0.0, slug="validation-study")
    open_link(validation)
    fresh_browser = Client()
    fresh_browser.get(
        reverse("study_entry", args=[validation.slug]),
        {"PROLIFIC_PID": "second-pid", "STUDY_ID": "x", "SESSION_ID": WRITERS_SESSION},
    )
    second = Worker.objects.get(external_id="second-pid")
    assert WorkerLink.objects.filter(worker=second, linked=writer, reason=LinkReason.SAME_MARKET_SESSION).exists()
    mine = offered(second, dataset)
    print(f"\nthe writer's pairs offered to their second id: {len(mine & {p.pk for p in pairs})} of {len(pairs)}")
    assert mine == {strangers_pair.pk}


def test_ids_the_server_linked_are_never_offered_each_others_pairs(make_worker):
    dataset, writer, pairs = the_writer_and_their_pairs(make_worker)
    linked = make_worker(market=Market.PROLIFIC, external_id="linked-pid")
    link_workers(writer.pk, linked.pk, LinkReason.MARKET_RECORD)
    assert offered(linked, dataset) == set()
    assert len(claimable_pairs(make_worker(), timezone.now(), dataset=dataset)) == len(pairs)  # others are


def test_the_owner_arriving_after_a_forger_of_their_session_is_linked_to_them(make_worker):
    forger = make_worker(market=Market.PROLIFIC, external_id="forger-pid")
    study = make_study(make_dataset(), share=0.0, slug="val")
    open_link(study)
    StudySession.objects.create(
        study=study, worker=forger, external_session_id="5f00000000000000000000bb", market_participant_id="owner-pid"
    )
    Client().get(
        reverse("study_entry", args=[study.slug]),
        {"PROLIFIC_PID": "owner-pid", "STUDY_ID": "x", "SESSION_ID": "5f00000000000000000000cc"},
    )
    owner = Worker.objects.get(external_id="owner-pid")
    assert WorkerLink.objects.filter(worker=owner, linked=forger, reason=LinkReason.MARKET_RECORD).exists()


def test_labels_of_an_id_linked_to_the_writer_do_not_verify_their_adversarial_example(fooled_pair, make_worker):
    writer, _, attempt = fooled_pair
    siblings = [make_worker(), make_worker()]
    for sibling in siblings:
        link_workers(writer.pk, sibling.pk, LinkReason.SAME_MARKET_SESSION)
        assert claim_validation_batch(sibling, dataset=attempt.pair.dataset) is None
        # A label that arrives anyway (claimed before the link was known) counts for nothing.
        add_labels([(attempt.pair, writer_label(attempt))], worker=sibling)
    verify(make_worker(), attempt, writer_label(attempt))
    attempt.refresh_from_db()
    assert attempt.verification == Verification.PENDING
