"""Attack: a faulty market makes the lab pay its crowd twice ("payments against a faulty
market").

Two scenes against the market STAND-IN (tests/markets/standin.py, Prolific's API v1 on
ATTACK_MARKET_PORT, bench/attacks/_market.py), each with its own study of PARTICIPANTS
participants owed one bonus of 0.25 each, paid by a researcher pressing the dashboard's buttons:

  "409 after paying"   Prolific pays the bulk bonus, then answers the pay call 409 Conflict; the
                       researcher presses "Pay the owed bonuses" PRESSES times.
  "not paid, lagging"  Prolific pays, then answers 500; its record lists the payment only later.
                       The researcher presses "Prolific shows it was not paid" at once (the record
                       does not show it yet), then "Pay" again.

Measured: the cents the stand-in paid beyond what each participant was owed. Succeeded: a scene
that paid anyone twice. Refused: 0 cents paid twice. The faults it plays: a 409 that frees the bulk bonus's
bonuses (+750 c on the next press), and "not paid" believed from a record that has not caught up.

The server must ask this stand-in and open the credentials the judge seals (markets.sealing):

    MARKET_CREDENTIALS_KEY=<key> PROLIFIC_API_URL=http://127.0.0.1:8899/api/v1/ DATABASE_URL=... \\
        .venv/bin/python manage.py runserver 127.0.0.1:8805
    MARKET_CREDENTIALS_KEY=<key> DATABASE_URL=... .venv/bin/python bench/attacks/run.py \\
        --base-url http://127.0.0.1:8805 --only faulty_market_double_pay
"""

import argparse
import json
import secrets

from . import _market
from ._admin_client import AdminBrowser
from ._common import django_ready, wilson_interval

NAME = "faulty_market_double_pay"
CLAIM = "A market that answers ambiguously after paying (409, 500, a lagging record) makes the lab pay twice."
SCENES = ("409 after paying", "not paid, lagging")
PARTICIPANTS = 30
PRESSES = 3
BONUS = "0.25"
OWED_CENTS = 25


def _scene_study(scene: str, seed: int):
    """A study connected to the stand-in, PARTICIPANTS arrived from Prolific, one bonus owed each."""
    django_ready()
    from django.contrib.auth import get_user_model

    from tests.markets.conftest import arrive, make_study, owe_bonuses

    tag = secrets.token_hex(3)
    slug = f"double-pay-{scene.split()[0]}-{seed}-{tag}"
    study = make_study(slug=slug)
    market = _market.connected_study(slug)
    market.bulk_prefix = f"bulk-{secrets.token_hex(4)}-"  # this database may hold an earlier stand-in's ids
    sessions = arrive(study, market, get_user_model(), PARTICIPANTS, prefix=f"{tag}-")
    owe_bonuses(study, sessions, per_session=1, amount=BONUS)
    return study, market, [s.worker.external_id for s in sessions]


def _researcher(base_url: str) -> AdminBrowser:
    from django.contrib.auth import get_user_model

    from base.permissions import ensure_researcher_group

    username, password = f"payer-{secrets.token_hex(4)}", secrets.token_urlsafe(16)
    user = get_user_model().objects.create_user(username, password=password, is_staff=True, is_superuser=True)
    user.groups.add(ensure_researcher_group())
    browser = AdminBrowser(base_url)
    if not browser.login(username, password):
        raise RuntimeError("the researcher could not log in")
    return browser


def _paid_twice_cents(market, participants: list[str]) -> int:
    owed = OWED_CENTS
    paid = market.prolific_paid_cents()
    return sum(max(0, paid.get(pid, 0) - owed) for pid in participants)


def _scene(base_url: str, scene: str, seed: int) -> dict:
    study, market, participants = _scene_study(scene, seed)
    browser = _researcher(base_url)
    pay = f"/dashboard/markets/{study.slug}/pay/"
    market.record_lags = scene == "not paid, lagging"
    try:
        if scene == "409 after paying":
            market.fail("bonus.pay", "409-after")
            for _ in range(PRESSES):
                browser.post(pay, {})
        else:
            market.fail("bonus.pay", "500-after")
            browser.post(pay, {})
            from markets.models import BatchState, BonusBatch

            for batch in BonusBatch.objects.filter(connection__study=study, state=BatchState.PAYING):
                browser.post(f"/dashboard/markets/{study.slug}/batches/{batch.pk}/unpaid/", {})
            for _ in range(PRESSES - 1):
                browser.post(pay, {})
    finally:
        market.faults["bonus.pay"].clear()
        market.record_lags = False
    twice = _paid_twice_cents(market, participants)
    paid = sum(cents for pid, cents in market.prolific_paid_cents().items() if pid in set(participants))
    market.publish()
    return {"scene": scene, "paid_cents": paid, "paid_twice_cents": twice}


def run(base_url: str, *, seed: int = 0) -> dict:
    scenes = [_scene(base_url, scene, seed) for scene in SCENES]
    succeeded = sum(1 for scene in scenes if scene["paid_twice_cents"] > 0)
    cents = sum(scene["paid_twice_cents"] for scene in scenes)
    return {
        "attack": NAME,
        "tries": len(scenes),
        "succeeded": succeeded,
        "measure": "cents paid twice",
        "value": cents,
        "interval": wilson_interval(succeeded, len(scenes)),
        "at_chance_or_refused": cents == 0,
        "detail": "; ".join(
            f"{s['scene']}: {s['paid_cents']} c paid for {PARTICIPANTS * OWED_CENTS} c owed, {s['paid_twice_cents']} c twice"
            for s in scenes
        ),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    print(json.dumps(run(arguments.base_url, seed=arguments.seed), indent=2))
