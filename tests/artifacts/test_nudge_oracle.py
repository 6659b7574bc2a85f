"""The writers' nudge is no labelling oracle.

The attack: a participant sends a validation pair's hypothesis to /artifacts/score/ under each of
the three labels and takes the one the hypothesis-only model calls guessable (or the highest p).
Figures before/after in bench/RESULTS-catch.md (`pytest ... -s` prints them).
"""

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from artifacts import views as nudge_views
from artifacts.monitoring import refresh_monitor
from collection.models import WritingClaim
from corpus.labels import LABELS
from corpus.models import Pair, Premise
from tests.artifacts.test_monitor import planted_corpus
from tests.present import present

pytestmark = pytest.mark.django_db


def post_json(client, body):
    return client.post(reverse("artifacts:score"), json.dumps(body), content_type="application/json")


@pytest.fixture
def monitored(db, make_worker):
    ds, _planted = planted_corpus(make_worker)
    refresh_monitor(ds)
    return ds


def oracle_accuracy(client, pairs, claim=None):
    """Share of pairs whose label the endpoint gives away (an unanswered pair counts as a miss)."""
    right = answered = 0
    for pair in pairs:
        scores = {}
        for label in LABELS:
            body = {"text": pair.hypothesis, "label": label, "dataset": "collected"}
            if claim is not None:
                body["claim"] = str(claim.token)
            response = post_json(client, body)
            if response.status_code == 200 and response.json().get("enabled"):
                answer = response.json()
                scores[label] = (answer.get("guessable", False), answer.get("p", 0))
        if scores:
            answered += 1
            right += max(scores, key=lambda label: scores[label]) == pair.author_label
    return right / len(pairs), answered


def test_a_participant_without_a_writing_claim_gets_no_answer(client, monitored, make_worker):
    pairs = list(Pair.objects.filter(hypothesis__contains="not").order_by("pk")[:20])
    pairs += list(Pair.objects.exclude(hypothesis__contains="not").order_by("pk")[:40])
    client.force_login(make_worker(username="validator").user)
    accuracy, answered = oracle_accuracy(client, pairs)
    print(f"\nnudge oracle without a writing claim: top label = gold on {accuracy:.2f} of pairs, {answered} answered")
    assert answered == 0
    refused = post_json(client, {"text": "The man does not walk.", "label": "contradiction", "dataset": "collected"})
    assert refused.status_code == 403 and "writing task" in refused.json()["error"]


def test_a_writer_is_answered_about_their_own_claim_only_and_only_so_often(client, monitored, make_worker):
    writer, other = make_worker(username="writer"), make_worker(username="other")
    premise = present(Premise.objects.filter(dataset=monitored).first())
    expires = timezone.now() + timedelta(minutes=30)
    mine = WritingClaim.objects.create(worker=writer, premise=premise, expires_at=expires)
    theirs = WritingClaim.objects.create(worker=other, premise=premise, expires_at=expires)
    client.force_login(writer.user)
    body = {"text": "The man does not walk outside.", "label": "contradiction", "dataset": "collected"}
    answer = post_json(client, {**body, "claim": str(mine.token)})
    assert answer.status_code == 200 and answer.json()["guessable"]
    assert "p" not in answer.json()  # whether to nudge, and the words: nothing to rank labels by
    assert post_json(client, {**body, "claim": str(theirs.token)}).status_code == 403
    for _ in range(nudge_views.SCORES_PER_CLAIM - 1):
        post_json(client, {**body, "claim": str(mine.token)})
    limited = post_json(client, {**body, "claim": str(mine.token)})
    assert limited.status_code == 429 and limited.json()["enabled"] is False
    late = make_worker(username="late")
    expired = WritingClaim.objects.create(
        worker=late, premise=premise, expires_at=timezone.now() - timedelta(seconds=1)
    )
    client.force_login(late.user)
    assert post_json(client, {**body, "claim": str(expired.token)}).status_code == 403
