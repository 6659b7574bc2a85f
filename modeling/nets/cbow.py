"""CBOW (MultiNLI §3): each sentence is the sum of its word embeddings; [u; v; u−v; u∗v] → tanh → 3."""

from torch import Tensor

from .layers import SentenceEncoderNet, masked_sum, padding_mask


class CBOW(SentenceEncoderNet):
    recurrent = False

    def encode(self, tokens: Tensor, lengths: Tensor | None) -> Tensor:
        return masked_sum(self.embedding(tokens), padding_mask(tokens))
