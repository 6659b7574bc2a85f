"""Adversarial tries carry their typing evidence too (authorship app through adversarial.services)."""

import pytest
from django.urls import reverse

from adversarial.models import AdversarialTry
from authorship.models import WritingEvidence
from corpus.models import Split
from crowd.models import TypingEvidenceAction
from tests.adversarial.helpers import ContractModel, adversarial_study, hypothesis_for
from tests.adversarial.test_task import send, start
from tests.authorship import records
from tests.present import present

pytestmark = pytest.mark.django_db


@pytest.fixture
def model():
    server = ContractModel()
    yield server
    server.close()


def record(way, text):
    field = records.typed(text) if way == "t" else {way: len(text)}
    return records.page({"hypothesis": field})


def try_with(client, task, text, way):
    records.age_claim(task.writing_claim.token)  # as old as typing the sentence takes
    return client.post(
        reverse("adversarial:try", args=[task.writing_claim.token]),
        {"hypothesis": text, "typing_evidence": record(way, text)},
    )


def test_each_try_stores_how_it_was_typed_and_the_fooled_pair_gets_it(client, make_worker, model):
    study, _ = adversarial_study(target_endpoint=model.url, max_tries=4, split=Split.TRAIN, tasks_per_batch=1)
    task, _ = start(client, make_worker(), study)
    assert try_with(client, task, hypothesis_for(task.target_label, fooled=False), "t").status_code == 302
    assert try_with(client, task, hypothesis_for(task.target_label, fooled=True), "p").status_code == 302
    assert send(client, task, hypothesis_for(task.target_label, fooled=True, n=1)).status_code == 409
    client.post(reverse("adversarial:reason", args=[task.writing_claim.token]), {"reason": "Outside is not inside."})
    typed, pasted = AdversarialTry.objects.order_by("number").select_related("writing_evidence")
    assert present(typed.writing_evidence).flags == [] and present(pasted.writing_evidence).flags == ["pasted"]
    assert WritingEvidence.objects.get(pair=pasted.pair_id) == pasted.writing_evidence


def test_a_study_that_refuses_pasted_text_refuses_a_pasted_try_before_the_model_sees_it(client, make_worker, model):
    study, _ = adversarial_study(target_endpoint=model.url, max_tries=4)
    study.typing_evidence_action = TypingEvidenceAction.REFUSE_PASTE
    study.save()
    task, _ = start(client, make_worker(), study)
    refused = try_with(client, task, hypothesis_for(task.target_label, fooled=True), "p")
    assert refused.status_code == 400 and "type this sentence yourself" in refused.content.decode()
    assert model.requests == 0 and not AdversarialTry.objects.exists()
