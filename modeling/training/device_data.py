"""The training set resident on the training device, and each epoch's batches as index slices into it.

Collating every batch in Python (data.make_batches) costs a GPU most of a step and a
synchronisation per copy; here the encoded pairs are copied once and a step is
`tokens[idx, :width]`. An epoch's plan uses the host path's `random.Random` draws and pooled length
sort, so its batches are the host path's, pair for pair (tests/modeling/test_device_data.py); it
reaches the host in one copy per epoch, which gives the LSTMs' packing its lengths.
"""

import itertools
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .data import Example


@dataclass
class DeviceBatch:
    """What a step reads: token ids and labels on the device, lengths on the host (for packing)."""

    premise: torch.Tensor
    premise_lengths: torch.Tensor
    hypothesis: torch.Tensor
    hypothesis_lengths: torch.Tensor
    labels: torch.Tensor
    size: int

    def to(self, device: torch.device | str) -> "DeviceBatch":
        return self  # already there

    def __len__(self) -> int:
        return self.size


def padded_ids(sentences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(len(sentences), longest) int32 ids padded with 0, and the lengths as int64, built without a per-row tensor."""
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    width = int(lengths.max()) if len(sentences) else 1
    flat = np.fromiter(itertools.chain.from_iterable(sentences), dtype=np.int32, count=int(lengths.sum()))
    rows = np.repeat(np.arange(len(sentences)), lengths)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    cols = np.arange(len(flat)) - starts
    ids = np.zeros((len(sentences), width), dtype=np.int32)
    ids[rows, cols] = flat
    return torch.from_numpy(ids), torch.from_numpy(lengths)


class DeviceTrainSet:
    """`primary` + `secondary` (the mixing pool) as device tensors; `epoch(...)` yields DeviceBatches.
    `sort_by`: what bucketing sorts by, "pair" (data.pair_length) or "hypothesis" (data.hypothesis_length)."""

    def __init__(
        self,
        primary: Sequence[Example],
        secondary: Sequence[Example],
        device: torch.device | str,
        sort_by: str = "pair",
    ) -> None:
        examples = list(primary) + list(secondary)
        premise, premise_lengths = padded_ids([ex.premise_ids for ex in examples])
        hypothesis, hypothesis_lengths = padded_ids([ex.hypothesis_ids for ex in examples])
        labels = torch.tensor([ex.label for ex in examples], dtype=torch.long)
        self._place(premise, premise_lengths, hypothesis, hypothesis_lengths, labels, len(primary), device, sort_by)

    @classmethod
    def from_padded(
        cls,
        premise: torch.Tensor,
        premise_lengths: torch.Tensor,
        hypothesis: torch.Tensor,
        hypothesis_lengths: torch.Tensor,
        labels: torch.Tensor,
        device: torch.device | str,
        sort_by: str = "pair",
    ) -> "DeviceTrainSet":
        """A set from ids already padded (as padded_ids returns them), all of it primary (bench/)."""
        train_set = cls.__new__(cls)
        train_set._place(premise, premise_lengths, hypothesis, hypothesis_lengths, labels, len(labels), device, sort_by)
        return train_set

    def _place(
        self,
        premise: torch.Tensor,
        premise_lengths: torch.Tensor,
        hypothesis: torch.Tensor,
        hypothesis_lengths: torch.Tensor,
        labels: torch.Tensor,
        n_primary: int,
        device: torch.device | str,
        sort_by: str,
    ) -> None:
        self.n_primary, self.n_secondary = n_primary, len(labels) - n_primary
        self.device = torch.device(device)
        self.premise_lengths, self.hypothesis_lengths = premise_lengths, hypothesis_lengths
        self.premise = premise.to(self.device)
        self.hypothesis = hypothesis.to(self.device)
        self.labels = labels.to(self.device)
        # One integer per pair that orders as the host path's sort key does (a tuple for "pair").
        if sort_by == "hypothesis":
            key = hypothesis_lengths
        else:
            key = premise_lengths * (int(hypothesis_lengths.max()) + 1) + hypothesis_lengths
        self.sort_key = key.to(self.device)
        self._key_span = int(key.max()) + 1 if len(key) else 1

    def __len__(self) -> int:
        return self.n_primary + self.n_secondary

    def epoch_rows(self, fraction: float, rng: random.Random) -> list[int]:
        """Row indices of one epoch before shuffling: data.epoch_train_set's draws, on indices."""
        rows = list(range(self.n_primary))
        if self.n_secondary and fraction:
            k = round(self.n_secondary * fraction)
            rows += [self.n_primary + j for j in rng.sample(range(self.n_secondary), k)]
        return rows

    def plan(
        self, batch_size: int, rng: random.Random, fraction: float = 0.0, bucket: bool = True, pool_batches: int = 50
    ) -> tuple[torch.Tensor, list[int]]:
        """(order on the host, batch starts in training order): data.make_batches' batches, as indices."""
        rows = self.epoch_rows(fraction, rng)
        rng.shuffle(rows)
        order = torch.tensor(rows, dtype=torch.long, device=self.device)
        if bucket and len(rows):
            # make_batches sorts each pool of `pool_batches` batches by length (a stable sort):
            # one stable sort by (pool, length) does all pools at once.
            pools = torch.arange(len(rows), device=self.device) // (batch_size * pool_batches)
            composite = pools * self._key_span + self.sort_key[order]
            order = order[torch.sort(composite, stable=True).indices]
        starts = list(range(0, len(rows), batch_size))
        if bucket:
            rng.shuffle(starts)
        return order, starts

    def epoch(
        self, batch_size: int, rng: random.Random, fraction: float = 0.0, bucket: bool = True, pool_batches: int = 50
    ) -> Iterator[DeviceBatch]:
        """The epoch's batches in training order; one device-to-host copy for the whole epoch."""
        order, starts = self.plan(batch_size, rng, fraction, bucket, pool_batches)
        host_order = order.cpu()
        p_lengths = self.premise_lengths[host_order]
        h_lengths = self.hypothesis_lengths[host_order]
        for start in starts:
            end = min(start + batch_size, len(host_order))
            p_len, h_len = p_lengths[start:end], h_lengths[start:end]
            idx = order[start:end]
            yield DeviceBatch(
                premise=self.premise[idx, : int(p_len.max())],
                premise_lengths=p_len,
                hypothesis=self.hypothesis[idx, : int(h_len.max())],
                hypothesis_lengths=h_len,
                labels=self.labels[idx],
                size=end - start,
            )

    def pairs_per_epoch(self, fraction: float = 0.0) -> int:
        return self.n_primary + (round(self.n_secondary * fraction) if self.n_secondary and fraction else 0)
