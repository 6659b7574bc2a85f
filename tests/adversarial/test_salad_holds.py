"""A salad bot on the adversarial page: one salad in four got past the
shape check and fooled the model, and its example went to verifiers for dev. Its session's shape
refusals now hold its code (collection/shape_holds.py), and its fooled examples wait out of the
verification queue until a researcher releases the hold."""

import pytest
from django.urls import reverse

from adversarial.models import AdversarialTask, AdversarialTry, TaskState, Verification
from collection.models import ShapeRefusal
from collection.shape_holds import SALAD_HOLD_PREFIX
from corpus.models import Pair
from crowd.holds import decide_code_holds
from crowd.models import CodeHoldDecision

from .helpers import ContractModel, adversarial_study, arrive, hypothesis_for

pytestmark = pytest.mark.django_db

SALADS = [
    "Banana water purple under city simply chair.",
    "Blue city chair over yellow water beside.",
    "Man street purple simply under beside dog.",
]


@pytest.fixture
def model():
    server = ContractModel()
    yield server
    server.close()


def try_(client, task, text):
    return client.post(
        reverse("adversarial:try", args=[task.writing_claim.token]),
        {"hypothesis": text},
        HTTP_ACCEPT="application/json",
    )


def fool_once(client, worker, salads):
    """One task: the salads (refused, the model never asked), then a fooling sentence and a reason."""
    assert client.get(reverse("adversarial:next")).status_code == 302
    task = AdversarialTask.objects.get(worker=worker, state=TaskState.WRITING)
    for salad in salads:
        assert try_(client, task, salad).status_code == 400
    assert try_(client, task, hypothesis_for(task.target_label, fooled=True)).json()["model_fooled"] is True
    client.post(reverse("adversarial:reason", args=[task.writing_claim.token]), {"reason": "It says otherwise."})
    return AdversarialTry.objects.get(task=task, model_fooled=True).pair


@pytest.mark.parametrize(
    "decision, queued_after", [(CodeHoldDecision.RELEASED, True), (CodeHoldDecision.REFUSED, False)]
)
def test_a_salad_sessions_examples_wait_for_the_decision_on_its_held_code(
    client, make_worker, model, decision, queued_after
):
    study, _ = adversarial_study(target_endpoint=model.url, tasks_per_batch=2)
    worker = make_worker()
    session = arrive(client, worker, study)
    first = fool_once(client, worker, SALADS[:1])
    first.refresh_from_db()
    assert first.needs_validation  # one refusal is no evidence: queued at once
    second = fool_once(client, worker, SALADS[1:])
    assert model.requests == 2 and ShapeRefusal.objects.filter(study_session=session).count() == 3
    session.refresh_from_db()
    assert session.code_held_reason.startswith(SALAD_HOLD_PREFIX) and session.completion_code == ""
    assert not Pair.objects.filter(pk__in=[first.pk, second.pk], needs_validation=True).exists()
    assert set(AdversarialTry.objects.filter(pair__isnull=False).values_list("verification", flat=True)) == {
        Verification.PENDING
    }

    assert decide_code_holds([session.pk], decision) == 1
    assert Pair.objects.filter(pk__in=[first.pk, second.pk], needs_validation=True).count() == (
        2 if queued_after else 0
    )


def test_an_honest_adversarial_session_is_not_held(client, make_worker, model):
    study, _ = adversarial_study(target_endpoint=model.url, tasks_per_batch=2)
    worker = make_worker()
    session = arrive(client, worker, study)
    pairs = [fool_once(client, worker, SALADS[:1]), fool_once(client, worker, [])]
    session.refresh_from_db()
    assert session.completion_code and session.code_held_reason == ""
    assert Pair.objects.filter(pk__in=[pair.pk for pair in pairs], needs_validation=True).count() == 2


def test_salad_sent_after_a_fooled_example_takes_it_out_of_the_queue_at_once(client, make_worker, model):
    """The attack's bot: a task fooled, then salad refused on every try of the next, and the visit
    left unfinished: its example must not wait in the queue for a code that is never asked for."""
    study, _ = adversarial_study(target_endpoint=model.url, tasks_per_batch=3)
    worker = make_worker()
    arrive(client, worker, study)
    example = fool_once(client, worker, [])
    example.refresh_from_db()
    assert example.needs_validation
    assert client.get(reverse("adversarial:next")).status_code == 302
    task = AdversarialTask.objects.get(worker=worker, state=TaskState.WRITING)
    for salad in SALADS:
        assert try_(client, task, salad).status_code == 400
    example.refresh_from_db()
    assert not example.needs_validation
