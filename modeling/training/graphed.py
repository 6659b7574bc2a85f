"""A training step with no host in the loop: fixed shapes, each shape's step captured once as a CUDA graph.

Why and how: docs/gpu-nodes.md, "The graphed step and packed runs". What changes between steps
lives in fixed tensors the graph reads: the batch's row indices into the training set already on
the device, and a weight per row (1 for a real pair, 0 for a row that only fills the last batch).
On a CPU the same fixed-shape step runs eagerly. Graph capture needs bf16 or no autocast: fp16's
loss scaler reads the device each step.
"""

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from modeling.nets.layers import set_lstm_path

from .device_data import DeviceTrainSet

# Sentence widths a batch is padded to: few enough that a run captures a handful of graphs, close
# enough that padding costs little (MultiNLI's premises are mostly under 48 tokens).
WIDTHS = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096)
# Steps run before a shape is captured, on a side stream as torch's documentation asks, so cuDNN's
# and the allocator's first-call work is not recorded; their updates are undone after capture.
WARMUP_STEPS = 3


def static_width(longest: int, cap: int) -> int:
    """The smallest of WIDTHS that holds `longest` tokens, never wider than the training set's tensors."""
    for width in WIDTHS:
        if width >= longest:
            return min(width, cap)
    return cap


@dataclass
class EpochPlan:
    """An epoch's batches at fixed shapes: rows (steps, batch) into the training set, their weights
    (1 real, 0 filler), each step's (premise width, hypothesis width) and real pair count."""

    rows: torch.Tensor
    weights: torch.Tensor
    shapes: list[tuple[int, int]]
    sizes: list[int]

    def __len__(self) -> int:
        return len(self.sizes)


def epoch_plan(
    train_set: DeviceTrainSet, batch_size: int, rng: random.Random, fraction: float = 0.0, bucket: bool = True
) -> EpochPlan:
    """The host path's batches of one epoch (the same draws of `rng`), padded to fixed shapes."""
    device = train_set.device
    order, starts = train_set.plan(batch_size, rng, fraction, bucket)
    if not starts:
        empty = torch.zeros(0, batch_size, device=device)
        return EpochPlan(empty.long(), empty, [], [])
    host_order = order.cpu()
    premise_lengths = train_set.premise_lengths[host_order]
    hypothesis_lengths = train_set.hypothesis_lengths[host_order]
    premise_cap, hypothesis_cap = train_set.premise.size(1), train_set.hypothesis.size(1)
    # Filler rows repeat the batch's first pair, weighted 0.
    first = torch.tensor(starts, dtype=torch.long, device=device).unsqueeze(1)
    positions = first + torch.arange(batch_size, device=device).unsqueeze(0)
    real = positions < len(host_order)
    rows = order[torch.where(real, positions, first)]
    # Each batch's longest sentences, from the host copy of the lengths (no device read).
    by_position = sorted(starts)
    premise_longest = dict(zip(by_position, np.maximum.reduceat(premise_lengths.numpy(), by_position), strict=True))
    hypothesis_longest = dict(
        zip(by_position, np.maximum.reduceat(hypothesis_lengths.numpy(), by_position), strict=True)
    )
    shapes = [
        (
            static_width(int(premise_longest[start]), premise_cap),
            static_width(int(hypothesis_longest[start]), hypothesis_cap),
        )
        for start in starts
    ]
    sizes = [min(batch_size, len(host_order) - start) for start in starts]
    return EpochPlan(rows, real.float(), shapes, sizes)


