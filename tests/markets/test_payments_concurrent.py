"""Paying under pressure, on PostgreSQL: twenty researchers' clicks at once, and a payer killed
between the market's answer and its commit (against the market STAND-IN, tests/markets/standin.py)."""

import os
import signal
import subprocess
import sys
import threading
import time

import psycopg2
import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from markets import payments
from markets.models import BatchState, BonusBatch, BonusPayment
from tests.conftest import REPO_ROOT, celery_subprocess_env

from .conftest import arrive, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = [pytest.mark.django_db(transaction=True)]

N_PARTICIPANTS = 12
PER_SESSION = 3


def test_twenty_parallel_pay_requests_pay_every_owed_bonus_exactly_once(standin, django_user_model, make_researcher):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, N_PARTICIPANTS)
    owe_bonuses(study, sessions, per_session=PER_SESSION)
    make_researcher(username="payer", password="payer-pass-1")
    standin.fail("submissions.list", "429", times=3)  # the reconcile reads meet Prolific's rate limit too
    start = threading.Barrier(20)
    answers = []

    def click():
        client = Client()
        client.login(username="payer", password="payer-pass-1")
        start.wait()
        answers.append(client.post(f"/dashboard/markets/{study.slug}/pay/").status_code)
        connection.close()

    threads = [threading.Thread(target=click) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert answers == [302] * 20
    owed_cents = 50 * PER_SESSION
    assert standin.prolific_paid_cents() == {s.worker.external_id: owed_cents for s in sessions}
    assert len(standin.bulk_pay_calls) == len(set(standin.bulk_pay_calls)) == 1
    assert ledger_paid(study).count() == N_PARTICIPANTS * PER_SESSION
    assert ledger_paid(study).values("pays").distinct().count() == N_PARTICIPANTS * PER_SESSION
    assert not BonusPayment.objects.exists(), "paid is stored once: in the ledger"


def _database_connection():
    db = settings.DATABASES["default"]
    return psycopg2.connect(
        dbname=db["NAME"],
        user=db.get("USER") or "postgres",
        host=db.get("HOST") or "127.0.0.1",
        port=db.get("PORT") or 5432,
    )


def test_a_payer_killed_after_the_market_paid_and_before_its_commit_is_reconciled_without_paying_twice(
    standin, django_user_model, settings
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 5)
    owe_bonuses(study, sessions, per_session=2)
    connection.close()  # the subprocess and the lock below use their own connections
    holder = _database_connection()
    answered = threading.Event()

    def hold_the_batch_before_answering():
        # Prolific has paid; before its answer leaves, hold the batch row the payer must lock to commit.
        with holder.cursor() as cursor:
            cursor.execute("SELECT id FROM markets_bonusbatch WHERE state = 'paying' FOR UPDATE")
        answered.set()

    standin.before_answer["bonus.pay"] = hold_the_batch_before_answering
    env = celery_subprocess_env(
        {
            "PROLIFIC_API_URL": settings.PROLIFIC_API_URL,
            "MARKET_TIMEOUT_SECONDS": "10",
        }
    )
    payer = subprocess.Popen(
        [sys.executable, "manage.py", "pay_market_bonuses", study.slug],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert answered.wait(60), "the payer never paid"
        # Wait until the payer has the answer and is blocked on its commit, then kill it there.
        with _database_connection() as watcher, watcher.cursor() as cursor:
            for _ in range(200):
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = %s",
                    [settings.DATABASES["default"]["NAME"]],
                )
                if cursor.fetchone()[0]:
                    break
                time.sleep(0.05)
            else:
                pytest.fail("the payer never waited on its commit")
        os.killpg(payer.pid, signal.SIGKILL)
        payer.wait(10)
    finally:
        if payer.poll() is None:
            os.killpg(payer.pid, signal.SIGKILL)
        holder.rollback()
        holder.close()
    assert len(standin.bulk_pay_calls) == 1
    assert ledger_paid(study).count() == 0, "the killed payer committed nothing"
    assert BonusBatch.objects.get().state == BatchState.PAYING

    # The next press settles the batch from Prolific's record and pays nothing again.
    outcome = payments.pay_owed_bonuses(study)

    assert outcome.paid == 10
    assert len(standin.bulk_pay_calls) == 1, "nothing was paid twice"
    assert standin.prolific_paid_cents() == {s.worker.external_id: 100 for s in sessions}
    assert ledger_paid(study).count() == 10
    assert BonusBatch.objects.get().state == BatchState.PAID
