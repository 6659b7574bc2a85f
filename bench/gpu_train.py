"""GPU training benchmark, one command: today's loop against the old one, and a genre matrix packed onto one GPU.

    .venv/bin/python bench/gpu_train.py [--tiny] [--dim 300] [--large-batch 512] [--steps 200]
        [--models cbow,bilstm,esim,hypothesis_only] [--matrix-pairs 392702] [--no-matrix]

Printed, all measured in this run (no figure from elsewhere):
  1. pairs/s of each model at batch 32 (the papers') and at a large batch, for
       old  the legacy loop, copied below (LegacyTrainer): batches collated in Python and
            copied to the device per step, fp16 autocast with a GradScaler, unfused Adam, the loss
            read (a synchronisation) after every step;
       new  modeling/training: the training set resident on the device, index-slice batches, bf16
            autocast (fp16 + scaler where the GPU lacks bf16), fused Adam, the loss summed on the device;
     and new ÷ old. Both use today's nets, whose masks come from the token ids (the old nets copied
     the lengths to the device for them, one more synchronisation per step that old here no longer pays).
  2. GPU busy share of each loop: CUDA kernel time ÷ wall time over 50 steps, from torch.profiler;
  3. peak GPU memory of each model's run (torch.cuda.max_memory_allocated);
  4. a genre matrix: 11 single-genre ESIM runs + the mixed run, 1 epoch each, on synthetic data of
     MultiNLI's size (392,702 training pairs over 11 genres), one after another in one process, then
     all 12 at once in separate processes on the same GPU (as TRAINING_RUNS_PER_NODE=12 runs them);
     the packed wall time is from when every process is ready to when the last one ends.
Without CUDA (or with --tiny) it runs a tiny version on the CPU, says so, and prints no GPU figure:
that checks the script, not the hardware. Results of a GPU run go in bench/RESULTS-*.md.
"""

import argparse
import json
import math
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch
from torch import nn

from modeling.training.data import SnapshotData, Vocab, encode_examples, example_from_row, make_batches, sort_length
from modeling.training.device_data import DeviceTrainSet, padded_ids
from modeling.training.graphed import GraphedStep
from modeling.training.loop import (
    Trainer,
    describe_device,
    resolve_config,
    seed_everything,
    sort_by,
    train,
)
from modeling.training.packed import train_packed
from modeling.training.synthetic import synthetic_rows

MATRIX_GENRES = 11
MULTINLI_TRAIN_PAIRS = 392_702


class LegacyTrainer(Trainer):
    """The legacy training step (modeling/training/loop.py at a42dd6d)."""

    def __init__(self, model, config, vocab, device):
        super().__init__(model, config, vocab, device=device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config["lr"])  # unfused
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.amp_dtype = torch.float16 if self.use_amp else None

    def train_step(self, batch):
        self.net.train()
        batch = batch.to(self.device)
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast():
            logits = self.net(batch.premise, batch.premise_lengths, batch.hypothesis, batch.hypothesis_lengths)
            loss = self.loss_fn(logits.float(), batch.labels)
        self.scaler.scale(loss).backward()
        if self.config["grad_clip"]:
            self.scaler.unscale_(self.optimizer)
            nn.utils.clip_grad_norm_(self.net.parameters(), self.config["grad_clip"])
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return float(loss.detach())


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class OldLoop:
    """Host batches, made per epoch as loop.train made them, each collated and copied at its step."""

    def __init__(self, model, config, examples, vocab, device):
        self.trainer = LegacyTrainer(model, config, vocab, device)
        self.model, self.config, self.examples = model, config, examples
        self.rng = random.Random(0)

    def batches(self):
        while True:
            yield from make_batches(
                self.examples, self.config["batch_size"], rng=self.rng, length=sort_length(self.model)
            )

    def run(self, steps, batches):
        pairs = 0
        for _ in range(steps):
            batch = next(batches)
            self.trainer.train_step(batch)
            pairs += len(batch)
        return pairs


class NewLoop:
    """modeling/training as loop.train runs it: device-resident set, loss summed on the device."""

    def __init__(self, model, config, examples, vocab, device):
        self.trainer = Trainer(model, config, vocab, device=device)
        self.model, self.config = model, config
        self.train_set = DeviceTrainSet(examples, [], device, sort_by=sort_by(model))
        self.rng = random.Random(0)

    def batches(self):
        while True:
            yield from self.train_set.epoch(self.config["batch_size"], self.rng)

    def run(self, steps, batches):
        pairs = 0
        loss_sum = torch.zeros((), device=self.trainer.device)
        for _ in range(steps):
            batch = next(batches)
            loss_sum += self.trainer.train_step(batch) * len(batch)
            pairs += len(batch)
        float(loss_sum)  # read once, as the loop does when it reports
        return pairs


