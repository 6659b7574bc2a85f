"""Masking, pooling and the sequence encoder that every model shares, written once.

Masks are (batch, length) booleans, True on real tokens. Pads never enter an average, a max,
an attention weight or an LSTM state: outputs for a sentence do not depend on how much padding
its batch happened to need (tests/modeling/test_nets.py checks this).
"""

from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD_ID = 0  # modeling.training.data.Vocab puts <pad> first; every real token, <unk> included, is > 0


def padding_mask(tokens: Tensor) -> Tensor:
    """True on real tokens, read off the token ids (a sentence is never empty: Vocab.encode gives an
    empty one <unk>), so no copy of the lengths to the device synchronises a CUDA step."""
    return tokens.ne(PAD_ID)


def masked_sum(x: Tensor, mask: Tensor) -> Tensor:
    return (x * mask.unsqueeze(-1).to(x.dtype)).sum(dim=1)


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    counts = mask.sum(dim=1, keepdim=True).clamp(min=1).to(x.dtype)
    return masked_sum(x, mask) / counts


def masked_max(x: Tensor, mask: Tensor) -> Tensor:
    return x.masked_fill(~mask.unsqueeze(-1), torch.finfo(x.dtype).min).max(dim=1).values


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis, ignoring positions where `mask` (broadcast) is False."""
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1)


# How a SeqEncoder runs its LSTM (`set_lstm_path`):
#   packed    pack_padded_sequence with the lengths from the host: cuDNN skips the pads (the default);
#   static    the padded batch as it is, one cuDNN call per direction, the backward direction on each
#             sentence reversed within its length (a gather): no host value, no data-dependent shape,
#             so a whole training step can be captured as a CUDA graph (training/graphed.py);
#   unrolled  the same sums written out step by step, which torch.func.vmap can batch over several
#             models' stacked weights (training/packed.py); aten's fused LSTM has no batching rule.
# All three give the same outputs on real tokens (tests/modeling/test_lstm_paths.py) and zeros on pads.
LSTM_PATHS = ("packed", "static", "unrolled")


def set_lstm_path(net: nn.Module, path: str) -> nn.Module:
    """Switch every SeqEncoder of `net` to one of LSTM_PATHS; returns `net`."""
    if path not in LSTM_PATHS:
        raise ValueError(f"lstm path must be one of {', '.join(LSTM_PATHS)}, not {path!r}")
    for module in net.modules():
        if isinstance(module, SeqEncoder):
            module.path = path
    return net


def reversed_within_length(mask: Tensor) -> Tensor:
    """(batch, width) gather indices that reverse each row's real tokens and leave its pads in place;
    its own inverse."""
    width = mask.size(1)
    positions = torch.arange(width, device=mask.device).unsqueeze(0)
    lengths = mask.sum(dim=1, keepdim=True)
    return torch.where(mask, lengths - 1 - positions, positions)


def gather_steps(x: Tensor, index: Tensor) -> Tensor:
    return x.gather(1, index.unsqueeze(-1).expand(-1, -1, x.size(-1)))


def unrolled_lstm(x: Tensor, weight_ih: Tensor, weight_hh: Tensor, bias_ih: Tensor, bias_hh: Tensor) -> Tensor:
    """One direction of an LSTM over (batch, width, input): torch's gate order (input, forget, cell, output)."""
    batch, width = x.size(0), x.size(1)
    hidden = weight_hh.size(1)
    inputs = x @ weight_ih.t() + bias_ih + bias_hh  # every step's input projection in one product
    h = x.new_zeros(batch, hidden)
    c = x.new_zeros(batch, hidden)
    outputs = []
    for t in range(width):
        gates = inputs[:, t] + h @ weight_hh.t()
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outputs.append(h)
    return torch.stack(outputs, dim=1)


