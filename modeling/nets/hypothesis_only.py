"""Hypothesis-only baseline (Poliak et al. 2018, §3): an InferSent-style BiLSTM with max pooling
over the hypothesis alone → MLP → 3. The premise is never read: any accuracy above the majority
class comes from annotation artifacts in the hypotheses."""

from torch import nn

from .layers import SeqEncoder, TanhClassifier, make_embedding, masked_max, padding_mask


class HypothesisOnly(nn.Module):
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
            self.encoder.output_dim, hidden_dim, dropout=dropout, layers=mlp_layers, num_classes=num_classes
        )

    def forward(self, premise, premise_lengths, hypothesis, hypothesis_lengths):
        states = self.encoder(self.dropout(self.embedding(hypothesis)), hypothesis_lengths)
        v = masked_max(states, padding_mask(hypothesis))
        return self.classifier(v)
