"""An evaluation split resident on the device, predicted at fixed shapes; on CUDA each shape's
forward pass is captured once as a CUDA graph and replayed.

With the graphed step, `Trainer.predict`'s Python collation would leave the GPU waiting on the
host. Here a split is sorted by length once (`Trainer.predict`'s order), each batch is `batch_size`
rows (the last one filled with copies of its first row) at widths from graphed.WIDTHS, and the
predictions are read once per pass. On a CPU the same fixed-shape passes run eagerly.
"""

from collections.abc import Sequence
from typing import Any

import torch

from .data import Example, sort_length
from .device_data import padded_ids
from .evaluate import accuracy_report
from .graphed import static_width


class DeviceEvalSet:
    """`examples` on `trainer`'s device, in `Trainer.predict`'s order; `predict()` their labels."""

    def __init__(self, trainer: Any, examples: Sequence[Example], batch_size: int, graphs: bool = False) -> None:
        self.trainer = trainer
        self.device = trainer.device
        self.batch_size = batch_size
        self.size = len(examples)
        length = sort_length(trainer.model_kind)
        order = sorted(range(len(examples)), key=lambda i: length(examples[i]))
        self.order = torch.tensor(order, dtype=torch.long)
        premise, premise_lengths = padded_ids([examples[i].premise_ids for i in order])
        hypothesis, hypothesis_lengths = padded_ids([examples[i].hypothesis_ids for i in order])
        self.premise = premise.to(self.device)
        self.hypothesis = hypothesis.to(self.device)
        self.shapes: list[tuple[int, int]] = []
        self.starts = list(range(0, self.size, batch_size))
        for start in self.starts:
            end = min(start + batch_size, self.size)
            self.shapes.append(
                (
                    static_width(int(premise_lengths[start:end].max()), premise.size(1)),
                    static_width(int(hypothesis_lengths[start:end].max()), hypothesis.size(1)),
                )
            )
        self.graphs_wanted = graphs
        if graphs and self.device.type != "cuda":
            raise ValueError("CUDA graphs need a CUDA device")
        self.rows = torch.zeros(batch_size, dtype=torch.long, device=self.device)
        self.predicted = torch.zeros(self.size, dtype=torch.long, device=self.device)
        self._graphs: dict[tuple[int, int], torch.cuda.CUDAGraph] = {}

    def predict(self) -> list[int]:
        """Predicted label index per example, in the examples' order; one device read."""
        if not self.size:
            return []
        net = self.trainer.net
        net.eval()
        positions = torch.arange(self.batch_size, device=self.device)
        with torch.no_grad():
            for start, shape in zip(self.starts, self.shapes, strict=True):
                real = start + positions < self.size
                self.rows.copy_(torch.where(real, start + positions, start))
                if self.graphs_wanted:
                    graph = self._graphs.get(shape) or self._capture(shape)
                    graph.replay()
                else:
                    self._pass(*shape)
        predictions = [0] * self.size
        for index, label in zip(self.order.tolist(), self.predicted.tolist(), strict=True):
            predictions[index] = label
        return predictions

    def accuracy(self, examples: Sequence[Example]) -> float:
        """The share of `examples` (these, with gold labels) predicted right: Trainer.accuracy's figure."""
        accuracy: float = accuracy_report(examples, self.predict())["accuracy"]
        return accuracy

    def _pass(self, premise_width: int, hypothesis_width: int) -> None:
        """One batch as device work only: what a graph records."""
        premise = self.premise[self.rows, :premise_width].long()
        hypothesis = self.hypothesis[self.rows, :hypothesis_width].long()
        with self.trainer.autocast():
            logits = self.trainer.net(premise, None, hypothesis, None)
        self.predicted.index_copy_(0, self.rows, logits.argmax(dim=-1))

    def _capture(self, shape: tuple[int, int]) -> torch.cuda.CUDAGraph:
        side = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            self._pass(*shape)  # cuDNN's and the allocator's first-call work, outside the graph
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._pass(*shape)
        self._graphs[shape] = graph
        return graph
