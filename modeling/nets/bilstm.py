"""BiLSTM (MultiNLI §3): each sentence alone is the mean of its BiLSTM states; [u; v; u−v; u∗v] → tanh → 3."""

from torch import nn

from .layers import (
    SeqEncoder,
    TanhClassifier,
    make_embedding,
    masked_mean,
    padding_mask,
    pair_features,
)


class BiLSTM(nn.Module):
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
        self.dropout = nn.Dropout(dropout)
        self.encoder = SeqEncoder(embedding_dim, hidden_dim)
        self.classifier = TanhClassifier(
            4 * self.encoder.output_dim, hidden_dim, dropout=dropout, layers=mlp_layers, num_classes=num_classes
        )

    def encode(self, tokens, lengths):
        states = self.encoder(self.dropout(self.embedding(tokens)), lengths)
        return masked_mean(states, padding_mask(tokens))

    def forward(self, premise, premise_lengths, hypothesis, hypothesis_lengths):
        u = self.encode(premise, premise_lengths)
        v = self.encode(hypothesis, hypothesis_lengths)
        return self.classifier(pair_features(u, v))
