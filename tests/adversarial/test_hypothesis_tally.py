"""The adversarial task's finish keeps the cost page's hypothesis count (collection.hypothesis_tally):
one pair counted for a task that gives one, none for a task that gives none."""

import pytest
from django.urls import reverse

from adversarial.models import AdversarialTask, TaskState
from collection import hypothesis_tally
from corpus.models import Pair, Split

from .helpers import ContractModel, adversarial_study, arrive, hypothesis_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def model():
    server = ContractModel()
    yield server
    server.close()


def finish(client, worker, study, fooled):
    arrive(client, worker, study)
    assert client.get(reverse("adversarial:next")).status_code == 302
    task = AdversarialTask.objects.get(worker=worker, state=TaskState.WRITING)
    token = task.writing_claim.token
    for n in range(2):
        client.post(
            reverse("adversarial:try", args=[token]), {"hypothesis": hypothesis_for(task.target_label, fooled, n)}
        )
        if fooled:
            client.post(reverse("adversarial:reason", args=[token]), {"reason": "Outside is not inside."})
            break
    task.refresh_from_db()
    assert task.state == TaskState.DONE
    return task


def test_finished_tasks_count_the_pair_they_give_and_no_other(client, make_worker, model):
    dev, _ = adversarial_study("adv-dev", target_endpoint=model.url, max_tries=2, split=Split.DEV)
    train, _ = adversarial_study("adv-train", target_endpoint=model.url, max_tries=2, split=Split.TRAIN)
    finish(client, make_worker(), dev, fooled=True)  # a fooled try: one pair
    finish(client, make_worker(), dev, fooled=False)  # unfooled on dev: no pair
    finish(client, make_worker(), train, fooled=False)  # unfooled on train: the last try's pair
    counts = hypothesis_tally.counts()
    assert counts == hypothesis_tally.fresh_counts()
    assert {study: n for (study, *_), n in counts.items()} == {dev.pk: 1, train.pk: 1}
    assert Pair.objects.count() == 2
