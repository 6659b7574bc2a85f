"""Every task that creates a hypothesis goes through the same writing rules. The
adversarial task took keyboard mash (`xrcm qwbw xnqb` fooled the target and earned a code); it now
refuses what the writing page refuses, with the same words, and the model is never asked."""

import pytest
from django.urls import reverse

from adversarial.models import AdversarialTask, AdversarialTry, TaskState
from collection import services as writing
from corpus.models import Label

from .helpers import ContractModel, adversarial_study, arrive

pytestmark = pytest.mark.django_db

JUNK = ["xrcm qwbw xnqb", "qwpo zxmn bvcx lkjh", "the the the the the the", "asdf jkl qwerty zxcv"]


@pytest.fixture
def model():
    server = ContractModel()
    yield server
    server.close()


@pytest.mark.parametrize("junk", JUNK)
def test_junk_the_writing_page_refuses_is_refused_on_the_adversarial_page_with_the_same_message(
    client, make_worker, model, junk
):
    study, _ = adversarial_study(target_endpoint=model.url)
    arrive(client, make_worker(), study)
    assert client.get(reverse("adversarial:next")).status_code == 302
    task = AdversarialTask.objects.get(state=TaskState.WRITING)
    premise = task.writing_claim.premise.text
    # What the writing page says about it (the three boxes' rules; the others left empty).
    message = writing.hypothesis_errors(premise, {Label.ENTAILMENT: junk})["entailment"]
    response = client.post(
        reverse("adversarial:try", args=[task.writing_claim.token]),
        {"hypothesis": junk},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["hypothesis"] == [message]
    assert model.requests == 0 and not AdversarialTry.objects.exists()
