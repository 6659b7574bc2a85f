"""A batch submitted at the moment its claim expires, while another validator claims the freed place.

The pair has four labels and one place left. Validator A holds that place until T. A submits;
just as A's submit reads the clock (a moment before T), the clock passes T and validator B claims
the place A's claim no longer holds. Whatever the order, the pair never counts more than five
labels, and B's batch, claimed in good faith, is not refused when B submits it.

The clock is the services' own, driven by the test; an Event holds A right after it has read it,
which is where a slow request or a preempted process would leave it.
"""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from corpus.models import Label, ValidationLabel
from corpus.services import add_labels
from crowd.models import ClaimStatus
from tests.present import present
from validation import batch_claims, services
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

pytestmark = [pytest.mark.django_db(transaction=True)]

T = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


class RacingClock:
    """`timezone` for validation.services: one clock for all threads, and a place where thread A
    stops until B has claimed: right after A read the clock, or once A has written its labels
    (holding the pairs' row locks)."""

    def __init__(self, pause_at):
        self.value = T - timedelta(seconds=1)
        self.pause_at = pause_at
        self.a_paused = threading.Event()
        self.b_has_claimed = threading.Event()

    def pause_a(self, where):
        if threading.current_thread().name == "A" and where == self.pause_at and not self.a_paused.is_set():
            self.a_paused.set()
            assert self.b_has_claimed.wait(30), "B never claimed"

    def now(self):
        value = self.value
        self.pause_a("clock read")
        return value


@pytest.fixture(params=["clock read", "label write"])
def clock(request, monkeypatch):
    clock = RacingClock(request.param)
    monkeypatch.setattr(services, "timezone", clock)
    monkeypatch.setattr(batch_claims, "timezone", clock)  # the claims read the same clock

    def add_labels_then_pause(*args, **kwargs):
        labels = add_labels(*args, **kwargs)
        clock.pause_a("label write")  # A still holds the pairs' row locks here
        return labels

    monkeypatch.setattr(services, "add_labels", add_labels_then_pause)
    return clock


def label_three_times(pair, make_worker, clock):
    for _ in range(3):
        worker = make_worker()
        batch = present(batch_claims.claim_validation_batch(worker))
        services.submit_validation_batch(worker, batch, {pair.pk: Label.NEUTRAL})
    pair.refresh_from_db()
    assert pair.label_count == 4


def test_a_submit_at_expiry_and_a_newcomer_claim_never_make_six_labels_nor_refuse_the_newcomer(make_worker, clock):
    dataset = make_dataset()
    pair = make_pair(dataset, author=make_worker(), label=Label.ENTAILMENT)
    label_three_times(pair, make_worker, clock)
    a, b = make_worker(), make_worker()
    batch_a = present(batch_claims.claim_validation_batch(a))
    ValidationClaim.objects.filter(batch=batch_a).update(expires_at=T)  # A's place is A's until T

    outcome: dict[str, object] = {}

    def a_submits():
        try:
            outcome["a"] = services.submit_validation_batch(a, batch_a, {pair.pk: Label.CONTRADICTION})
        except batch_claims.ValidationRefused as refused:
            outcome["a"] = refused
        finally:
            connection.close()

    thread = threading.Thread(target=a_submits, name="A")
    thread.start()
    assert clock.a_paused.wait(30), f"A's submit never reached the {clock.pause_at}"
    clock.value = T + timedelta(seconds=1)  # A's claim has expired now
    batch_b = batch_claims.claim_validation_batch(b)
    clock.b_has_claimed.set()
    thread.join(60)
    assert not thread.is_alive()

    if batch_b is not None:
        # B holds the place: B's submit must be saved, whatever became of A's.
        assert list(ValidationClaim.objects.filter(batch=batch_b).values_list("pair_id", flat=True)) == [pair.pk]
        saved_b = services.submit_validation_batch(b, batch_b, {pair.pk: Label.ENTAILMENT})
        assert len(saved_b.labels) == 1
        assert isinstance(outcome["a"], batch_claims.BatchExpired), outcome["a"]
    else:
        # A held the place when B looked: A's labels count.
        assert isinstance(outcome["a"], services.SubmittedBatch), outcome["a"]
    pair.refresh_from_db()
    assert pair.label_count == ValidationLabel.objects.filter(pair=pair).count() == 5
    assert ValidationClaim.objects.filter(pair=pair, status=ClaimStatus.SUBMITTED).count() == 4
