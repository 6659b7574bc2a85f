"""The baseline models, one file each; `build_net(kind, ...)` is the one place that maps names to classes."""

from typing import Any

from .bilstm import BiLSTM
from .cbow import CBOW
from .esim import ESIM
from .hypothesis_only import HypothesisOnly
from .majority import MajorityClass

__all__ = ["CBOW", "ESIM", "NETS", "BiLSTM", "HypothesisOnly", "MajorityClass", "build_net"]

NETS = {
    "majority": MajorityClass,
    "cbow": CBOW,
    "bilstm": BiLSTM,
    "esim": ESIM,
    "hypothesis_only": HypothesisOnly,
}


# A torch nn.Module, or MajorityClass for "majority": callers tell them apart by `trainable`
# (duck-typed), so the result is Any.
def build_net(kind: str, vocab_size: int, embeddings: Any = None, **hyper: Any) -> Any:
    try:
        cls = NETS[kind]
    except KeyError:
        raise ValueError(f"unknown model {kind!r}; choose one of {', '.join(NETS)}") from None
    if cls is MajorityClass:
        return cls(num_classes=hyper.get("num_classes", 3))
    return cls(vocab_size, embeddings=embeddings, **hyper)