class GraphedStep:
    """The training steps of one Trainer over one DeviceTrainSet, at fixed shapes; `graphs` on CUDA only."""

    def __init__(self, trainer: Any, train_set: DeviceTrainSet, batch_size: int, graphs: bool | None = None) -> None:
        self.trainer = trainer
        self.net: Any = trainer.net  # an nn.Module, or what torch.compile made of one (bench/)
        self.train_set = train_set
        self.batch_size = batch_size
        self.device = train_set.device
        self.graphs_wanted = self.device.type == "cuda" if graphs is None else graphs
        if self.graphs_wanted and (self.device.type != "cuda" or trainer.amp_dtype == torch.float16):
            raise ValueError(
                "CUDA graphs need a CUDA device and bf16 or no autocast (fp16 scales its loss on the host)"
            )
        set_lstm_path(self.net, "static")
        if self.graphs_wanted:
            # A captured Adam keeps its step count on the device (capturable), or every replay
            # would repeat the step number recorded at capture.
            trainer.optimizer = torch.optim.Adam(
                self.net.parameters(), lr=trainer.config["lr"], capturable=True, foreach=True
            )
        self.optimizer: torch.optim.Optimizer = trainer.optimizer
        self.rows = torch.zeros(batch_size, dtype=torch.long, device=self.device)
        self.weights = torch.zeros(batch_size, dtype=torch.float32, device=self.device)
        self.loss_total = torch.zeros((), dtype=torch.float32, device=self.device)
        self.correct_total = torch.zeros((), dtype=torch.float32, device=self.device)
        self._graphs: dict[tuple[int, int], torch.cuda.CUDAGraph] = {}

    def epoch(self, rng: random.Random, fraction: float = 0.0, bucket: bool = True) -> Iterator[int]:
        """Train one epoch (the host path's batches, pair for pair); yields each step's real pair count."""
        plan = epoch_plan(self.train_set, self.batch_size, rng, fraction, bucket)
        self.net.train()
        for k, shape in enumerate(plan.shapes):
            self.rows.copy_(plan.rows[k])
            self.weights.copy_(plan.weights[k])
            if self.graphs_wanted:
                graph = self._graphs.get(shape) or self._capture(shape)
                graph.replay()
            else:
                self.optimizer.zero_grad(set_to_none=True)
                self._step(*shape)
            yield plan.sizes[k]

    def _step(self, premise_width: int, hypothesis_width: int) -> None:
        """One step as device work only: what a graph records."""
        train_set = self.train_set
        premise = train_set.premise[self.rows, :premise_width].long()
        hypothesis = train_set.hypothesis[self.rows, :hypothesis_width].long()
        labels = train_set.labels[self.rows]
        with self.trainer.autocast():
            logits = self.net(premise, None, hypothesis, None)
        losses = F.cross_entropy(logits.float(), labels, reduction="none") * self.weights
        self.trainer.backward_and_step(losses.sum() / self.weights.sum())  # fp16's scaler: eager only
        self.loss_total.add_(losses.detach().sum())
        self.correct_total.add_(((logits.detach().argmax(dim=-1) == labels).float() * self.weights).sum())

    def _capture(self, shape: tuple[int, int]) -> torch.cuda.CUDAGraph:
        """Record the step for `shape`; the warm-up steps' updates are undone, so training is as if eager."""
        saved = self._save_state()
        side = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                self.optimizer.zero_grad(set_to_none=True)
                self._step(*shape)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)
        # Each shape its own memory pool: shapes replay in any order, which a shared pool forbids.
        with torch.cuda.graph(graph):
            self._step(*shape)
        self._restore_state(saved)
        self._graphs[shape] = graph
        return graph

    def _save_state(self) -> dict[str, Any]:
        return {
            "params": [p.detach().clone() for p in self.net.parameters()],
            "optimizer": {
                id(p): {k: v.clone() if torch.is_tensor(v) else v for k, v in state.items()}
                for p, state in self.optimizer.state.items()
            },
            "totals": (self.loss_total.clone(), self.correct_total.clone()),
        }

    @torch.no_grad()
    def _restore_state(self, saved: dict[str, Any]) -> None:
        """Put back what the warm-up changed, in place: the graph holds these tensors' addresses."""
        for param, value in zip(self.net.parameters(), saved["params"], strict=True):
            param.data.copy_(value)
        for param, state in self.optimizer.state.items():
            before = saved["optimizer"].get(id(param))
            for key, value in state.items():
                if not torch.is_tensor(value):
                    continue
                if before is None:
                    value.zero_()  # Adam's state starts at zero before a parameter's first step
                else:
                    value.copy_(before[key])
        self.loss_total.copy_(saved["totals"][0])
        self.correct_total.copy_(saved["totals"][1])

    def take_totals(self) -> tuple[float, float]:
        """(summed loss, correct predictions) since the last call: one read of the device."""
        loss, correct = torch.stack([self.loss_total, self.correct_total]).tolist()
        self.loss_total.zero_()
        self.correct_total.zero_()
        return loss, correct
