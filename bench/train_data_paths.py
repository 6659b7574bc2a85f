"""Benchmark: the training loop's two data paths on the same machine in one run, timed in CPU seconds.

    .venv/bin/python bench/train_data_paths.py [--pairs 320] [--rounds 3] [--dim 64] [--models ...]

  host    batches collated in Python from the epoch's examples (data.make_batches), the legacy path
  device  batches sliced out of the resident training set (device_data.DeviceTrainSet), today's path
Both build their epoch inside the clock, as loop.train does, and train the same batches (seeded), so
only the data path differs. The clock is the process's CPU time with one torch thread: other
processes on a busy machine slow neither side. The two alternate `--rounds` times; printed per model:
pairs per CPU second of each (median over rounds) and device ÷ host.
"""

import argparse
import random
import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from modeling.training.data import Batch, Vocab, encode_examples, example_from_row, make_batches, sort_length
from modeling.training.device_data import DeviceBatch, DeviceTrainSet
from modeling.training.loop import Trainer, resolve_config, seed_everything, sort_by
from modeling.training.synthetic import synthetic_rows


def epoch_cpu_seconds(path, model, examples, vocab, config):
    seed_everything(config["seed"])
    trainer = Trainer(model, config, vocab)
    train_set = DeviceTrainSet(examples, [], trainer.device, sort_by=sort_by(model)) if path == "device" else None
    started = time.process_time()
    rng = random.Random(0)
    batches: Iterable[Batch | DeviceBatch]
    if train_set is not None:
        batches = train_set.epoch(config["batch_size"], rng)
    else:
        batches = make_batches(examples, config["batch_size"], rng=rng, length=sort_length(model))
    loss_sum = torch.zeros(())
    for batch in batches:
        loss_sum += trainer.train_step(batch) * len(batch)
    float(loss_sum)
    return time.process_time() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=320)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--models", default="cbow,bilstm,esim,hypothesis_only")
    args = parser.parse_args()
    torch.set_num_threads(1)
    examples = [example_from_row(row) for row in synthetic_rows(args.pairs, seed=0)]
    vocab = Vocab.build(examples)
    encode_examples(examples, vocab)
    print(f"{args.pairs} synthetic pairs, dims {args.dim}, batch 32, CPU, 1 thread; {args.rounds} rounds, median")
    print(f"{'model':<16}{'host pairs/cpu-s':>18}{'device pairs/cpu-s':>20}{'device÷host':>13}")
    for model in args.models.split(","):
        config = resolve_config(model, {"embedding_dim": args.dim, "hidden_dim": args.dim, "device": "cpu"})
        seconds: dict[str, list[float]] = {"host": [], "device": []}
        epoch_cpu_seconds("device", model, examples, vocab, config)  # warm-up
        for _ in range(args.rounds):
            for path in ("host", "device"):
                seconds[path].append(epoch_cpu_seconds(path, model, examples, vocab, config))
        host = args.pairs / statistics.median(seconds["host"])
        device = args.pairs / statistics.median(seconds["device"])
        print(f"{model:<16}{host:>18.0f}{device:>20.0f}{device / host:>12.2f}×")


if __name__ == "__main__":
    main()
