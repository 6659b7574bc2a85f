"""Attack: team B's owner reaches team A's crowd workers and dataset names through /admin/.

Workers are shared by the teams; a worker admin not scoped by team lists every worker to every
researcher and lets any of them change a worker's market id and trust flag (team A's next bonus
then goes to the id B typed). Per round, B's owner (a staff account in the researchers group, an
owner of team B only) tries:

  "list workers"    the worker list searched for A's participant's Prolific id: listed?
  "open worker"     A's participant's change page: does it show the id?
  "edit market id"  the change page's form posted back with B's id and the trust flag: stored?
  "filter names"    the pair and session lists: does a filter offer A's dataset or study by name?

A try succeeds when A's id or names reach B, or the worker row changed. Setup runs Django against
the server's database (same DATABASE_URL as the server): two teams, A's dataset, study, participant
with a session, and B's owner with a password.

    DATABASE_URL=... .venv/bin/python -m bench.attacks.admin_cross_team --base-url http://127.0.0.1:8806
"""

import argparse
import json
import secrets
import uuid

from ._admin_client import AdminBrowser, form_fields
from ._common import django_ready, wilson_interval

NAME = "admin-cross-team"
CLAIM = "Another team's owner reads a team's workers' market ids, changes one, or reads its dataset names in the admin."
VARIANTS = ("list workers", "open worker", "edit market id", "filter names")
ROUNDS = 3


def setup(seed=0):
    django_ready()
    from django.contrib.auth import get_user_model

    from base.permissions import ensure_researcher_group
    from corpus.models import Dataset, Worker
    from crowd.models import Study, StudySession, TaskKind
    from teams.models import Membership, Role, Team

    tag = f"{seed}-{uuid.uuid4().hex[:8]}"
    team_a = Team.objects.create(slug=f"admin-a-{tag}", name=f"Admin A {tag}")
    team_b = Team.objects.create(slug=f"admin-b-{tag}", name=f"Admin B {tag}")
    dataset = Dataset.objects.create(slug=f"secret-data-{tag}", name=f"secret-data-{tag}", team=team_a)
    study = Study.objects.create(
        slug=f"secret-study-{tag}",
        name=f"secret-study-{tag}",
        dataset=dataset,
        team=team_a,
        task_kind=TaskKind.VALIDATION,
        completion_code="C",
    )
    users = get_user_model().objects
    participant = users.create_user(f"participant-{tag}")
    worker = Worker.objects.create(user=participant, market="prolific", external_id=f"PID{uuid.uuid4().hex[:20]}")
    StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{tag}")
    password = secrets.token_urlsafe(16)
    owner_b = users.create_user(f"owner-b-{tag}", password=password, is_staff=True)
    owner_b.groups.add(ensure_researcher_group())
    Membership.objects.create(team=team_b, user=owner_b, role=Role.OWNER)
    return {
        "worker": worker.pk,
        "external_id": worker.external_id,
        "names": [dataset.name, study.name],
        "login": (owner_b.username, password),
    }


def _worker_row(pk):
    from corpus.models import Worker

    return Worker.objects.filter(pk=pk).values_list("market", "external_id", "is_trusted").first()


def run(base_url, *, seed=0):
    known = setup(seed)
    browser = AdminBrowser(base_url)
    assert browser.login(*known["login"]), "B's owner could not log in to the admin"
    pid, worker = known["external_id"], known["worker"]
    change = f"/admin/corpus/worker/{worker}/change/"
    by_variant: dict[str, list[bool]] = {variant: [] for variant in VARIANTS}
    for _ in range(ROUNDS):
        by_variant["list workers"].append(
            f">{pid}<" in browser.get(f"/admin/corpus/worker/?q={pid}")[1]
        )  # a row, not the search box
        status, page = browser.get(change)
        by_variant["open worker"].append(pid in page)
        before = _worker_row(worker)
        fields = form_fields(page) if status == 200 else {}
        fields.update({"external_id": f"B-{uuid.uuid4().hex[:8]}", "market": "prolific", "is_trusted": "on"})
        browser.post(change, fields)
        after = _worker_row(worker)
        by_variant["edit market id"].append(after != before)
        if after != before:  # put it back, so the next round tries against A's own id again
            from corpus.models import Worker

            Worker.objects.filter(pk=worker).update(market=before[0], external_id=before[1], is_trusted=before[2])
        lists = browser.get("/admin/corpus/pair/")[1] + browser.get("/admin/crowd/studysession/")[1]
        by_variant["filter names"].append(any(name in lists for name in known["names"]))
    tries = sum(len(outcomes) for outcomes in by_variant.values())
    succeeded = sum(sum(outcomes) for outcomes in by_variant.values())
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": succeeded,
        "measure": "share of tries where A's worker id or names reached B, or A's worker row changed",
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
