"""Benchmark: a GPU node fetching a MultiNLI-size snapshot over the API, and the checkpoints it sends back.

    .venv/bin/python bench/gpu_node_fetch.py --pairs 433000

1. Writes a synthetic MultiNLI-size snapshot (train + dev/test matched/mismatched, JSONL with
   parses as the export writes them, TSV twins, manifest) into a fresh platform DATA_DIR; the
   words follow a Zipf law over 150k word types, so the vocabulary is MultiNLI-like too.
2. Serves it with gunicorn (2 workers) on a throwaway PostgreSQL database holding the snapshot's
   rows and a node token (bench_gpu_node_fetch_<pid> on the server DATABASE_URL names, or the
   embedded cluster under scripts/with_database.py; dropped at the end: bench/throwaway_database.py).
3. As a GPU node (no Django: modeling/training/remote.py + snapshot_cache.py), fetches it into an
   empty cache (download + per-file SHA-256: what a first run does), then verifies the cached copy
   as a later run does before training. Baselines in the same run: copying the same files on this
   disk, and hashing them.
4. Sizes of a CBOW and an ESIM checkpoint at the default config (300-d) with the vocabulary of
   this snapshot's train file, written exactly as runs write them (loop.save_checkpoint's dict).
"""

import argparse
import hashlib
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.throwaway_database import require_server, throwaway_database  # noqa: E402
from modeling.snapshots.format import (  # noqa: E402
    JSONL_KEYS,
    build_manifest,
    sha256_of_file,
    training_files,
    verify_snapshot,
    write_manifest,
)
from modeling.training.remote import PlatformClient  # noqa: E402
from modeling.training.snapshot_cache import SnapshotCache  # noqa: E402

SPLITS = {  # MultiNLI 1.0's sizes, scaled to --pairs
    "train": 392_702,
    "dev_matched": 9_815,
    "dev_mismatched": 9_832,
    "test_matched": 9_796,
    "test_mismatched": 9_847,
}
LABELS = ("entailment", "neutral", "contradiction")
GENRES = ("fiction", "government", "slate", "telephone", "travel")


def word_list(types, rng):
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < types:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(2, 10))))
    return sorted(words)


def sentence(rng, words, weights, mean):
    n = max(1, min(70, int(rng.expovariate(1.0 / mean)) + 2))
    return rng.choices(words, cum_weights=weights, k=n)


def parses(tokens):
    binary = "( " + " ".join(f"( {w} )" if i % 3 == 0 else w for i, w in enumerate(tokens)) + " . )"
    tree = "(ROOT (S " + " ".join(f"(NN {w})" for w in tokens) + " (. .)))"
    return binary, tree


def write_snapshot(folder, pairs, seed=0):
    rng = random.Random(seed)
    words = word_list(150_000, rng)
    cumulative, total = [], 0.0
    for rank in range(1, len(words) + 1):
        total += 1.0 / rank**1.07
        cumulative.append(total)
    scale = pairs / sum(SPLITS.values())
    folder.mkdir(parents=True)
    files, rows_total = [], 0
    for split, full in SPLITS.items():
        n = max(1, int(full * scale))
        rows_total += n
        with open(folder / f"{split}.jsonl", "w") as jsonl, open(folder / f"{split}.tsv", "w") as tsv:
            tsv.write(
                "gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\t"
                "sentence1\tsentence2\tpromptID\tpairID\tgenre\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\n"
            )
            for i in range(n):
                premise, hypothesis = sentence(rng, words, cumulative, 20), sentence(rng, words, cumulative, 9)
                (pb, pp), (hb, hp) = parses(premise), parses(hypothesis)
                label = rng.choice(LABELS)
                labels = [label] * (5 if split != "train" else 1)
                row = {
                    "annotator_labels": labels,
                    "genre": GENRES[i % 5],
                    "gold_label": label,
                    "pairID": f"{split}-{i}e",
                    "promptID": f"{split}-{i // 3}",
                    "sentence1": " ".join(premise) + ".",
                    "sentence1_binary_parse": pb,
                    "sentence1_parse": pp,
                    "sentence2": " ".join(hypothesis) + ".",
                    "sentence2_binary_parse": hb,
                    "sentence2_parse": hp,
                    "dataset": "bench",
                }
                jsonl.write(json.dumps({k: row[k] for k in JSONL_KEYS}, ensure_ascii=False) + "\n")
                tsv.write(
                    "\t".join(
                        [
                            label,
                            pb,
                            hb,
                            pp,
                            hp,
                            row["sentence1"],
                            row["sentence2"],
                            row["promptID"],
                            row["pairID"],
                            row["genre"],
                            *labels,
                            *[""] * (5 - len(labels)),
                        ]
                    )
                    + "\n"
                )
        for name in (f"{split}.jsonl", f"{split}.tsv"):
            path = folder / name
            files.append(
                {"name": name, "split": split, "rows": n, "bytes": path.stat().st_size, "sha256": sha256_of_file(path)}
            )
    files.sort(key=lambda f: f["name"])
    manifest = build_manifest(1, ["bench"], {}, rows_total, files)
    write_manifest(folder, manifest)
    return manifest


