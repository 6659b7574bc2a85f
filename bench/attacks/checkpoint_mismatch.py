"""Attack: a node finishes its run on a checkpoint that is not the run's: other labels, another vocabulary.

The node holds the run's lease honestly (its own token, the attempt its broker message carried)
and uploads a checkpoint that is a well-formed safetensors file of the run's net, every tensor of
the shape its own header asks for, but:

  "two-way labels"     classes entailed / not-entailed on a three-way snapshot;
  "yes/no/maybe"       three classes, none of them the snapshot's;
  "other vocabulary"   the run's labels, and as many words as the run's vocabulary, but other words.

Whoever then reads the run (an adversarial round's target, a researcher's download) gets a model
that answers in labels the data never had, or reads every sentence through the wrong words. A
try succeeds when the upload is stored (201). As a control, an honest upload (the labels and the
vocabulary the trainer builds from the snapshot) is sent on a run of its own each try; it must be
stored, so a platform that refuses everything shows up in the detail.

Setup runs Django against the server's database (the server's environment: DATABASE_URL,
DATA_DIR, SECRET_KEY, ...): a small snapshot where the server serves it, a node token, the runs.

    DATABASE_URL=... DATA_DIR=... SECRET_KEY=... \
        .venv/bin/python -m bench.attacks.checkpoint_mismatch --base-url http://127.0.0.1:8810
"""

import argparse
import hashlib
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench.attacks._common import django_ready, wilson_interval
from bench.attacks.node_takeover import _call, _lease

NAME = "checkpoint-mismatch"
CLAIM = "A node's checkpoint with labels or a vocabulary that are not its run's is stored as the run's."
VARIANTS = ("two-way labels", "yes/no/maybe", "other vocabulary")
CONTROL = "honest"
CONFIG = {"epochs": 1, "embedding_dim": 16, "hidden_dim": 16}


def setup(tries: int, seed: int) -> dict[str, Any]:
    django_ready()
    from modeling.models import NodeToken
    from modeling.training.services import launch_training_run
    from tests.modeling.gpu_node.helpers import learnable_splits, served_snapshot

    snapshot = served_snapshot(learnable_splits(seed, n_train=40, n_eval=8))
    _, key = NodeToken.issue(f"attack-mismatch-{seed}-{uuid.uuid4().hex[:8]}")
    runs = []
    for variant in (*VARIANTS, CONTROL):
        for _ in range(tries):
            run = launch_training_run(snapshot, "cbow", config=CONFIG, enqueue=False)
            runs.append({"variant": variant, "id": run.pk, "attempt": run.celery_task_id})
    labels, vocab = the_runs_labels_and_vocabulary(snapshot.directory)
    return {"key": key, "runs": runs, "labels": labels, "vocab": vocab}


def the_runs_labels_and_vocabulary(folder: str) -> tuple[list[str], list[str]]:
    """What the trainer would write (modeling.training.loop.train): the snapshot's label scheme and
    the vocabulary built from its gold-labelled train pairs."""
    from modeling.training.data import Vocab, load_snapshot
    from modeling.training.loop import select_train

    data = load_snapshot(folder)
    primary, secondary = select_train(data.train, CONFIG)
    return list(data.labels), Vocab.build(primary + secondary).itos


def checkpoint(path: Path, labels: list[str], vocab: list[str]) -> bytes:
    from modeling.nets import build_net
    from modeling.training.checkpoint import write_checkpoint

    hyper = {"embedding_dim": CONFIG["embedding_dim"], "hidden_dim": CONFIG["hidden_dim"]}
    net = build_net("cbow", len(vocab), num_classes=len(labels), **hyper)
    return write_checkpoint(
        path, model="cbow", config=hyper, epoch=1, vocab=vocab, labels=labels, state_dict=net.state_dict()
    ).read_bytes()


def forged(variant: str, labels: list[str], vocab: list[str]) -> tuple[list[str], list[str]]:
    if variant == "two-way labels":
        return ["entailed", "not-entailed"], vocab
    if variant == "yes/no/maybe":
        return ["yes", "no", "maybe"], vocab
    if variant == "other vocabulary":
        return labels, vocab[:2] + [f"w{i}" for i in range(len(vocab) - 2)]
    return labels, vocab


def upload(base_url: str, key: str, run_id: int, attempt: str, lease_id: str, body: bytes) -> tuple[int, str]:
    headers = {
        "Content-Type": "application/octet-stream",
        "X-Attempt": attempt,
        "X-Claim": lease_id,
        "X-Content-SHA256": hashlib.sha256(body).hexdigest(),
    }
    status, answer = _call(base_url, key, "PUT", f"/api/worker/runs/{run_id}/checkpoint/", body=body, headers=headers)
    return status, str(answer.get("detail", ""))


def run(base_url: str, *, seed: int = 0, tries: int = 3) -> dict:
    known = setup(tries, seed)
    key, labels, vocab = known["key"], known["labels"], known["vocab"]
    scratch = Path(tempfile.mkdtemp(prefix="checkpoint-mismatch-"))
    succeeded, n, controls_stored, notes = 0, 0, 0, []
    for index, run_ in enumerate(known["runs"]):
        variant = run_["variant"]
        status, answer = _lease(base_url, key, run_["id"], run_["attempt"], "mismatch@node")
        if status != 200:
            notes.append(f"{variant}: lease {status}")
            continue
        body = checkpoint(scratch / f"{index}.safetensors", *forged(variant, labels, vocab))
        stored, detail = upload(base_url, key, run_["id"], answer["attempt"], answer["claim"], body)
        if variant == CONTROL:
            controls_stored += stored == 201
        else:
            n += 1
            succeeded += stored == 201
        why = detail.split(": ", 1)[-1]  # the reason, without the run's id, so equal refusals read once
        notes.append(f"{variant}: {stored}{' ' + why[:110] if why else ''}")
    return {
        "attack": NAME,
        "tries": n,
        "succeeded": succeeded,
        "measure": "share of mismatching checkpoints stored as the run's",
        "value": round(succeeded / n, 4) if n else None,
        "interval": wilson_interval(succeeded, n),
        "at_chance_or_refused": succeeded == 0 and controls_stored == tries,
        "detail": f"honest uploads stored {controls_stored}/{tries}; " + "; ".join(dict.fromkeys(notes)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tries", type=int, default=3, help="runs per variant")
    args = parser.parse_args()
    print(json.dumps(run(args.base_url, seed=args.seed, tries=args.tries), indent=2))


if __name__ == "__main__":
    main()
