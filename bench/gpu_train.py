"""GPU training benchmark, one command: today's loop against the old one, and a genre matrix packed onto one GPU.

    .venv/bin/python bench/gpu_train.py [--tiny] [--dim 300] [--large-batch 512] [--steps 200]
        [--models cbow,bilstm,esim,hypothesis_only] [--matrix-pairs 392702] [--no-matrix]

Printed, all measured in this run (no figure from elsewhere):
  1. pairs/s of each model at batch 32 (the papers') and at a large batch, for
       old  the loop before issue 23, copied below (LegacyTrainer): batches collated in Python and
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
that checks the script, not the hardware. Results of a GPU run go in the closing note of issue 23.
"""

import argparse
import math
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch
from torch import nn

from modeling.training.data import Vocab, encode_examples, example_from_row, make_batches
from modeling.training.device_data import DeviceTrainSet, padded_ids
from modeling.training.loop import Trainer, describe_device, resolve_config, seed_everything, sort_by, sort_length
from modeling.training.synthetic import synthetic_rows

MATRIX_GENRES = 11
MULTINLI_TRAIN_PAIRS = 392_702


class LegacyTrainer(Trainer):
    """The training step as it was before issue 23 (modeling/training/loop.py at a42dd6d)."""

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


def per_model(args, device):
    rows = synthetic_rows(args.pairs, seed=0)
    examples = [example_from_row(row) for row in rows]
    vocab = Vocab.build(examples)
    encode_examples(examples, vocab)
    print(
        f"\n1-3. per model: {len(examples)} synthetic MultiNLI-shaped pairs (vocabulary {len(vocab)}), "
        f"{args.dim}-d, {args.steps} timed steps per figure, dropout and lr as the papers"
    )
    header = f"{'model':<16}{'batch':>6}{'old pairs/s':>13}{'new pairs/s':>13}{'new÷old':>9}"
    header += f"{'busy old':>10}{'busy new':>10}{'peak GiB new':>14}"
    print(header)
    print("-" * len(header))
    for model in args.models.split(","):
        for batch_size in (32, args.large_batch):
            config = resolve_config(
                model,
                {"embedding_dim": args.dim, "hidden_dim": args.dim, "batch_size": batch_size, "device": str(device)},
            )
            figures = {}
            for name, kind in (("old", OldLoop), ("new", NewLoop)):
                seed_everything(config["seed"])
                loop = kind(model, config, examples, vocab, device)
                figures[name] = measure(loop, args.steps, device, profile=True)
                del loop
                if device.type == "cuda":
                    torch.cuda.empty_cache()
            (old, old_busy, _), (new, new_busy, new_peak) = figures["old"], figures["new"]

            def share(value):
                return f"{value:.0%}" if value is not None else "n/a"

            print(
                f"{model:<16}{batch_size:>6}{old:>13.0f}{new:>13.0f}{new / old:>8.2f}×"
                f"{share(old_busy):>10}{share(new_busy):>10}{(f'{new_peak:.2f}' if new_peak else 'n/a'):>14}"
            )


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
        print(f"{'':<4}target (issue 23): packed ≤ 0.25 × sequential")


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
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    if device.type == "cpu":
        args.dim, args.pairs, args.steps, args.large_batch = 32, 600, 12, 128
        args.matrix_pairs, args.matrix_vocab = 2400, 2000
        torch.set_num_threads(1)
        print(
            "TINY VERSION ON THE CPU (no CUDA device, or --tiny): 32-d, 12 steps per figure, a 2,400-pair "
            "matrix. It checks that the benchmark runs; its figures say nothing about a GPU."
        )
    print(f"device: {describe_device(device)}; torch {torch.__version__}")
    if device.type == "cuda":
        print(f"bf16: {torch.cuda.is_bf16_supported()}; cuDNN {torch.backends.cudnn.version()}")
    per_model(args, device)
    if not args.no_matrix:
        genre_matrix(args, device)


if __name__ == "__main__":
    main()