SETUP = """
from base.long_tasks import JobStatus
from modeling.models import Snapshot, SnapshotFile, NodeToken
import json, sys
manifest = json.load(open(sys.argv[1]))
snapshot = Snapshot.objects.create(pk=1, status=JobStatus.DONE, directory=sys.argv[2], datasets=["bench"],
                                   content_hash=manifest["content_hash"], row_count=manifest["rows"])
SnapshotFile.objects.bulk_create(SnapshotFile(snapshot=snapshot, **f) for f in manifest["files"])
print(NodeToken.issue("bench-node")[1])
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(action):
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def checkpoint_sizes(train_file):
    from modeling.nets import build_net
    from modeling.training.checkpoint import write_checkpoint
    from modeling.training.config import resolve_config
    from modeling.training.data import Vocab, read_jsonl

    vocab = Vocab.build(read_jsonl(train_file))
    sizes = {}
    for model in ("cbow", "esim"):
        config = resolve_config(model, {})
        hyper = {k: config[k] for k in ("embedding_dim", "hidden_dim", "dropout", "mlp_layers")}
        net = build_net(model, len(vocab), **hyper)
        # The file loop.save_checkpoint writes.
        with tempfile.TemporaryDirectory() as scratch:
            path = write_checkpoint(
                Path(scratch) / f"{model}.safetensors",
                model=model,
                config=config,
                epoch=1,
                vocab=vocab.itos,
                labels=["entailment", "neutral", "contradiction"],
                state_dict=net.state_dict(),
            )
            size = path.stat().st_size
        params = sum(p.numel() for p in net.parameters())
        embedding = net.embedding.weight.numel()
        sizes[model] = (size, params, embedding)
    return len(vocab), sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=433_000)
    parser.add_argument("--no-checkpoints", action="store_true")
    args = parser.parse_args()
    require_server()
    work = Path(tempfile.mkdtemp(prefix="gpu-node-bench-"))
    try:
        folder = work / "platform" / "snapshots" / "1"
        manifest, seconds = timed(lambda: write_snapshot(folder, args.pairs))
        needed = training_files(manifest)
        jsonl_bytes = sum(f["bytes"] for f in manifest["files"] if f["name"] in needed)
        all_bytes = sum(f["bytes"] for f in manifest["files"])
        print(
            f"snapshot: {manifest['rows']:,} pairs, {all_bytes / 2**20:.0f} MiB in all, "
            f"{jsonl_bytes / 2**20:.0f} MiB of JSONL a node fetches (written in {seconds:.0f} s)"
        )
        with throwaway_database("gpu_node_fetch") as database_url:
            measure(args, work, folder, manifest, database_url)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args, work, folder, manifest, database_url):
    """Steps 2 to 4: the platform on `database_url` (stopped before the database is dropped), the fetch, the checkpoints."""
    platform_data, node_data = work / "platform", work / "node"
    needed = training_files(manifest)
    jsonl_bytes = sum(f["bytes"] for f in manifest["files"] if f["name"] in needed)
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        DATA_DIR=str(platform_data),
        DJANGO_SETTINGS_MODULE="annotation_site.settings",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
    )
    for key in ("CELERY_BROKER_URL", "CACHE_URL", "PLATFORM_URL", "NODE_TOKEN"):
        env.pop(key, None)
    python = sys.executable
    gunicorn = None
    try:
        (work / "manifest.json").write_text(json.dumps(manifest))
        key = (
            subprocess.run(
                [
                    python,
                    "manage.py",
                    "shell",
                    "-c",
                    SETUP.replace("sys.argv[1]", repr(str(work / "manifest.json"))).replace(
                        "sys.argv[2]", repr(str(folder))
                    ),
                ],
                cwd=REPO,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        port = free_port()
        gunicorn = subprocess.Popen(
            [
                str(Path(python).parent / "gunicorn"),
                "annotation_site.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
                "--timeout",
                "300",
                "--preload",
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = PlatformClient(f"http://127.0.0.1:{port}", key)
        for _ in range(100):
            try:
                client.call("GET", "api/worker/runs/1/", retries=0)
            except Exception as exc:
                if "404" in str(exc):
                    break
                time.sleep(0.3)
        for _ in range(4):  # a warm server, as in production: both workers have answered once
            client.download("api/snapshots/1/files/manifest.json", work / "warm-up")
            (work / "warm-up").unlink()
        print(f"platform: gunicorn, 2 workers, PostgreSQL, 127.0.0.1:{port}")

        cache = SnapshotCache(node_data / "snapshot-cache", 50 * 2**30)

        def fetch(name, part):
            return client.download(f"api/snapshots/1/files/{name}", part)

        (cached, report), fetch_s = timed(lambda: cache.get(manifest["content_hash"], fetch))
        _, verify_s = timed(lambda: verify_snapshot(cached, manifest["content_hash"], names=set(needed)))
        (_, hit), hit_s = timed(lambda: cache.get(manifest["content_hash"], fetch))
        assert hit["source"] == "cache"

        copy_dir = work / "copy"
        copy_dir.mkdir()
        _, copy_s = timed(lambda: [shutil.copyfile(folder / n, copy_dir / n) for n in [*needed, "manifest.json"]])

        def hash_all():
            for name in needed:
                digest = hashlib.sha256()
                with open(copy_dir / name, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(chunk)

        _, hash_s = timed(hash_all)
        mib = jsonl_bytes / 2**20
        print(
            f"first run: fetch over HTTP, each file's SHA-256 checked as it lands (all the verification a fresh "
            f"fetch needs): {fetch_s:6.2f} s  {mib / fetch_s:5.0f} MiB/s  ({report['bytes_downloaded'] / 2**20:.0f} MiB received)"
        )
        print(
            f"later runs: cache hit {hit_s:.3f} s + verification before training (manifest, content hash, SHA-256 "
            f"per file): {verify_s:6.2f} s  {mib / verify_s:5.0f} MiB/s"
        )
        print(
            f"baseline: copy the same files on this disk {copy_s:6.2f} s, SHA-256 of them {hash_s:6.2f} s -> the fetch "
            f"is {fetch_s / (copy_s + hash_s):.2f}x copy + hash; the verification {verify_s / hash_s:.2f}x hashing alone"
        )
        if not args.no_checkpoints:
            vocab, sizes = checkpoint_sizes(folder / "train.jsonl")
            for model, (size, params, embedding) in sizes.items():
                print(
                    f"checkpoint {model:5s} default config, vocabulary {vocab:,}: {size / 2**20:7.1f} MiB "
                    f"({params:,} parameters, {embedding / params:.0%} of them the embedding)"
                )
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(timeout=30)


if __name__ == "__main__":
    main()
