"""Hypothesis-only baseline (Poliak et al. 2018, §3): an InferSent-style BiLSTM with max pooling
over the hypothesis alone → MLP → 3. The premise is never read: any accuracy above the majority
class comes from annotation artifacts in the hypotheses."""

from torch import Tensor

from .layers import SentenceEncoderNet, masked_max, padding_mask


class HypothesisOnly(SentenceEncoderNet):
    pair_input = False

    def encode(self, tokens: Tensor, lengths: Tensor | None) -> Tensor:
        mask = padding_mask(tokens)
        states = self.encoder(self.dropout(self.embedding(tokens)), lengths, mask)
        return masked_max(states, mask)

    def forward(
        self, premise: Tensor, premise_lengths: Tensor | None, hypothesis: Tensor, hypothesis_lengths: Tensor | None
    ) -> Tensor:
        logits: Tensor = self.classifier(self.encode(hypothesis, hypothesis_lengths))
        return logits
