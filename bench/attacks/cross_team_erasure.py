"""Attack: team B's owner reads or erases a participant of team A by their market id.

The privacy page (dashboard:privacy, docs/privacy.md) finds a participant by market id, downloads
everything held about them and erases them; a team's researchers may act on their own team's
participants only. Per round, B's owner (an owner of team B only; A's participant never worked for
B) tries:

  "found"       the page searched for A's participant's market id: does it offer them?
  "download"    the JSON download asked for with that id: is anything of A's participant in it?
  "erase"       the erasure posted with that id (confirmed): is A's participant's id hashed, or an
                erasure recorded?
  "told apart"  the page for A's participant's id against an id nobody has: do the answers differ
                (a foreign id must answer as an unknown one)?

A try succeeds when A's participant's data reaches B, B's post erases them, or the answers tell
B that the id is someone's. Setup runs Django against the server's database (same DATABASE_URL
as the server): two teams, A's dataset and study, A's participant with a session and a label, B's owner.

    DATABASE_URL=... .venv/bin/python -m bench.attacks.cross_team_erasure --base-url http://127.0.0.1:8806
"""

import argparse
import json
import re
import secrets
import urllib.parse
import uuid

from ._admin_client import AdminBrowser
from ._common import django_ready, wilson_interval

NAME = "cross-team-erasure"
CLAIM = "Another team's researcher finds, downloads or erases a team's participant by their market id."
VARIANTS = ("found", "download", "erase", "told apart")
ROUNDS = 3
CSRF_VALUE = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')


def setup(seed=0):
    django_ready()
    from django.contrib.auth import get_user_model

    from base.permissions import ensure_researcher_group
    from corpus.models import Dataset, Genre, Pair, Premise, Split, Worker
    from corpus.services import add_label, create_pairs
    from crowd.models import Study, StudySession
    from teams.models import Membership, Role, Team

    tag = f"{seed}-{uuid.uuid4().hex[:8]}"
    team_a = Team.objects.create(slug=f"erase-a-{tag}", name=f"Erasure A {tag}")
    team_b = Team.objects.create(slug=f"erase-b-{tag}", name=f"Erasure B {tag}")
    dataset = Dataset.objects.create(slug=f"erase-a-data-{tag}", name=f"erase-a-data-{tag}", team=team_a)
    genre = Genre.objects.order_by("pk").first()
    assert genre is not None
    premise = Premise.objects.create(dataset=dataset, genre=genre, split=Split.DEV, prompt_id=tag, text="A dog runs.")
    (pair,) = create_pairs(
        dataset,
        Split.DEV,
        [Pair(premise=premise, pair_id=tag, hypothesis="An animal runs.", author_label="entailment")],
        [["entailment"]],
    )
    users = get_user_model().objects
    market_id = f"A{uuid.uuid4().hex[:22]}"
    worker = Worker.objects.create(
        user=users.create_user(f"prolific-{market_id}"), market="prolific", external_id=market_id
    )
    study = Study.objects.create(slug=f"erase-a-{tag}", name="A's study", dataset=dataset, completion_code="A")
    StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{tag}")
    add_label(pair, "entailment", worker=worker)
    password = secrets.token_urlsafe(16)
    owner_b = users.create_user(f"erase-owner-b-{tag}", password=password, is_staff=True)
    owner_b.groups.add(ensure_researcher_group())
    Membership.objects.create(team=team_b, user=owner_b, role=Role.OWNER)
    return {"market_id": market_id, "worker": worker.pk, "login": (owner_b.username, password)}


def _erased(worker_pk):
    from corpus.models import Worker
    from privacy.models import ErasureRecord

    worker = Worker.objects.get(pk=worker_pk)
    return (
        worker.external_id.startswith("p~")
        or ErasureRecord.objects.filter(subject_hash__startswith="p~")
        .filter(counts__isnull=False, erased_by__username__startswith="erase-owner-b-")
        .exists()
    )


def _plain(page, market_id):
    """The page without what differs on every answer (the masked CSRF token) and the id asked for."""
    return CSRF_VALUE.sub("", page).replace(market_id, "ID")


def run(base_url, *, seed=0):
    known = setup(seed)
    browser = AdminBrowser(base_url)
    assert browser.login(*known["login"]), "B's owner could not log in"
    market_id = known["market_id"]
    quoted = urllib.parse.quote(market_id)
    by_variant: dict[str, list[bool]] = {variant: [] for variant in VARIANTS}
    for _ in range(ROUNDS):
        status, page = browser.get(f"/dashboard/privacy/?market_id={quoted}")
        by_variant["found"].append(status == 200 and "Found participant" in page)
        status, answer = browser.get(f"/dashboard/privacy/download.json?market_id={quoted}")
        by_variant["download"].append(status == 200 and market_id in answer)
        nobody = f"N{uuid.uuid4().hex[:22]}"
        unknown = browser.get(f"/dashboard/privacy/?market_id={nobody}")
        mine = browser.get(f"/dashboard/privacy/?market_id={quoted}")
        by_variant["told apart"].append(
            (mine[0], _plain(mine[1], market_id)) != (unknown[0], _plain(unknown[1], nobody))
        )
        # Last in the round: the refusal's message shows on the next page, and the comparison above
        # must not read it as a difference.
        browser.post("/dashboard/privacy/erase", {"market_id": market_id, "confirm": market_id, "reason": "attack"})
        by_variant["erase"].append(_erased(known["worker"]))
    tries = sum(len(outcomes) for outcomes in by_variant.values())
    succeeded = sum(sum(outcomes) for outcomes in by_variant.values())
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": succeeded,
        "measure": "share of tries where A's participant was found, read or erased by B, or told apart from nobody",
        "value": round(succeeded / tries, 4),
        "interval": wilson_interval(succeeded, tries),
        "at_chance_or_refused": succeeded == 0,
        "detail": "; ".join(f"{variant}: {sum(outcomes)}/{len(outcomes)}" for variant, outcomes in by_variant.items()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.base_url, seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
