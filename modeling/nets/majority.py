"""Most-frequent-class baseline: the train set's commonest gold label for every pair; no training."""

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import torch


class MajorityClass:
    trainable = False

    def __init__(self, num_classes: int = 3, **_: object) -> None:
        self.num_classes = num_classes
        self.label: int | None = None

    def fit(self, labels: Iterable[int]) -> "MajorityClass":
        counts = Counter(label for label in labels if label >= 0)
        if not counts:
            raise ValueError("the train set has no gold-labelled pair")
        # Ties go to the lowest label index, so the choice is deterministic.
        self.label = min(counts, key=lambda label: (-counts[label], label))
        return self

    def predict(self, batch_size: int) -> torch.Tensor:
        if self.label is None:
            raise ValueError("fit() or load_state_dict() first: no label chosen yet")
        return torch.full((batch_size,), self.label, dtype=torch.long)

    def state_dict(self) -> dict[str, int | None]:
        return {"label": self.label}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.label = state["label"]
