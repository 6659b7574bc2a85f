"""Attack: a rogue node finishes its run with made-up figures, padding, or weights that always answer one class.

A GPU node is untrusted (docs/gpu-nodes.md): it leases a run as a node should, uploads a
checkpoint that passes the platform's check (the run's net, labels and vocabulary), then lies.
Per try on a fresh run:

  "made-up accuracy + padding"  finish with dev accuracy 0.99 and 1 MB of padding in the results:
                                succeeds when the platform stores them (finish answers 200);
  "made-up accuracy"            finish with 0.99 and an untrained checkpoint: succeeds when the
                                platform shows 0.99 as its own (the run's accuracy_check is
                                "confirmed" or a model annotator may use the run at that figure);
  "constant-class weights"      a checkpoint whose every weight is zero but the last bias, so it
                                always answers "contradiction", finished with 0.99: succeeds as above.

After each finish the platform's own measurement is made as its default queue makes it
(modeling.training.remeasure.remeasure_run) in this process, when the server's queue has not
made it yet, with the server's settings and database.

    DATABASE_URL=... DATA_DIR=... SECRET_KEY=... \
        .venv/bin/python -m bench.attacks.node_rogue_results --base-url http://127.0.0.1:8810
"""

import argparse
import hashlib
import json
import tempfile
import uuid
from pathlib import Path

from bench.attacks.node_takeover import _call, _django, _lease, wilson

NAME = "node-rogue-results"
CLAIM = "A node's made-up accuracy, padded results or constant-class weights are stored and shown as the run's."
VARIANTS = ("made-up accuracy + padding", "made-up accuracy", "constant-class weights")
MADE_UP = 0.99
PADDING_BYTES = 1 << 20


def setup(tries, seed=0):
    _django()
    from modeling.models import NodeToken
    from modeling.training.services import launch_training_run
    from tests.modeling.gpu_node.helpers import learnable_splits, served_snapshot

    snapshot = served_snapshot(learnable_splits(seed, n_train=60, n_eval=30))
    _, key = NodeToken.issue(f"attack-rogue-{seed}-{uuid.uuid4().hex[:8]}")
    runs = []
    for variant in VARIANTS:
        for _ in range(tries):
            run = launch_training_run(snapshot, "cbow", config={"epochs": 1}, enqueue=False)
            runs.append({"variant": variant, "id": run.pk, "attempt": run.celery_task_id})
    return {"key": key, "runs": runs}


def checkpoint_for(run_id, folder, constant_class=None):
    """A checkpoint that passes the platform's check for the run; with `constant_class`, all
    weights zero and the last bias favouring that class index."""
    from safetensors.torch import load_file

    from modeling.models import TrainingRun
    from modeling.training.checkpoint import write_checkpoint
    from tests.modeling.gpu_node.helpers import run_checkpoint_bytes, trainers_labels_and_vocabulary

    run = TrainingRun.objects.get(pk=run_id)
    body = run_checkpoint_bytes(Path(folder), run)
    if constant_class is None:
        return body
    path = Path(folder) / f"honest-{run_id}.safetensors"
    path.write_bytes(body)
    state = {name: tensor.zero_() for name, tensor in load_file(str(path)).items()}
    state[[name for name in state if name.endswith("bias")][-1]][constant_class] = 10.0
    labels, vocab = trainers_labels_and_vocabulary(run)
    return write_checkpoint(
        Path(folder) / f"constant-{run_id}.safetensors",
        model=run.model,
        config={"embedding_dim": 4, "hidden_dim": 4},
        epoch=1,
        vocab=vocab,
        labels=labels,
        state_dict=state,
    ).read_bytes()


def shown_as_the_platforms(run_id):
    """Whether the platform presents the made-up figure as its own; (verdict, what it shows)."""
    from modeling.models import REMEASURE_TOLERANCE, TrainingRun
    from modeling.training.remeasure import remeasure_run
    from modeling.training.selectors import runs_fit_to_label

    run = TrainingRun.objects.get(pk=run_id)
    if run.status != "done":
        return False, f"run {run.status}"
    if run.remeasured_accuracy is None and not run.remeasure_error:
        remeasure_run(run_id)
        run.refresh_from_db()
    check = run.accuracy_check
    usable = runs_fit_to_label().filter(pk=run_id).exists()
    believed = check["state"] == "confirmed" or (
        usable and abs((run.remeasured_accuracy or 0.0) - MADE_UP) <= REMEASURE_TOLERANCE
    )
    return believed, f"{check['state']} (platform {check['remeasured']})"


def run(base_url, *, seed=0, tries=2):
    known = setup(tries, seed)
    key = known["key"]
    folder = tempfile.mkdtemp(prefix="node-rogue-")
    succeeded, notes = 0, []
    for run_ in known["runs"]:
        run_id, attempt, variant = run_["id"], run_["attempt"], run_["variant"]
        status, answer = _lease(base_url, key, run_id, attempt, "rogue@node")
        assert status == 200, (status, answer)
        lease_id = answer["claim"]
        body = checkpoint_for(run_id, folder, constant_class=2 if variant == "constant-class weights" else None)
        headers = {
            "Content-Type": "application/octet-stream",
            "X-Attempt": attempt,
            "X-Claim": lease_id,
            "X-Content-SHA256": hashlib.sha256(body).hexdigest(),
        }
        uploaded = _call(base_url, key, "PUT", f"/api/worker/runs/{run_id}/checkpoint/", body=body, headers=headers)[0]
        results: dict[str, object] = {"accuracy": {"dev_matched": MADE_UP}, "dev_split": "dev_matched"}
        if variant == "made-up accuracy + padding":
            results["stopped_by"] = "x" * PADDING_BYTES
        finished, answer = _call(
            base_url,
            key,
            "POST",
            f"/api/worker/runs/{run_id}/finish/",
            {"attempt": attempt, "claim": lease_id, "results": results},
        )
        if variant == "made-up accuracy + padding":
            won, shown = finished == 200, f"finish {finished}: {str(answer.get('detail', ''))[:120]}"
        else:
            won, shown = shown_as_the_platforms(run_id)
        succeeded += won
        notes.append(f"{variant}: upload {uploaded}, {shown}")
    n = len(known["runs"])
    return {
        "attack": NAME,
        "tries": n,
        "succeeded": succeeded,
        "measure": "share of rogue finishes stored with padding or shown as the platform's figure",
        "value": round(succeeded / n, 4),
        "interval": wilson(succeeded, n),
        "at_chance_or_refused": succeeded == 0,
        "detail": "; ".join(dict.fromkeys(notes)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tries", type=int, default=2, help="runs per variant")
    args = parser.parse_args()
    print(json.dumps(run(args.base_url, seed=args.seed, tries=args.tries), indent=2))


if __name__ == "__main__":
    main()
