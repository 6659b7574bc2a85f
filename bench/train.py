"""Benchmark: training throughput of each baseline with length-bucketed batches against the plain way.

    .venv/bin/python bench/train.py [--pairs 20000] [--epochs 1] [--dim 64] [--models cbow,bilstm,esim,hypothesis_only]
        [--threads N] [--device auto|cpu|cuda]

Same synthetic MultiNLI-shaped pairs (long-tailed lengths: premises ~20 tokens, a few up to 80),
same model and seed, trained two ways in the same run:
  baseline  every batch padded to the longest sentence of the whole corpus, no bucketing, fp32
  ours      the training set resident on the device (modeling/training/device_data.py), batches of
            similar length (sorted within pools of 50 batches) sliced out of it, padded to their own
            longest sentence, packed LSTMs; on CUDA also cuDNN autotuning, fused Adam and AMP
            (bf16 autocast, or fp16 with a GradScaler on GPUs without bf16)
Printed per model: examples/s and seconds per epoch of both, and ours ÷ baseline.
The snapshot is read from nowhere: this measures the training loop only (no Django, no DB).
"""

import argparse
import math
import random
import sys
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from modeling.training.data import (
    Batch,
    Vocab,
    encode_examples,
    example_from_row,
    make_batches,
    sort_length,
)
from modeling.training.device_data import DeviceBatch, DeviceTrainSet
from modeling.training.loop import (
    Trainer,
    describe_device,
    resolve_config,
    seed_everything,
    sort_by,
)
from modeling.training.synthetic import synthetic_rows


def one_epoch(model, examples, vocab, config, bucket, pad_to, amp):
    """Seconds of one epoch's steps. The baseline's batches are collated before the clock starts;
    ours are made inside it (index slices of the device-resident set), so ours pays for its batching."""
    seed_everything(config["seed"])
    trainer = Trainer(model, dict(config, amp=amp), vocab)
    batches: Iterable[Batch | DeviceBatch]
    if bucket:
        train_set = DeviceTrainSet(examples, [], trainer.device, sort_by=sort_by(model))
        trainer.train_step(next(iter(train_set.epoch(config["batch_size"], random.Random(1)))))  # warm-up
        batches = train_set.epoch(config["batch_size"], random.Random(0))
    else:
        host_batches = make_batches(
            examples, config["batch_size"], rng=random.Random(0), bucket=False, pad_to=pad_to, length=sort_length(model)
        )
        trainer.train_step(host_batches[0])  # warm-up (allocations, cuDNN autotuning), not timed
        batches = host_batches
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
    padded = real = 0
    started = time.perf_counter()
    for batch in batches:
        trainer.train_step(batch)
        if model == "hypothesis_only":  # only the hypotheses' padding costs it anything
            padded += batch.hypothesis.numel()
            real += int(batch.hypothesis_lengths.sum())  # host lengths on both paths: no synchronisation
        else:
            padded += batch.premise.numel() + batch.hypothesis.numel()
            real += int(batch.premise_lengths.sum() + batch.hypothesis_lengths.sum())
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    return seconds, real / padded, trainer


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--dim", type=int, default=64, help="embedding and hidden size (papers: 300)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--models", default="cbow,bilstm,esim,hypothesis_only")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    rows = synthetic_rows(args.pairs, seed=0)
    examples = [example_from_row(row) for row in rows]
    vocab = Vocab.build(examples)
    encode_examples(examples, vocab)
    global_max = max(max(len(ex.premise_ids), len(ex.hypothesis_ids)) for ex in examples)
    mean_p = sum(len(ex.premise_ids) for ex in examples) / len(examples)
    mean_h = sum(len(ex.hypothesis_ids) for ex in examples) / len(examples)

    print(
        f"{args.pairs} synthetic pairs, mean premise {mean_p:.1f} / hypothesis {mean_h:.1f} tokens, "
        f"longest {global_max}; dims {args.dim}; batch {args.batch_size}; {args.epochs} epoch(s) timed per way"
    )
    header = f"{'model':<16}{'way':<10}{'ex/s':>10}{'s/epoch':>10}{'real tokens':>13}   device"
    print(header)
    print("-" * len(header))
    ratios = {}
    for model in args.models.split(","):
        config = resolve_config(
            model,
            {
                "embedding_dim": args.dim,
                "hidden_dim": args.dim,
                "device": args.device,
                "batch_size": args.batch_size,
                "dropout": 0.1,
            },
        )
        measured = {}
        for way, bucket, pad_to, amp in (("baseline", False, global_max, False), ("ours", True, None, True)):
            total = 0.0
            for _ in range(args.epochs):
                seconds, density, trainer = one_epoch(model, examples, vocab, config, bucket, pad_to, amp)
                total += seconds
            per_epoch = total / args.epochs
            measured[way] = per_epoch
            extras = []
            if trainer.device.type == "cuda":
                extras.append(
                    f"AMP {'on' if trainer.use_amp else 'off'}, cudnn.benchmark {torch.backends.cudnn.benchmark}"
                )
            print(
                f"{model:<16}{way:<10}{len(examples) / per_epoch:>10.0f}{per_epoch:>10.2f}{density:>12.0%}   "
                f"{describe_device(trainer.device)} {' '.join(extras)}"
            )
            del trainer
        ratios[model] = measured["baseline"] / measured["ours"]
        print(f"{'':<16}{'speed-up':<10}{ratios[model]:>10.2f}×")
    geo = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    print(
        "\nours ÷ baseline examples/s: "
        + ", ".join(f"{m} {r:.2f}×" for m, r in ratios.items())
        + f"; geometric mean {geo:.2f}×"
    )


if __name__ == "__main__":
    main()
