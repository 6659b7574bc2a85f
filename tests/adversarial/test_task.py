"""The adversarial writing task through its pages: tries, the model's answer, the reason, the pairs
kept, and the safety rules for a paid crowd."""

import pytest
from django.urls import reverse

from adversarial.models import AdversarialTask, AdversarialTry, TaskState, Verification
from corpus.models import Pair, Split
from crowd.models import ClaimStatus
from tests.present import present

from .helpers import ContractModel, adversarial_study, arrive, hypothesis_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def model():
    server = ContractModel()
    yield server
    server.close()


def start(client, worker, study):
    arrive(client, worker, study)
    response = client.get(reverse("adversarial:next"))
    assert response.status_code == 302, response.content
    task = AdversarialTask.objects.get(worker=worker, state=TaskState.WRITING)
    return task, response["Location"]


def send(client, task, text, json=False):
    headers = {"HTTP_ACCEPT": "application/json"} if json else {}
    return client.post(reverse("adversarial:try", args=[task.writing_claim.token]), {"hypothesis": text}, **headers)


def test_a_writer_tries_until_the_model_is_fooled_and_gives_a_reason(client, make_worker, model):
    study, round_ = adversarial_study(target_endpoint=model.url, max_tries=4, split=Split.TRAIN)
    worker = make_worker()
    task, url = start(client, worker, study)
    page = client.get(url).content.decode()
    assert task.writing_claim.premise.text in page and 'id="hypothesis"' in page and "autofocus" in page

    right = send(client, task, hypothesis_for(task.target_label, fooled=False), json=True).json()
    assert right["predicted_label"] == task.target_label and right["model_fooled"] is False
    assert right["tries_left"] == 3 and sum(right["probabilities"].values()) == pytest.approx(1)
    page = client.get(url).content.decode()
    assert "The model was right" in page and "3 tries left" in page

    fooled = send(client, task, hypothesis_for(task.target_label, fooled=True))
    assert fooled.status_code == 302
    page = client.get(url).content.decode()
    assert "you fooled it!" in page and 'id="reason"' in page and 'id="hypothesis"' not in page
    # No more model queries once fooled: the reason comes first.
    assert send(client, task, hypothesis_for(task.target_label, fooled=True, n=1)).status_code == 409

    assert (
        client.post(reverse("adversarial:reason", args=[task.writing_claim.token]), {"reason": "  "}).status_code == 400
    )
    done = client.post(
        reverse("adversarial:reason", args=[task.writing_claim.token]), {"reason": "Being outside is not being inside."}
    )
    assert done.status_code == 302
    task.refresh_from_db()
    assert task.state == TaskState.DONE and task.reason == "Being outside is not being inside."
    assert task.writing_claim.__class__.objects.get(pk=task.writing_claim_id).status == ClaimStatus.SUBMITTED
    tries = list(AdversarialTry.objects.filter(task=task).order_by("number"))
    assert [t.model_fooled for t in tries] == [False, True]
    assert all(t.round_id == round_.pk and t.probabilities and t.created_at for t in tries)
    # The fooled try becomes the task's corpus pair, with the writer's target label, queued for verification.
    assert tries[0].pair_id is None
    pair = Pair.objects.get(pk=present(tries[1].pair_id))
    assert (pair.author_label, pair.author, pair.needs_validation) == (task.target_label, worker, True)
    assert [t.verification for t in tries] == [Verification.NOT_ASKED, Verification.PENDING]
    assert model.requests == 2


@pytest.mark.parametrize("split, kept", [(Split.DEV, False), (Split.TEST, False), (Split.TRAIN, True)])
def test_an_unfooled_task_gives_a_pair_on_train_premises_only(client, make_worker, model, split, kept):
    study, _ = adversarial_study(target_endpoint=model.url, max_tries=2, split=split)
    worker = make_worker()
    task, _ = start(client, worker, study)
    for n in range(2):
        send(client, task, hypothesis_for(task.target_label, fooled=False, n=n))
    task.refresh_from_db()
    assert task.state == TaskState.DONE  # out of tries: the task ends, unfooled
    assert AdversarialTry.objects.filter(task=task, model_fooled=False).count() == 2
    pairs = Pair.objects.filter(premise=task.writing_claim.premise)
    assert pairs.exists() == kept
    if kept:
        assert pairs.get().hypothesis == AdversarialTry.objects.get(task=task, number=2).hypothesis
        assert not pairs.get().needs_validation
    assert send(client, task, hypothesis_for(task.target_label, fooled=True), json=True).status_code == 409


def test_a_kept_pair_never_takes_a_pair_id_the_dataset_already_has(client, make_worker, model):
    """An imported corpus (or any earlier pair) may hold the id this task's pair would get: it saves
    under a fresh one instead of failing on the dataset's unique pairIDs."""
    study, _ = adversarial_study(target_endpoint=model.url, max_tries=1, premises=1, split=Split.TRAIN)
    premise = study.dataset.premises.get()
    taken = f"{premise.prompt_id}a1w1"
    Pair.objects.create(
        dataset=study.dataset, premise=premise, pair_id=taken, hypothesis="An imported one.", author_label="neutral"
    )
    worker = make_worker()
    task, _ = start(client, worker, study)
    assert send(client, task, hypothesis_for(task.target_label, fooled=False)).status_code == 302
    task.refresh_from_db()
    assert task.state == TaskState.DONE
    kept = present(AdversarialTry.objects.get(task=task).pair)
    assert kept.pair_id != taken and kept.pair_id.startswith(taken)
    assert Pair.objects.filter(premise=premise).count() == 2


