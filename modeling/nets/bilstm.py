"""BiLSTM (MultiNLI §3): each sentence alone is the mean of its BiLSTM states; [u; v; u−v; u∗v] → tanh → 3."""

from torch import Tensor

from .layers import SentenceEncoderNet, masked_mean, padding_mask


class BiLSTM(SentenceEncoderNet):
    def encode(self, tokens: Tensor, lengths: Tensor | None) -> Tensor:
        mask = padding_mask(tokens)
        states = self.encoder(self.dropout(self.embedding(tokens)), lengths, mask)
        return masked_mean(states, mask)
