"""Attack: a node token downloads snapshot files and manifests it holds no live lease for.

A GPU node holds a node token, which belongs to no team. This attack tries, per snapshot file
(train, dev, test and manifest.json) of two teams' snapshots:

  "fresh token"     a node token that never leased a run;
  "ended lease"     a token that leased a run on team A's snapshot and then failed it;
  "other snapshot"  a token with a live lease on a run of team A's snapshot, reading team B's.

A try succeeds when the platform answers 200 (the file's bytes). The one legitimate read, a live
lease reading its own run's snapshot, is checked too: it must answer 200, or the attack reports
the platform broken rather than safe.

Setup runs Django against the server's database (the server's environment: DATABASE_URL,
DATA_DIR, SECRET_KEY, ...): two teams, a small snapshot each, three node tokens, two runs.

    DATABASE_URL=... DATA_DIR=... SECRET_KEY=... \
        .venv/bin/python -m bench.attacks.node_snapshot_files --base-url http://127.0.0.1:8810
"""

import argparse
import json
import urllib.error
import urllib.request
import uuid

from bench.attacks.node_takeover import _call, _django, _lease, wilson

NAME = "node-snapshot-files"
CLAIM = "A node token reads snapshot files of runs it holds no live lease on (another team's included)."
FILES = ("train.jsonl", "dev_matched.jsonl", "test_matched.jsonl", "manifest.json")


def setup(seed=0):
    _django()
    from modeling.models import NodeToken, Snapshot
    from modeling.training.services import launch_training_run
    from teams.models import Team
    from tests.modeling.gpu_node.helpers import learnable_splits, served_snapshot

    tag = f"{seed}-{uuid.uuid4().hex[:8]}"
    team_a = Team.objects.create(slug=f"attack-a-{tag}", name=f"Attack A {tag}")
    team_b = Team.objects.create(slug=f"attack-b-{tag}", name=f"Attack B {tag}")
    snapshots = {}
    for name, team, offset in (("A", team_a, 0), ("B", team_b, 10)):
        snapshot = served_snapshot(learnable_splits(seed + offset, n_train=30, n_eval=6))
        Snapshot.objects.filter(pk=snapshot.pk).update(team=team)
        snapshots[name] = snapshot.pk
    keys = {role: NodeToken.issue(f"attack-{role}-{tag}")[1] for role in ("fresh", "ended", "live")}
    runs = {}
    for role in ("ended", "live"):
        run = launch_training_run(Snapshot.objects.get(pk=snapshots["A"]), "cbow", config={"epochs": 1}, enqueue=False)
        runs[role] = {"id": run.pk, "attempt": run.celery_task_id}
    return {"snapshots": snapshots, "keys": keys, "runs": runs}


def _status(base_url, key, snapshot_id, name):
    """The HTTP status of a node's download (the body, a file's bytes, is read and dropped)."""
    url = f"{base_url.rstrip('/')}/api/snapshots/{snapshot_id}/files/{name}"
    request = urllib.request.Request(url, headers={"Authorization": f"Worker {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def run(base_url, *, seed=0):
    known = setup(seed)
    keys, runs, snapshots = known["keys"], known["runs"], known["snapshots"]
    for role in ("ended", "live"):
        status, answer = _lease(base_url, keys[role], runs[role]["id"], runs[role]["attempt"], f"{role}@node")
        assert status == 200, (role, status, answer)
        runs[role]["claim"] = answer["claim"]
    ended = runs["ended"]
    _call(
        base_url,
        keys["ended"],
        "POST",
        f"/api/worker/runs/{ended['id']}/fail/",
        {"attempt": ended["attempt"], "claim": ended["claim"], "error": "done with it"},
    )
    tries = [("fresh token", "fresh", snapshot) for snapshot in ("A", "B")]
    tries += [("ended lease", "ended", snapshot) for snapshot in ("A", "B")]
    tries += [("other snapshot", "live", "B")]
    attempts, succeeded = 0, 0
    by_variant: dict[str, list[int]] = {}
    for variant, role, snapshot in tries:
        for name in FILES:
            status = _status(base_url, keys[role], snapshots[snapshot], name)
            attempts += 1
            succeeded += status == 200
            by_variant.setdefault(variant, []).append(status)
    own = [_status(base_url, keys["live"], snapshots["A"], name) for name in FILES]
    return {
        "attack": NAME,
        "tries": attempts,
        "succeeded": succeeded,
        "measure": "share of downloads without a live lease on the snapshot's run that got the file",
        "value": round(succeeded / attempts, 4),
        "interval": wilson(succeeded, attempts),
        "at_chance_or_refused": succeeded == 0 and all(status == 200 for status in own),
        "detail": "; ".join(f"{variant}: {sorted(set(codes))}" for variant, codes in by_variant.items())
        + f"; the live lease's own snapshot: {sorted(set(own))}",
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(run(args.base_url, seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