def test_a_hypothesis_that_fails_the_checks_never_reaches_the_model(client, make_worker, model):
    study, _ = adversarial_study(target_endpoint=model.url)
    task, _ = start(client, make_worker(), study)
    for text in ["", "ok", "!!! ???", task.writing_claim.premise.text]:
        response = send(client, task, text, json=True)
        assert response.status_code == 400 and "hypothesis" in response.json()["errors"]
        assert "predicted_label" not in response.json()
    page = send(client, task, "ok").content.decode()
    assert "at least 3 words" in page and "the model says" not in page
    send(client, task, hypothesis_for(task.target_label, fooled=False))
    again = send(client, task, hypothesis_for(task.target_label, fooled=False) + " !", json=True)
    assert again.status_code == 400 and "already" in again.json()["errors"]["hypothesis"][0]
    assert model.requests == 1 and AdversarialTry.objects.count() == 1


def test_no_free_oracle_outside_a_claimed_task(client, make_worker, model):
    study, _ = adversarial_study(target_endpoint=model.url)
    owner, stranger = make_worker(), make_worker()
    task, _ = start(client, owner, study)
    client.force_login(stranger.user)
    assert send(client, task, hypothesis_for("entailment", fooled=True)).status_code == 404
    assert client.get(reverse("adversarial:task", args=[task.writing_claim.token])).status_code == 404
    # Logged in without a study visit: no task, so no model.
    assert client.get(reverse("adversarial:next")).status_code == 403
    assert model.requests == 0


def test_the_model_is_rate_limited_per_browser_session(client, make_worker, model):
    study, _ = adversarial_study(target_endpoint=model.url, max_tries=5, tries_per_minute=2)
    task, _ = start(client, make_worker(), study)
    codes = [send(client, task, hypothesis_for(task.target_label, fooled=False, n=n)).status_code for n in range(3)]
    assert codes[:2] == [302, 302] and codes[2] == 429
    assert AdversarialTry.objects.count() == 2 and model.requests == 2


def test_a_model_that_is_down_gets_a_clear_message_and_costs_no_try(client, make_worker, settings):
    settings.ADVERSARIAL_ENDPOINT_TIMEOUT = 0.5
    settings.ADVERSARIAL_ENDPOINT_RETRIES = 1
    study, _ = adversarial_study(target_endpoint="http://127.0.0.1:9/predict")
    task, _ = start(client, make_worker(), study)
    sentence = hypothesis_for(task.target_label, fooled=False)
    response = send(client, task, sentence)
    assert response.status_code == 503
    assert "not answering right now" in response.content.decode()
    assert f'value="{sentence}"' in response.content.decode()  # the sentence is kept
    assert AdversarialTry.objects.count() == 0


def test_the_study_counts_finished_tasks_towards_the_completion_code(client, make_worker, model):
    study, _ = adversarial_study(target_endpoint=model.url, max_tries=1, tasks_per_batch=2)
    worker = make_worker()
    session = arrive(client, worker, study)
    for _ in range(2):
        client.get(reverse("adversarial:next"))
        task = AdversarialTask.objects.get(worker=worker, state=TaskState.WRITING)
        send(client, task, hypothesis_for(task.target_label, fooled=False))
    session.refresh_from_db()
    assert session.tasks_done == 2 and session.completion_code
    assert "ADV" in client.get(reverse("adversarial:next")).content.decode()


def test_a_task_left_open_when_its_round_closed_is_given_back_for_the_next_round(client, make_worker, model):
    from adversarial.models import Round, RoundStatus

    study, round1 = adversarial_study(target_endpoint=model.url)
    worker = make_worker()
    task, _ = start(client, worker, study)
    Round.objects.filter(pk=round1.pk).update(status=RoundStatus.CLOSED)
    refused = send(client, task, hypothesis_for(task.target_label, fooled=False), json=True)
    assert refused.status_code == 409 and "closed" in refused.json()["errors"]["hypothesis"][0]
    round2 = Round.objects.create(study=study, number=2, dataset=round1.dataset, target_endpoint=model.url)
    client.get(reverse("adversarial:next"))
    new = AdversarialTask.objects.get(worker=worker, state=TaskState.WRITING)
    assert new.round == round2 and new.pk != task.pk
    task.refresh_from_db()
    assert task.state == TaskState.DONE and task.writing_claim.status == ClaimStatus.RELEASED


@pytest.mark.parametrize("target", ["entailment", "neutral", "contradiction"])
def test_the_page_reads_as_english_defines_the_labels_and_counts_the_try_the_reason_is_for(
    client, make_worker, model, target
):
    """ "a sentence that is might be correct" and "try 2 of 3" while asking for try 1's reason were
    on the page; every target reads as a sentence and the labels are defined."""
    study, _ = adversarial_study(target_endpoint=model.url, max_tries=3)
    task, url = start(client, make_worker(), study)
    AdversarialTask.objects.filter(pk=task.pk).update(target_label=target)
    task.refresh_from_db()
    page = " ".join(client.get(url).content.decode().split())
    assert "is might" not in page and "be might" not in page
    assert "try 1 of 3" in page and 'id="label-definitions"' in page
    assert all(word in page for word in ("Definitely correct", "Might be correct", "Definitely incorrect"))
    send(client, task, hypothesis_for(target, fooled=True))
    page = " ".join(client.get(url).content.decode().split())
    assert "the reason for try 1 of 3" in page and "try 2 of 3" not in page
    assert "is might" not in page and "why is your sentence" not in page