class GraphedLoop:
    """modeling/training/graphed.py: fixed shapes, each shape's step a CUDA graph (eager on a CPU).

    `compiled`: the same fixed-shape step without hand capture, the net under
    torch.compile(mode="reduce-overhead"), which captures CUDA graphs itself."""

    def __init__(self, model, config, examples, vocab, device, compiled=False):
        self.trainer = Trainer(model, config, vocab, device=device)
        self.config = config
        train_set = DeviceTrainSet(examples, [], device, sort_by=sort_by(model))
        capture = device.type == "cuda" and not compiled and self.trainer.amp_dtype != torch.float16
        self.step = GraphedStep(self.trainer, train_set, config["batch_size"], graphs=capture)
        if compiled:
            self.step.net = torch.compile(self.trainer.net, mode="reduce-overhead", dynamic=False)
        self.rng = random.Random(0)

    def batches(self):
        while True:
            yield from self.step.epoch(self.rng)

    def run(self, steps, batches):
        pairs = sum(next(batches) for _ in range(steps))
        self.step.take_totals()  # read once, as the loop does when it reports
        return pairs


LOOPS = {"old": OldLoop, "new": NewLoop, "graphed": GraphedLoop}


class Report:
    """Each figure printed as soon as it is measured and kept in a JSON file rewritten after every row,
    so a call cut off by its time limit still returns what it finished."""

    def __init__(self, path, device):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.data: dict[str, Any] = {
            "device": describe_device(device),
            "torch": torch.__version__,
            "rows": [],
            "matrix": [],
        }
        self.save()

    def add(self, section, row):
        self.data[section].append(row)
        self.save()

    def save(self):
        self.path.write_text(json.dumps(self.data, indent=1))


def default_json_path():
    out = os.environ.get("OUT")
    return (
        str(Path(out) / "gpu_train.json")
        if out
        else str(Path(__file__).resolve().parent.parent / "var" / "gpu_train.json")
    )


def measure(loop, steps, device, profile=False):
    """(pairs/s, GPU busy share or None, peak GiB or None) over `steps` steps after a warm-up."""
    batches = loop.batches()
    loop.run(min(10, steps), batches)  # allocations, cuDNN autotuning
    synchronize(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    started = time.perf_counter()
    pairs = loop.run(steps, batches)
    synchronize(device)
    rate = pairs / (time.perf_counter() - started)
    busy = peak = None
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device) / 2**30
        if profile:
            busy = busy_share(loop, batches, min(50, steps), device)
    return rate, busy, peak


