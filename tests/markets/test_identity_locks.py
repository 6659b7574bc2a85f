"""The market's answer is stored without deadlocking the participant's own submit.

Found by bench/attacks/forged_participant_id.py against gunicorn and a Celery worker: the check
locked the session, then the worker (excluding it), while the participant's submit held the worker
and asked for the session (record_task_done). PostgreSQL killed one of them ("deadlock detected"),
the check was lost and the forged session stayed pending. Now the check locks the worker first, as
claims and submits do.
"""

import threading
import time

import pytest
from django.db import connections, transaction

from corpus.models import Market, Worker
from crowd.models import MarketCheck, StudySession
from crowd.services import record_task_done
from markets import identity

from .conftest import make_study

pytestmark = [pytest.mark.django_db(transaction=True)]


def wait_until_someone_waits_on_my_lock() -> None:
    with connections["default"].cursor() as cursor:
        for _ in range(600):
            # Waiting on this transaction's locks: the suite's other workers wait on locks of their own meanwhile.
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND pg_backend_pid() = ANY(pg_blocking_pids(pid))"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.05)
    raise AssertionError("the check never waited for the submit's lock")


def test_a_refusal_stored_while_the_participants_submit_holds_their_worker_does_not_deadlock(make_worker):
    study = make_study()
    forger = make_worker(market=Market.PROLIFIC, external_id="forger")
    session = StudySession.objects.create(
        study=study, worker=forger, external_session_id="5f0000000000000000000009", market_check=MarketCheck.PENDING
    )
    worker_locked = threading.Event()
    errors: list[BaseException] = []

    def submit() -> None:  # the participant's last submit, as validation's submit locks
        try:
            with transaction.atomic():
                Worker.objects.select_for_update(no_key=True).get(pk=forger.pk)
                worker_locked.set()
                wait_until_someone_waits_on_my_lock()
                record_task_done(StudySession.objects.get(pk=session.pk))
        except BaseException as error:
            errors.append(error)
        finally:
            worker_locked.set()
            connections.close_all()

    def check() -> None:  # the Celery task storing the market's refusal
        try:
            worker_locked.wait()
            answer = identity.MarketAnswer(MarketCheck.REFUSED, "Prolific's submission is owner's.", "owner")
            identity.store_answer(session.pk, forger.pk, answer)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit), threading.Thread(target=check)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    session.refresh_from_db()
    forger.refresh_from_db()
    assert session.market_check == MarketCheck.REFUSED
    assert session.completed_at is not None and session.completion_code == ""
    assert session.code_held_reason.startswith("Not vouched for by the market")
    assert forger.exclusions.exists()
