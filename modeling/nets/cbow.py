"""CBOW (MultiNLI §3): each sentence is the sum of its word embeddings; [u; v; u−v; u∗v] → tanh → 3."""

from torch import nn

from .layers import (
    TanhClassifier,
    make_embedding,
    masked_sum,
    padding_mask,
    pair_features,
)


class CBOW(nn.Module):
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
        self.classifier = TanhClassifier(
            4 * embedding_dim, hidden_dim, dropout=dropout, layers=mlp_layers, num_classes=num_classes
        )

    def encode(self, tokens, lengths):
        return masked_sum(self.embedding(tokens), padding_mask(tokens))

    def forward(self, premise, premise_lengths, hypothesis, hypothesis_lengths):
        u = self.encode(premise, premise_lengths)
        v = self.encode(hypothesis, hypothesis_lengths)
        return self.classifier(pair_features(u, v))
