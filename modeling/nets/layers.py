"""Masking, pooling and the sequence encoder that every model shares, written once.

Masks are (batch, length) booleans, True on real tokens. Pads never enter an average, a max,
an attention weight or an LSTM state: outputs for a sentence do not depend on how much padding
its batch happened to need (tests/modeling/test_nets.py checks this).
"""

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD_ID = 0  # modeling.training.data.Vocab puts <pad> first; every real token, <unk> included, is > 0


def padding_mask(tokens):
    """True on real tokens, read off the token ids themselves: no lengths need to reach the device.

    The same mask as one built from the lengths (a sentence is never empty: Vocab.encode gives an
    empty one <unk>), without the host-to-device copy of the lengths that synchronises a CUDA step.
    """
    return tokens.ne(PAD_ID)


def masked_sum(x, mask):
    return (x * mask.unsqueeze(-1).to(x.dtype)).sum(dim=1)


def masked_mean(x, mask):
    counts = mask.sum(dim=1, keepdim=True).clamp(min=1).to(x.dtype)
    return masked_sum(x, mask) / counts


def masked_max(x, mask):
    return x.masked_fill(~mask.unsqueeze(-1), torch.finfo(x.dtype).min).max(dim=1).values


def masked_softmax(scores, mask):
    """Softmax over the last axis, ignoring positions where `mask` (broadcast) is False."""
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1)


class SeqEncoder(nn.Module):
    """A (bi)LSTM run over packed sequences, so cuDNN skips the pads; returns (batch, width, 2h)."""

    def __init__(self, input_dim, hidden_dim, bidirectional=True, num_layers=1):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_dim, num_layers=num_layers, batch_first=True, bidirectional=bidirectional)
        self.output_dim = hidden_dim * (2 if bidirectional else 1)

    def forward(self, x, lengths):
        width = x.size(1)
        # The lengths come from the host (collate, or the device data path's epoch plan), so packing
        # them reads no device memory; a CUDA tensor here would cost a synchronisation per call.
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=width)
        return out


def pair_features(u, v):
    """[u; v; u − v; u ∗ v] (Mou et al. 2016), the sentence-encoder models' matching layer."""
    return torch.cat([u, v, u - v, u * v], dim=-1)


def make_embedding(vocab_size, dim, weights=None, padding_idx=0):
    embedding = nn.Embedding(vocab_size, dim, padding_idx=padding_idx)
    if weights is not None:
        embedding.weight.data.copy_(torch.as_tensor(weights, dtype=torch.float32))
        embedding.weight.data[padding_idx].zero_()
    return embedding


class TanhClassifier(nn.Sequential):
    """Dropout → tanh layer(s) → 3 logits (the softmax lives in the loss)."""

    def __init__(self, input_dim, hidden_dim, num_classes=3, dropout=0.1, layers=1):
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
        vocab_size,
        embedding_dim=300,
        hidden_dim=300,
        dropout=0.1,
        embeddings=None,
        mlp_layers=1,
        num_classes=3,
        **_,
    ):
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

    def encode(self, tokens, lengths):
        raise NotImplementedError

    def forward(self, premise, premise_lengths, hypothesis, hypothesis_lengths):
        u = self.encode(premise, premise_lengths)
        v = self.encode(hypothesis, hypothesis_lengths)
        return self.classifier(pair_features(u, v))
