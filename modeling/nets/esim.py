"""ESIM (Chen et al. 2017, "Enhanced LSTM for Natural Language Inference"), without the tree LSTM.

Names follow the paper's equations (as coetaur0/ESIM does):
  input encoding   ā = BiLSTM(a), b̄ = BiLSTM(b)                                 (eq. 1–2)
  local inference  e_ij = ā_iᵀ b̄_j; ã = softmax_j(e) b̄, b̃ = softmax_i(e) ā       (eq. 11–13)
  enhancement      m_a = [ā; ã; ā − ã; ā ∗ ã], likewise m_b                      (eq. 14–15)
  composition      F = ReLU projection, then v_a, v_b = BiLSTM(F(m))              (eq. 16–17)
  pooling          v = [avg(v_a); max(v_a); avg(v_b); max(v_b)]                   (eq. 18–20)
  prediction       MLP with one tanh hidden layer → 3
"""

from typing import Any

import torch
from torch import Tensor, nn

from .layers import (
    SeqEncoder,
    make_embedding,
    masked_max,
    masked_mean,
    masked_softmax,
    padding_mask,
    pair_features,
)


class ESIM(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int = 300,
        hidden_dim: int = 300,
        dropout: float = 0.5,
        embeddings: Any = None,
        num_classes: int = 3,
        **_: Any,
    ) -> None:
        super().__init__()
        self.embedding = make_embedding(vocab_size, embedding_dim, embeddings)
        self.dropout = nn.Dropout(dropout)
        self.input_encoding = SeqEncoder(embedding_dim, hidden_dim)
        self.projection = nn.Sequential(nn.Linear(4 * 2 * hidden_dim, hidden_dim), nn.ReLU())
        self.composition = SeqEncoder(hidden_dim, hidden_dim)
        self.classification = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(4 * 2 * hidden_dim, hidden_dim),
            nn.Tanh(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, num_classes),
        )

    @staticmethod
    def local_inference(a_bar: Tensor, a_mask: Tensor, b_bar: Tensor, b_mask: Tensor) -> tuple[Tensor, Tensor]:
        e = torch.bmm(a_bar, b_bar.transpose(1, 2))  # (B, La, Lb)
        a_tilde = torch.bmm(masked_softmax(e, b_mask.unsqueeze(1)), b_bar)
        b_tilde = torch.bmm(masked_softmax(e.transpose(1, 2), a_mask.unsqueeze(1)), a_bar)
        return a_tilde, b_tilde

    def forward(
        self, premise: Tensor, premise_lengths: Tensor | None, hypothesis: Tensor, hypothesis_lengths: Tensor | None
    ) -> Tensor:
        a_mask = padding_mask(premise)
        b_mask = padding_mask(hypothesis)

        a_bar = self.input_encoding(self.dropout(self.embedding(premise)), premise_lengths, a_mask)
        b_bar = self.input_encoding(self.dropout(self.embedding(hypothesis)), hypothesis_lengths, b_mask)

        a_tilde, b_tilde = self.local_inference(a_bar, a_mask, b_bar, b_mask)
        m_a = pair_features(a_bar, a_tilde)  # the enhancement, eq. 14–15
        m_b = pair_features(b_bar, b_tilde)

        v_a = self.composition(self.dropout(self.projection(m_a)), premise_lengths, a_mask)
        v_b = self.composition(self.dropout(self.projection(m_b)), hypothesis_lengths, b_mask)

        v = torch.cat(
            [masked_mean(v_a, a_mask), masked_max(v_a, a_mask), masked_mean(v_b, b_mask), masked_max(v_b, b_mask)],
            dim=-1,
        )
        logits: Tensor = self.classification(v)
        return logits
