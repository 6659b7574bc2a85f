"""Attack: team B's owner starts an aggregation run on team A's dataset, and A's data decides B's
snapshot.

An aggregation form (dashboard:aggregation) not scoped by team lists every team's datasets and
starts a run on any slug posted, and a snapshot of "all datasets" checked across every team's
datasets lets one team's two-way dataset refuse every other team's all-datasets snapshot. Per round,
B's owner (an owner of team B only) tries:

  "form lists A"     the aggregation page: does it offer A's dataset?
  "run on A"         the form posted with A's dataset: is a run of A's dataset started?
  "blocked by A"     a snapshot of all of B's datasets (POST /api/snapshots/, B's API token):
                     refused because of A's two-way dataset ("different label schemes")?
  "A's run named"    a snapshot naming A's aggregation run as its filter: is the answer other than
                     for an id nobody has (A's run exists, its dataset or status said)?

A try succeeds when A's dataset reaches B or A's data decides B's answer. Setup runs Django against
the server's database (same DATABASE_URL as the server): two teams, A's three-way and two-way
datasets with a pair each and a finished run, B's three-way dataset with a pair, B's owner.

    DATABASE_URL=... .venv/bin/python -m bench.attacks.cross_team_aggregation --base-url http://127.0.0.1:8805
"""

import argparse
import json
import secrets
import urllib.error
import urllib.request
import uuid

from ._admin_client import AdminBrowser
from ._common import django_ready, wilson_interval

NAME = "cross-team-aggregation"
CLAIM = "Another team's owner starts a run on a team's dataset, or that team's data decides their snapshot."
VARIANTS = ("form lists A", "run on A", "blocked by A", "A's run named")
ROUNDS = 3


def setup(seed=0):
    django_ready()
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from base.permissions import ensure_researcher_group
    from corpus.models import Dataset, Genre, Pair, Premise, Split
    from corpus.services import create_pairs
    from quality.models import AggregationRun
    from teams.models import Membership, Role, Team

    tag = f"{seed}-{uuid.uuid4().hex[:8]}"
    team_a = Team.objects.create(slug=f"aggr-a-{tag}", name=f"Aggregation A {tag}")
    team_b = Team.objects.create(slug=f"aggr-b-{tag}", name=f"Aggregation B {tag}")
    genre = Genre.objects.order_by("pk").first()
    assert genre is not None
    datasets = {
        "a": Dataset.objects.create(slug=f"aggr-a-data-{tag}", name=f"aggr-a-data-{tag}", team=team_a),
        "a-two-way": Dataset.objects.create(
            slug=f"aggr-a-rte-{tag}", name=f"aggr-a-rte-{tag}", team=team_a, label_scheme="two_way"
        ),
        "b": Dataset.objects.create(slug=f"aggr-b-data-{tag}", name=f"aggr-b-data-{tag}", team=team_b),
    }
    for key, dataset in datasets.items():
        premise = Premise.objects.create(
            dataset=dataset, genre=genre, split=Split.DEV, prompt_id=f"{tag}-{key}", text="A man sleeps on a bench."
        )
        label = "neutral" if key == "a-two-way" else "entailment"
        pair = Pair(premise=premise, pair_id=f"{tag}-{key}", hypothesis="A man rests.", author_label=label)
        create_pairs(dataset, Split.DEV, [pair], [[label]])
    finished = AggregationRun.objects.create(dataset=datasets["a"], methods=["dawid_skene"], status="done")
    users = get_user_model().objects
    password = secrets.token_urlsafe(16)
    owner_b = users.create_user(f"aggr-owner-b-{tag}", password=password, is_staff=True)
    owner_b.groups.add(ensure_researcher_group())
    Membership.objects.create(team=team_b, user=owner_b, role=Role.OWNER)
    return {
        "dataset_a": datasets["a"].slug,
        "run_a": finished.pk,
        "token": Token.objects.create(user=owner_b).key,
        "login": (owner_b.username, password),
    }


def _runs_on(slug):
    from quality.models import AggregationRun

    return AggregationRun.objects.filter(dataset__slug=slug).count()


def _snapshot(base_url, token, payload):
    request = urllib.request.Request(
        base_url.rstrip("/") + "/api/snapshots/",
        data=json.dumps(payload).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def run(base_url, *, seed=0):
    known = setup(seed)
    browser = AdminBrowser(base_url)
    assert browser.login(*known["login"]), "B's owner could not log in"
    slug_a = known["dataset_a"]
    by_variant: dict[str, list[bool]] = {variant: [] for variant in VARIANTS}
    for _ in range(ROUNDS):
        by_variant["form lists A"].append(slug_a in browser.get("/dashboard/aggregation/")[1])
        before = _runs_on(slug_a)
        browser.post("/dashboard/aggregation/", {"dataset": slug_a, "methods": "dawid_skene"})
        by_variant["run on A"].append(_runs_on(slug_a) > before)
        status, answer = _snapshot(base_url, known["token"], {"datasets": [], "filters": {}})
        by_variant["blocked by A"].append(status == 400 and "different label schemes" in answer)
        named = _snapshot(base_url, known["token"], {"filters": {"aggregation_run": known["run_a"]}})
        nobody = 10**9
        unknown = _snapshot(base_url, known["token"], {"filters": {"aggregation_run": nobody}})
        by_variant["A's run named"].append(
            named[1].replace(str(known["run_a"]), "ID") != unknown[1].replace(str(nobody), "ID")
        )
    tries = sum(len(outcomes) for outcomes in by_variant.values())
    succeeded = sum(sum(outcomes) for outcomes in by_variant.values())
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": succeeded,
        "measure": "share of tries where A's dataset reached B or A's data decided B's answer",
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