def busy_share(loop, batches, steps, device):
    from torch.profiler import ProfilerActivity, profile

    synchronize(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        started = time.perf_counter()
        loop.run(steps, batches)
        synchronize(device)
        wall = time.perf_counter() - started
    # The union of the GPU's activity intervals (kernels, copies), so overlapping streams count once.
    spans = sorted(
        (event.time_range.start, event.time_range.end)
        for event in prof.events()
        if event.device_type == torch.autograd.DeviceType.CUDA and not getattr(event, "is_user_annotation", False)
    )
    busy_us, reach = 0.0, None
    for start, end in spans:
        if reach is None or start > reach:
            busy_us, reach = busy_us + (end - start), end
        elif end > reach:
            busy_us, reach = busy_us + (end - reach), end
    return min(1.0, busy_us / 1e6 / wall)


def per_model(args, device, report, deadline):
    rows = synthetic_rows(args.pairs, seed=0)
    examples = [example_from_row(row) for row in rows]
    vocab = Vocab.build(examples)
    encode_examples(examples, vocab)
    loops = args.loops.split(",")
    models = args.models.split(",")
    print(
        f"\n1-3. per model: {len(examples)} synthetic MultiNLI-shaped pairs (vocabulary {len(vocab)}), "
        f"{args.dim}-d, dropout and lr as the papers; loops: {', '.join(loops)}",
        flush=True,
    )
    print(
        f"{'model':<16}{'batch':>6}{'loop':>10}{'pairs/s':>10}{'÷ old':>8}{'busy':>7}{'peak GiB':>10}{'steps':>7}",
        flush=True,
    )
    measurements = len(models) * 2 * len(loops)
    for model in models:
        for batch_size in (32, args.large_batch):
            config = resolve_config(
                model,
                {"embedding_dim": args.dim, "hidden_dim": args.dim, "batch_size": batch_size, "device": str(device)},
            )
            rates = {}
            for name in loops:
                left = deadline - time.monotonic()
                if left <= 0:
                    print(f"{model:<16}{batch_size:>6}{name:>10}  (out of budget)", flush=True)
                    continue
                seed_everything(config["seed"])
                try:
                    kind = LOOPS["graphed"] if name == "compiled" else LOOPS[name]
                    extra = {"compiled": True} if name == "compiled" else {}
                    loop = kind(model, config, examples, vocab, device, **extra)
                    steps = args.steps
                    if args.budget:  # a share of what is left, from a short probe of this loop's step time
                        probe_rate, _, _ = measure(loop, 5, device)
                        share = left * 0.45 / max(1, measurements)
                        steps = max(5, min(args.steps, int(share * probe_rate / batch_size)))
                    rate, busy, peak = measure(loop, steps, device, profile=True)
                except Exception as error:  # a path that fails on this card is a finding, not the end of the run
                    print(
                        f"{model:<16}{batch_size:>6}{name:>10}  failed: {type(error).__name__}: {error}"[:300],
                        flush=True,
                    )
                    report.add("rows", {"model": model, "batch": batch_size, "loop": name, "error": str(error)[:500]})
                    continue
                finally:
                    measurements -= 1
                rates[name] = rate
                ratio = rate / rates["old"] if "old" in rates else None
                print(
                    f"{model:<16}{batch_size:>6}{name:>10}{rate:>10.0f}{(f'{ratio:.2f}×' if ratio else '—'):>8}"
                    f"{(f'{busy:.0%}' if busy is not None else 'n/a'):>7}{(f'{peak:.2f}' if peak else 'n/a'):>10}{steps:>7}",
                    flush=True,
                )
                report.add(
                    "rows",
                    {"model": model, "batch": batch_size, "loop": name, "pairs_per_s": rate, "gpu_busy": busy,
                     "peak_gib": peak, "steps": steps},
                )  # fmt: skip
                del loop
                if device.type == "cuda":
                    torch.cuda.empty_cache()


def synthetic_matrix(pairs, genres, vocab_size, seed=0):
    """Encoded pairs straight from numpy (tokenising 400k sentences would time Python, not the GPU):
    MultiNLI-like long-tailed lengths (premise ~22, hypothesis ~11 tokens, at most 80), Zipf words."""
    rng = np.random.default_rng(seed)

    def sentences(mean):
        lengths = np.minimum(80, rng.exponential(mean, pairs).astype(np.int64) + 2)
        words = np.minimum(vocab_size - 1, rng.zipf(1.2, int(lengths.sum())) + 1)
        return np.split(words, np.cumsum(lengths)[:-1])

    premise, p_len = padded_ids(sentences(20))
    hypothesis, h_len = padded_ids(sentences(9))
    labels = torch.from_numpy(rng.integers(0, 3, pairs))
    genre = torch.arange(pairs) % genres
    return {
        "premise": premise,
        "p_len": p_len,
        "hypothesis": hypothesis,
        "h_len": h_len,
        "labels": labels,
        "genre": genre,
    }


def matrix_run(data, genre, config, device, vocab_size):
    """One run of the matrix (genre -1: mixed), 1 epoch; returns pairs trained."""
    rows = torch.arange(len(data["labels"])) if genre < 0 else (data["genre"] == genre).nonzero().flatten()
    seed_everything(config["seed"])
    trainer = Trainer("esim", config, Vocab([f"w{i}" for i in range(vocab_size - 2)]), device=device)
    train_set = DeviceTrainSet.from_padded(
        data["premise"][rows], data["p_len"][rows], data["hypothesis"][rows], data["h_len"][rows],
        data["labels"][rows], device,
    )  # fmt: skip
    loss_sum = torch.zeros((), device=device)
    for batch in train_set.epoch(config["batch_size"], random.Random(genre)):
        loss_sum += trainer.train_step(batch) * len(batch)
    if not math.isfinite(float(loss_sum)):
        raise FloatingPointError("loss is not finite")
    return len(rows)


def _packed_child(path, genre, config, device, vocab_size, threads, ready, go, results):
    torch.set_num_threads(threads)
    data = torch.load(path)
    device = torch.device(device)
    if device.type == "cuda":
        torch.zeros(1, device=device)  # the CUDA context, before the clock
    ready.wait()
    go.wait()
    started = time.perf_counter()
    pairs = matrix_run(data, genre, config, device, vocab_size)
    synchronize(device)
    results.put((genre, pairs, time.perf_counter() - started))


def genre_matrix(args, device):
    genres = MATRIX_GENRES
    data = synthetic_matrix(args.matrix_pairs, genres, args.matrix_vocab)
    config = resolve_config(
        "esim", {"embedding_dim": args.dim, "hidden_dim": args.dim, "device": str(device), "cpu_threads": None}
    )
    runs = [*range(genres), -1]  # 11 single-genre runs, then the mixed one
    total_pairs = sum(int((data["genre"] == g).sum()) for g in range(genres)) + len(data["labels"])
    print(
        f"\n4. genre matrix: {genres} genres + mixed = {len(runs)} ESIM runs, 1 epoch each, "
        f"{args.matrix_pairs} pairs (vocabulary {args.matrix_vocab}), {args.dim}-d, batch {config['batch_size']}: "
        f"{total_pairs} pairs trained in all"
    )
    threads = max(1, (os.cpu_count() or 1) // len(runs))
    matrix_run(data, 0, config, device, args.matrix_vocab)  # warm-up: kernels, cuDNN autotuning (not timed)
    synchronize(device)
    started = time.perf_counter()
    for genre in runs:
        matrix_run(data, genre, config, device, args.matrix_vocab)
    synchronize(device)
    sequential = time.perf_counter() - started

    context = multiprocessing.get_context("spawn")
    ready, go = context.Barrier(len(runs) + 1), context.Barrier(len(runs) + 1)
    results = context.Queue()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "matrix.pt"
        torch.save(data, path)
        children = [
            context.Process(
                target=_packed_child,
                args=(path, genre, config, str(device), args.matrix_vocab, threads, ready, go, results),
            )
            for genre in runs
        ]
        launched = time.perf_counter()
        for child in children:
            child.start()
        ready.wait()
        started = time.perf_counter()
        go.wait()
        finished = [results.get(timeout=3600) for _ in runs]
        packed = time.perf_counter() - started
        for child in children:
            child.join()
        if any(child.exitcode for child in children):
            raise RuntimeError("a packed run failed")
    startup = started - launched
    slowest = max(seconds for _, _, seconds in finished)
    print(f"{'':<4}{'way':<50}{'seconds':>10}{'pairs/s':>10}{'÷ sequential':>14}")
    print(
        f"{'':<4}{'sequential (one process, one run after another)':<50}{sequential:>10.1f}{total_pairs / sequential:>10.0f}"
    )
    print(
        f"{'':<4}{f'packed ({len(runs)} processes at once, {threads} threads each)':<50}{packed:>10.1f}"
        f"{total_pairs / packed:>10.0f}{packed / sequential:>13.2f}×"
    )
    print(f"{'':<4}(packed: processes' start-up before the clock {startup:.1f} s; slowest run {slowest:.1f} s)")
    if device.type == "cuda":
        print(f"{'':<4}target: packed ≤ 0.25 × sequential")


def vmap_matrix(args, device, report, deadline):
    """The genre matrix as one job: every run's ESIM stacked and trained by one vmap'd step
    (modeling/training/packed.py), against the same runs one after another with the graphed step."""
    genres = [f"genre{g}" for g in range(MATRIX_GENRES)]
    left = deadline - time.monotonic()
    pairs = args.matrix_pairs
    esim = [
        row
        for row in report.data["rows"]
        if row.get("model") == "esim" and row.get("batch") == 32 and "pairs_per_s" in row
    ]
    if args.budget and esim:  # sequential + packed each train the matrix once (2x its pairs: the mixed run)
        rate = max(row["pairs_per_s"] for row in esim)
        pairs = max(MATRIX_GENRES * 64, min(pairs, int(left * 0.35 * rate / 4)))
    if left <= 0:
        print("\n4. genre matrix: out of budget", flush=True)
        return
    train_rows = synthetic_rows(pairs, seed=0, genres=genres)
    dev_rows = synthetic_rows(max(300, pairs // 100), seed=1, genres=genres)
    data = SnapshotData(
        train=[example_from_row(row, "train") for row in train_rows],
        evals={"dev_matched": [example_from_row(row, "dev_matched") for row in dev_rows]},
        manifest={},
    )
    base = {"embedding_dim": args.dim, "hidden_dim": args.dim, "device": str(device), "epochs": 1, "step": "graphed"}
    configs = [dict(base, train_genre=genre) for genre in genres] + [dict(base)]
    print(
        f"\n4. genre matrix: {len(genres)} genres + mixed = {len(configs)} ESIM runs, 1 epoch each, {pairs} pairs "
        f"(budget-sized; MultiNLI's is {MULTINLI_TRAIN_PAIRS}), {args.dim}-d, batch 32",
        flush=True,
    )
    started = time.perf_counter()
    sequential_results = [train(data, "esim", config)[0] for config in configs]
    synchronize(device)
    sequential = time.perf_counter() - started
    print(f"    sequential (graphed step, one run after another): {sequential:.1f} s", flush=True)
    report.add("matrix", {"way": "sequential graphed", "pairs": pairs, "seconds": sequential})
    started = time.perf_counter()
    packed_results = train_packed([data] * len(configs), "esim", configs)
    synchronize(device)
    packed = time.perf_counter() - started
    scale = MULTINLI_TRAIN_PAIRS / pairs
    gaps = [
        abs(a["accuracy"]["dev_matched"] - b["accuracy"]["dev_matched"])
        for a, b in zip(sequential_results, packed_results, strict=True)
    ]
    print(
        f"    packed (one vmap'd step for all {len(configs)}): {packed:.1f} s = {packed / sequential:.2f}× sequential; "
        f"at MultiNLI size (×{scale:.1f}, from these measured times): sequential {sequential * scale / 60:.1f} min, "
        f"packed {packed * scale / 60:.1f} min; largest dev accuracy gap packed vs alone {max(gaps) * 100:.2f} points",
        flush=True,
    )
    report.add(
        "matrix",
        {"way": "packed vmap", "pairs": pairs, "seconds": packed, "ratio": packed / sequential,
         "multinli_minutes_sequential": sequential * scale / 60, "multinli_minutes_packed": packed * scale / 60,
         "largest_accuracy_gap_points": max(gaps) * 100},
    )  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="the CPU-sized version even with a GPU")
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--pairs", type=int, default=20000, help="pairs of the per-model figures")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--large-batch", type=int, default=512)
    parser.add_argument("--models", default="cbow,bilstm,esim,hypothesis_only")
    parser.add_argument("--matrix-pairs", type=int, default=MULTINLI_TRAIN_PAIRS)
    parser.add_argument("--matrix-vocab", type=int, default=100_000)
    parser.add_argument("--no-matrix", action="store_true")
    parser.add_argument("--process-matrix", action="store_true", help="also the matrix as 12 processes (the older way)")
    parser.add_argument("--loops", default="old,new,graphed,compiled", help="which training steps to compare")
    parser.add_argument("--budget", type=float, default=0, help="seconds for the whole run: steps and matrix fit it")
    parser.add_argument("--json", default=default_json_path(), help="figures as JSON, rewritten after every row")
    args = parser.parse_args()
    deadline = time.monotonic() + (args.budget or 10**9)

    device = torch.device("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    if device.type == "cpu":
        args.dim, args.pairs, args.steps, args.large_batch = 32, 600, 12, 128
        args.matrix_pairs, args.matrix_vocab = 2400, 2000
        args.loops = args.loops.replace(",compiled", "")  # inductor's CPU build would time the compiler
        torch.set_num_threads(1)
        print(
            "TINY VERSION ON THE CPU (no CUDA device, or --tiny): 32-d, 12 steps per figure, a 2,400-pair "
            "matrix. It checks that the benchmark runs; its figures say nothing about a GPU."
        )
    print(f"device: {describe_device(device)}; torch {torch.__version__}")
    if device.type == "cuda":
        print(f"bf16: {torch.cuda.is_bf16_supported()}; cuDNN {torch.backends.cudnn.version()}")
    report = Report(args.json, device)
    per_model(args, device, report, deadline - (args.budget * 0.4 if args.budget else 0))
    if not args.no_matrix:
        vmap_matrix(args, device, report, deadline)
    if args.process_matrix:
        genre_matrix(args, device)
    print(f"figures: {args.json}", flush=True)


if __name__ == "__main__":
    main()
