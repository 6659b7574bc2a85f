"""Pays, timeouts and webhooks served the production way, against the market STAND-IN (never a live market).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_h_markets .venv/bin/python bench/markets_figures.py \\
        [--participants 50] [--per-participant 2] [--port 8861]

Migrates the database, starts the stand-in (tests/markets/standin.py) and gunicorn with the shipped
gunicorn.conf.py (DEBUG off) pointed at it, makes a study connected to the stand-in's Prolific with
N owed bonuses, then: 20 researchers' pay requests at once over HTTP (bonuses paid on the
stand-in, duplicates, bulk pays); a pay whose answer times out, then a retry; a signed RETURNED
webhook over HTTP (seconds until the participant's claims are free), its replay and a forgery.
"""

import argparse
import http.cookiejar
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("MARKET_CREDENTIALS_KEY", "YmVuY2gtb25seS1tYXJrZXQta2V5LTMyLWJ5dGVzISE=")


def browser(base):
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def csrf(path):
        page = opener.open(base + path).read().decode()
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert found is not None, "no CSRF token on the page"
        return found.group(1)

    def post(path, fields, token_from):
        data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": csrf(token_from)}).encode()
        request = urllib.request.Request(base + path, data=data, headers={"Referer": base + token_from})
        try:
            return opener.open(request).status
        except urllib.error.HTTPError as error:
            return error.code

    return post


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--participants", type=int, default=50)
    parser.add_argument("--per-participant", type=int, default=2)
    parser.add_argument("--port", type=int, default=8861)
    args = parser.parse_args()

    from tests.markets.standin import MarketStandIn

    standin = MarketStandIn(slow_seconds=3.0).start()
    os.environ["PROLIFIC_API_URL"] = f"{standin.url}/api/v1/"
    os.environ["MARKET_TIMEOUT_SECONDS"] = "2"
    import django

    django.setup()
    from decimal import Decimal

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from base.permissions import ensure_researcher_group
    from corpus.models import Dataset, Market, Worker
    from crowd.models import ClaimStatus, Study, StudySession, TaskKind
    from markets import connections, events, payments
    from quality.models import BonusCause, BonusEntry, BonusKind
    from tests.validation.validation_factories import make_pair
    from validation.batch_claims import claim_validation_batch
    from validation.models import ValidationClaim

    run = secrets.token_hex(3)
    slug = f"markets-bench-{run}"
    dataset = Dataset.objects.create(slug=slug, name=slug)
    study = Study.objects.create(
        slug=slug, name=slug, dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="B", bonus_currency="GBP"
    )
    connection = connections.save_connection(
        study, market="prolific", market_study_id=standin.study_id, token=standin.prolific_token, webhook_secret="s"
    )
    User = get_user_model()
    sessions = []
    for i in range(args.participants):
        worker = Worker.objects.create(
            user=User.objects.create_user(f"{slug}-{i}"), market=Market.PROLIFIC, external_id=f"{run}-p{i}"
        )
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"{run}-s{i}")
        standin.add_submission(session.external_session_id, worker.external_id)
        sessions.append(session)
        for _ in range(args.per_participant):
            BonusEntry.objects.create(
                kind=BonusKind.EARNED, worker=worker, study=study, study_session=session,
                pair=make_pair(dataset), amount=Decimal("0.50"), currency="GBP", cause=BonusCause.OTHER, reason="bench",
            )  # fmt: skip
    owed = args.participants * args.per_participant
    password = secrets.token_urlsafe(12)
    researcher = User.objects.create_user(f"{slug}-r", password=password, is_staff=True, is_superuser=True)
    researcher.groups.add(ensure_researcher_group())

    base = f"http://127.0.0.1:{args.port}"
    env = dict(os.environ, DEBUG="0", ALLOWED_HOSTS="127.0.0.1", CSRF_TRUSTED_ORIGINS=base)
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "gunicorn.conf.py", "-b", f"127.0.0.1:{args.port}",
         "annotation_site.wsgi"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/accounts/login/")
                break
            except OSError:
                time.sleep(0.2)
        posts = []
        for _ in range(20):
            post = browser(base)
            post("/accounts/login/", {"username": researcher.username, "password": password}, "/accounts/login/")
            posts.append(post)
        start = threading.Barrier(20)
        answers = []

        def click(post):
            start.wait()
            answers.append(post(f"/dashboard/markets/{slug}/pay/", {}, f"/dashboard/markets/?study={slug}"))

        threads = [threading.Thread(target=click, args=(post,)) for post in posts]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        took = time.monotonic() - began
        paid = standin.prolific_paid_cents()
        duplicates = sum(max(0, cents - 50 * args.per_participant) for cents in paid.values()) // 50
        ledger = BonusEntry.objects.filter(study=study, kind=BonusKind.PAID).count()
        print(f"20 parallel pay requests: answers {sorted(set(answers))}, {took:.2f} s")
        print(f"  owed {owed}, paid on the stand-in {sum(paid.values()) // 50}, duplicates {duplicates}, "
              f"bulk pays {len(standin.bulk_pay_calls)}, ledger paid rows {ledger}")  # fmt: skip

        # A retry after a time-out: new bonuses, Prolific's answer to pay lost, then a second press.
        for session in sessions[:5]:
            BonusEntry.objects.create(
                kind=BonusKind.EARNED, worker=session.worker, study=study, study_session=session,
                pair=make_pair(dataset), amount=Decimal("0.50"), currency="GBP", cause=BonusCause.OTHER, reason="bench retry",
            )  # fmt: skip
        standin.fail("bonus.pay", "slow-after")
        first = payments.pay_owed_bonuses(study)
        retry = payments.pay_owed_bonuses(study)
        print(f"retry after a time-out: first press paid {first.paid} (waiting {first.waiting}), "
              f"retry paid {retry.paid}, bulk pays of that batch {standin.bulk_pay_calls.count(standin.bulk_pay_calls[-1])}")  # fmt: skip

        # A returned submission: seconds from sending the webhook until its claims are free.
        for _ in range(5):
            make_pair(dataset)
        holder = sessions[-1]
        claim_validation_batch(holder.worker, study_session=holder)
        body = json.dumps(
            {"resource_id": holder.external_session_id, "event_type": "submission.status.change",
             "participant_id": holder.worker.external_id, "status": "RETURNED"}
        ).encode()  # fmt: skip
        stamp = str(int(time.time()))
        hook = f"{base}/markets/hooks/prolific/{connection.webhook_key}/"

        def send(signature):
            request = urllib.request.Request(hook, data=body, headers={
                "Content-Type": "application/json", "X-Prolific-Request-Timestamp": stamp,
                "X-Prolific-Request-Signature": signature})  # fmt: skip
            try:
                return urllib.request.urlopen(request).status
            except urllib.error.HTTPError as error:
                return error.code

        sent = time.monotonic()
        status = send(events.prolific_signature("s", stamp, body))
        while ValidationClaim.objects.filter(worker=holder.worker, status=ClaimStatus.OPEN).exists():
            time.sleep(0.01)
        free_after = time.monotonic() - sent
        replay = send(events.prolific_signature("s", stamp, body))
        forged = send(events.prolific_signature("guess", stamp, body))
        print(f"RETURNED webhook: answered {status}, claims free {free_after:.3f} s after sending; "
              f"replay answered {replay}, forgery answered {forged}")  # fmt: skip
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # gunicorn's workers too
        try:
            server.wait(40)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        standin.stop()


if __name__ == "__main__":
    main()
