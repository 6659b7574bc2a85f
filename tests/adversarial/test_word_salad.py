"""Word salad on the adversarial page ("Banana water purple under city simply chair.") would fool the
model on every try: it is refused with the writing page's message and the model is never asked."""

import pytest
from django.urls import reverse

from adversarial.models import AdversarialTask, AdversarialTry, TaskState
from collection import services as writing
from corpus.models import Label

from .helpers import ContractModel, adversarial_study, arrive

pytestmark = pytest.mark.django_db

SALAD = "Banana water purple under city simply chair."


@pytest.fixture
def model():
    server = ContractModel()
    yield server
    server.close()


def test_word_salad_is_refused_on_the_adversarial_page_before_the_model_is_asked(client, make_worker, model):
    study, _ = adversarial_study(target_endpoint=model.url)
    arrive(client, make_worker(), study)
    assert client.get(reverse("adversarial:next")).status_code == 302
    task = AdversarialTask.objects.get(state=TaskState.WRITING)
    message = writing.hypothesis_errors(task.writing_claim.premise.text, {Label.ENTAILMENT: SALAD})["entailment"]
    assert "does not read as an English sentence" in message
    response = client.post(
        reverse("adversarial:try", args=[task.writing_claim.token]),
        {"hypothesis": SALAD},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["hypothesis"] == [message]
    assert model.requests == 0 and not AdversarialTry.objects.exists()
