"""Verification of fooled examples as ANLI did it: two verifiers through the validation task, a
third only when they disagree, the writer against the verifiers' majority, a bonus for verified ones."""

import pytest
from django.urls import reverse

from adversarial.models import AdversarialTask, AdversarialTry, TaskState, Verification
from adversarial.verification import verdict
from corpus.agreement import agreement_stats
from corpus.models import Pair
from quality.models import BonusEntry
from tests.present import present
from validation.batch_claims import claim_validation_batch
from validation.selectors import batch_claims
from validation.services import submit_validation_batch

from .helpers import ContractModel, adversarial_study, arrive, hypothesis_for

E, N, C = "entailment", "neutral", "contradiction"


@pytest.mark.parametrize(
    "labels, expected",
    [
        ([], Verification.PENDING),
        ([E], Verification.PENDING),
        ([E, E], Verification.VERIFIED),
        ([N, N], Verification.DISCARDED),
        ([E, N], Verification.PENDING),
        ([E, N, E], Verification.VERIFIED),
        ([E, N, N], Verification.DISCARDED),
        ([E, N, C], Verification.DISCARDED),  # no majority of three
        ([E, E, N, N], Verification.VERIFIED),  # a label claimed before the verdict never changes it
    ],
)
def test_the_verdict_is_the_verifiers_majority_against_the_writer(labels, expected):
    assert verdict(E, labels) == expected


@pytest.fixture
def fooled_pair(client, make_worker):
    """One fooled example written in an adversarial study, its reason given; (writer, session, try)."""
    model = ContractModel()
    study, _ = adversarial_study(target_endpoint=model.url, bonus_per_verified_fooled="0.75", max_tries=3)
    writer = make_worker()
    session = arrive(client, writer, study)
    client.get(reverse("adversarial:next"))
    task = AdversarialTask.objects.get(worker=writer, state=TaskState.WRITING)
    token = task.writing_claim.token
    client.post(reverse("adversarial:try", args=[token]), {"hypothesis": hypothesis_for(task.target_label, True)})
    client.post(reverse("adversarial:reason", args=[token]), {"reason": "It says the opposite of the line."})
    model.close()
    attempt = AdversarialTry.objects.get(task=task, model_fooled=True)
    return writer, session, attempt


def verify(worker, attempt, label):
    batch = present(claim_validation_batch(worker, dataset=attempt.pair.dataset))
    claims = list(batch_claims(worker, batch))
    assert [c.pair_id for c in claims] == [attempt.pair_id]
    submit_validation_batch(worker, batch, {attempt.pair_id: label})


def writer_label(attempt):
    return attempt.task.target_label


def other(label):
    return N if label != N else E


@pytest.mark.django_db
def test_two_agreeing_verifiers_verify_it_and_the_writer_earns_the_bonus(fooled_pair, make_worker):
    writer, session, attempt = fooled_pair
    assert attempt.pair.needs_validation and attempt.verification == Verification.PENDING
    verify(make_worker(), attempt, writer_label(attempt))
    attempt.refresh_from_db()
    assert attempt.verification == Verification.PENDING
    verify(make_worker(), attempt, writer_label(attempt))
    attempt.refresh_from_db()
    assert attempt.verification == Verification.VERIFIED
    pair = Pair.objects.get(pk=attempt.pair_id)
    # The queue lets the pair go: no third verifier is asked.
    assert not pair.needs_validation and claim_validation_batch(make_worker(), dataset=pair.dataset) is None
    # The existing gold rule, unchanged: author + two verifiers is three votes for the writer's label.
    assert pair.gold_label == writer_label(attempt) and pair.label_count == 3
    (bonus,) = BonusEntry.objects.filter(worker=writer)
    assert (bonus.pair_id, bonus.study_session_id, str(bonus.amount)) == (pair.pk, session.pk, "0.75")
    assert agreement_stats()  # the MultiNLI-style statistics still read these pairs


@pytest.mark.django_db
def test_disagreeing_verifiers_ask_a_third_who_can_discard_it(fooled_pair, make_worker):
    writer, _, attempt = fooled_pair
    verify(make_worker(), attempt, writer_label(attempt))
    verify(make_worker(), attempt, other(writer_label(attempt)))
    attempt.refresh_from_db()
    assert attempt.verification == Verification.PENDING and Pair.objects.get(pk=attempt.pair_id).needs_validation
    verify(make_worker(), attempt, other(writer_label(attempt)))
    attempt.refresh_from_db()
    assert attempt.verification == Verification.DISCARDED
    pair = Pair.objects.get(pk=attempt.pair_id)
    assert not pair.needs_validation and pair.gold_label == "-"
    assert not BonusEntry.objects.filter(worker=writer).exists()


@pytest.mark.django_db
def test_the_writer_is_never_a_verifier_of_their_own_example(fooled_pair):
    writer, _, attempt = fooled_pair
    assert claim_validation_batch(writer, dataset=attempt.pair.dataset) is None
