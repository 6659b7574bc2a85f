"""Attack: team B's owner previews team A's studies and is served A's premises and pairs.

A researcher's preview (crowd.preview) walks a study's tasks as a participant. A preview
start (/study/<slug>/preview/) that looks the study up by its slug alone lets any researcher
preview any team's study. Per round and per study of A (writing, validation), B's owner (a staff
account in the researchers group, an owner of team B only) tries:

  "ask"     the preview's page (GET): does it show A's study?
  "start"   the preview started (POST): is there a preview session of A's study for B?
  "served"  the task page the start leads to: does it show one of A's premises?

The preview is ended after each round. A try succeeds when A's study, session or premise reaches
B. Setup runs Django against the server's database (same DATABASE_URL as the server): two teams,
A's dataset with premises and pairs, A's two studies, and B's owner with a password.

    DATABASE_URL=... .venv/bin/python -m bench.attacks.cross_team_preview --base-url http://127.0.0.1:8805
"""

import argparse
import json
import secrets
import uuid

from ._admin_client import AdminBrowser
from ._common import django_ready, wilson_interval

NAME = "cross-team-preview"
CLAIM = "Another team's owner previews a team's study and is served its premises and pairs."
VARIANTS = ("ask", "start", "served")
ROUNDS = 3
KINDS = ("writing", "validation")


def setup(seed=0):
    django_ready()
    from django.contrib.auth import get_user_model

    from base.permissions import ensure_researcher_group
    from corpus.models import Dataset, Genre, Pair, Premise, Split
    from corpus.services import create_pairs
    from crowd.models import Study
    from teams.models import Membership, Role, Team

    tag = f"{seed}-{uuid.uuid4().hex[:8]}"
    team_a = Team.objects.create(slug=f"preview-a-{tag}", name=f"Preview A {tag}")
    team_b = Team.objects.create(slug=f"preview-b-{tag}", name=f"Preview B {tag}")
    dataset = Dataset.objects.create(slug=f"preview-data-{tag}", name=f"preview-data-{tag}", team=team_a)
    genre = Genre.objects.order_by("pk").first()
    assert genre is not None
    marker = f"Secret{uuid.uuid4().hex[:10]}"
    for number in range(6):
        premise = Premise.objects.create(
            dataset=dataset, genre=genre, split=Split.DEV, prompt_id=f"{tag}-{number}", text=f"{marker} sits {number}."
        )
        pair = Pair(
            premise=premise, pair_id=f"{tag}-{number}e", hypothesis=f"{marker} rests.", author_label="entailment"
        )
        if number % 2:
            create_pairs(dataset, Split.DEV, [pair], [["entailment"]])
    studies = {
        kind: Study.objects.create(
            slug=f"preview-{kind}-{tag}",
            name=f"Preview {kind} {tag}",
            dataset=dataset,
            team=team_a,
            task_kind=kind,
            completion_code="C",
        )
        for kind in KINDS
    }
    users = get_user_model().objects
    password = secrets.token_urlsafe(16)
    owner_b = users.create_user(f"preview-owner-b-{tag}", password=password, is_staff=True)
    owner_b.groups.add(ensure_researcher_group())
    Membership.objects.create(team=team_b, user=owner_b, role=Role.OWNER)
    names = {study.slug: study.name for study in studies.values()}
    return {
        "studies": list(names),
        "names": names,
        "marker": marker,
        "owner": owner_b.pk,
        "login": (owner_b.username, password),
    }


def _previews_of(owner, slug):
    from crowd.models import StudySession

    return StudySession.objects.filter(study__slug=slug, worker__user_id=owner, is_preview=True).exists()


def run(base_url, *, seed=0):
    known = setup(seed)
    browser = AdminBrowser(base_url)
    assert browser.login(*known["login"]), "B's owner could not log in"
    by_variant: dict[str, list[bool]] = {variant: [] for variant in VARIANTS}
    for _ in range(ROUNDS):
        for slug in known["studies"]:
            url = f"/study/{slug}/preview/"
            status, page = browser.get(url)
            by_variant["ask"].append(status == 200 and known["names"][slug] in page)
            _, served = browser.post(url, {})  # followed to the study's next task
            started = _previews_of(known["owner"], slug)
            by_variant["start"].append(started)
            by_variant["served"].append(started and known["marker"] in served)
            browser.post("/preview/end/", {})
    tries = sum(len(outcomes) for outcomes in by_variant.values())
    succeeded = sum(sum(outcomes) for outcomes in by_variant.values())
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": succeeded,
        "measure": "share of tries where A's study, a preview of it or its premises reached B",
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