class SeqEncoder(nn.Module):
    """A (bi)LSTM over a padded batch; returns (batch, width, 2h), zeros on pads. How it runs: `path`."""

    def __init__(self, input_dim: int, hidden_dim: int, bidirectional: bool = True, num_layers: int = 1) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_dim, num_layers=num_layers, batch_first=True, bidirectional=bidirectional)
        self.output_dim = hidden_dim * (2 if bidirectional else 1)
        self.path = "packed"

    def forward(self, x: Tensor, lengths: Tensor | None, mask: Tensor | None = None) -> Tensor:
        if self.path == "packed":
            return self._packed(x, lengths)
        if mask is None:
            raise ValueError(f"the {self.path} LSTM path needs the padding mask")
        if self.lstm.num_layers != 1:
            raise ValueError(f"the {self.path} LSTM path runs one layer; this encoder has {self.lstm.num_layers}")
        keep = mask.unsqueeze(-1).to(x.dtype)
        outputs = [self._direction(x, "")]
        if self.lstm.bidirectional:
            index = reversed_within_length(mask)
            outputs.append(gather_steps(self._direction(gather_steps(x, index), "_reverse"), index))
        return torch.cat(outputs, dim=-1) * keep

    def _packed(self, x: Tensor, lengths: Tensor | None) -> Tensor:
        if lengths is None:
            raise ValueError("the packed LSTM path needs the lengths on the host")
        width = x.size(1)
        # The lengths come from the host (collate, or the device data path's epoch plan), so packing
        # them reads no device memory; a CUDA tensor here would cost a synchronisation per call.
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=width)
        return out

    def _direction(self, x: Tensor, suffix: str) -> Tensor:
        """One direction run forward over the padded batch: outputs past a row's length are garbage, masked later."""
        weights = [
            getattr(self.lstm, f"{name}_l0{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        ]
        if self.path == "unrolled":
            return unrolled_lstm(x, *weights)
        hidden = self.lstm.hidden_size
        zeros = x.new_zeros(1, x.size(0), hidden)
        out, _, _ = torch.lstm(x, (zeros, zeros), weights, True, 1, 0.0, self.training, False, True)
        return out


def pair_features(u: Tensor, v: Tensor) -> Tensor:
    """[u; v; u − v; u ∗ v] (Mou et al. 2016): the sentence-encoder models' matching layer, ESIM's enhancement."""
    return torch.cat([u, v, u - v, u * v], dim=-1)


def make_embedding(vocab_size: int, dim: int, weights: Any = None, padding_idx: int = 0) -> nn.Embedding:
    embedding = nn.Embedding(vocab_size, dim, padding_idx=padding_idx)
    if weights is not None:
        embedding.weight.data.copy_(torch.as_tensor(weights, dtype=torch.float32))
        embedding.weight.data[padding_idx].zero_()
    return embedding


class TanhClassifier(nn.Sequential):
    """Dropout → tanh layer(s) → 3 logits (the softmax lives in the loss)."""

    def __init__(
        self, input_dim: int, hidden_dim: int, num_classes: int = 3, dropout: float = 0.1, layers: int = 1
    ) -> None:
        modules = []
        dim = input_dim
        for _ in range(layers):
            modules += [nn.Dropout(dropout), nn.Linear(dim, hidden_dim), nn.Tanh()]
            dim = hidden_dim
        modules += [nn.Dropout(dropout), nn.Linear(dim, num_classes)]
        super().__init__(*modules)


class SentenceEncoderNet(nn.Module):
    """The sentence-encoder baselines: each sentence is encoded alone (`encode`, a subclass's), then
    [u; v; u − v; u ∗ v] → TanhClassifier. `recurrent`: an embedding dropout and a BiLSTM over the
    words (else the embeddings are all); `pair_input`: the classifier reads both sentences' features
    (else one sentence's encoding, the subclass's `forward`)."""

    recurrent = True
    pair_input = True

    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int = 300,
        hidden_dim: int = 300,
        dropout: float = 0.1,
        embeddings: Any = None,
        mlp_layers: int = 1,
        num_classes: int = 3,
        **_: Any,
    ) -> None:
        super().__init__()
        self.embedding = make_embedding(vocab_size, embedding_dim, embeddings)
        width = embedding_dim
        if self.recurrent:
            self.dropout = nn.Dropout(dropout)
            self.encoder = SeqEncoder(embedding_dim, hidden_dim)
            width = self.encoder.output_dim
        self.classifier = TanhClassifier(
            4 * width if self.pair_input else width,
            hidden_dim,
            dropout=dropout,
            layers=mlp_layers,
            num_classes=num_classes,
        )

    def encode(self, tokens: Tensor, lengths: Tensor | None) -> Tensor:
        raise NotImplementedError

    def forward(
        self, premise: Tensor, premise_lengths: Tensor | None, hypothesis: Tensor, hypothesis_lengths: Tensor | None
    ) -> Tensor:
        u = self.encode(premise, premise_lengths)
        v = self.encode(hypothesis, hypothesis_lengths)
        logits: Tensor = self.classifier(pair_features(u, v))
        return logits
