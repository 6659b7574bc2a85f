"""A writing task submitted at the moment its claim expires, while another worker claims the freed place.

The premise takes one writing (writings_per_premise=1). Worker A holds it until T. A submits; just
as A's submit reads the clock (a moment before T), the clock passes T and worker B claims the
premise A's claim no longer holds. Whatever the order, the premise never gets more writings than
it takes, and B, having been given the task, is not refused when B submits it.

The clock is the services' own (the submit's and the claim's), driven by the test; A stops right after reading it (where a slow
request would leave it) until B has claimed, or is waiting for a row lock A holds.
"""

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection

from collection import services, writing_claims
from collection.models import WritingClaim
from corpus.models import Pair
from crowd.models import ClaimStatus
from tests.collection.test_writing_concurrency import GOOD
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.present import present

pytestmark = [pytest.mark.django_db(transaction=True)]

T = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


class RacingClock:
    def __init__(self):
        self.value = T - timedelta(seconds=1)
        self.a_paused = threading.Event()
        self.go_on = threading.Event()

    def now(self):
        value = self.value
        if threading.current_thread().name == "A" and not self.a_paused.is_set():
            self.a_paused.set()
            assert self.go_on.wait(60), "A was never released"
        return value


def backend_pid(store, key):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        store[key] = cursor.fetchone()[0]


def is_blocked(pid):
    with connection.cursor() as cursor:
        cursor.execute("SELECT cardinality(pg_blocking_pids(%s)) > 0", [pid])
        return cursor.fetchone()[0]


def test_a_submit_at_expiry_and_a_newcomer_claim_never_overwrite_the_premise_nor_refuse_the_newcomer(
    make_worker, monkeypatch
):
    clock = RacingClock()
    monkeypatch.setattr(services, "timezone", clock)
    monkeypatch.setattr(writing_claims, "timezone", clock)  # the claims read the same clock
    dataset, genre = writing_setup(writings_per_premise=1)
    (premise,) = add_premises(dataset, genre, 1)
    a, b = make_worker(), make_worker()
    claim_a = present(writing_claims.claim_next_premise(a, dataset=dataset))
    WritingClaim.objects.filter(pk=claim_a.pk).update(expires_at=T)  # A's place is A's until T
    outcome: dict[str, Any] = {}  # each thread's result or error
    pids: dict[str, int] = {}

    def in_thread(name, call):
        try:
            backend_pid(pids, name)
            outcome[name] = call()
        except Exception as error:
            outcome[name] = error
        finally:
            connection.close()

    thread_a = threading.Thread(
        name="A", target=in_thread, args=("A", lambda: services.submit_hypotheses(a, claim_a.token, **GOOD))
    )
    thread_a.start()
    assert clock.a_paused.wait(30), "A's submit never read the clock"
    clock.value = T + timedelta(seconds=1)  # A's claim has expired now
    thread_b = threading.Thread(
        name="B", target=in_thread, args=("B", lambda: writing_claims.claim_next_premise(b, dataset=dataset))
    )
    thread_b.start()
    deadline = time.monotonic() + 60
    while "B" not in outcome and not ("B" in pids and is_blocked(pids["B"])):
        assert time.monotonic() < deadline, "B neither claimed nor waited for a lock"
        time.sleep(0.01)
    clock.go_on.set()
    thread_a.join(60)
    thread_b.join(60)
    assert not thread_a.is_alive() and not thread_b.is_alive()

    claim_b = outcome["B"]
    assert not isinstance(claim_b, Exception), claim_b
    if claim_b is not None:
        # B was given the premise: B's sentences must be saved, so A's could not be.
        assert claim_b.premise_id == premise.pk
        saved = services.submit_hypotheses(b, claim_b.token, **{k: f"{v} Again." for k, v in GOOD.items()})
        assert len(saved.pairs) == 3
        assert isinstance(outcome["A"], writing_claims.ClaimExpired), outcome["A"]
    else:
        assert isinstance(outcome["A"], services.WritingSubmission), outcome["A"]
    premise.refresh_from_db()
    assert premise.writings_done == 1
    assert Pair.objects.filter(premise=premise).count() == 3
    assert WritingClaim.objects.filter(premise=premise, status=ClaimStatus.SUBMITTED).count() == 1
