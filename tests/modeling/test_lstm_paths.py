"""The three LSTM paths of layers.SeqEncoder compute the same sums: the graphed and packed steps rest on it."""

import pytest
import torch

from modeling.nets import build_net
from modeling.nets.layers import SeqEncoder, reversed_within_length, set_lstm_path


def ragged_batch(vocab: int = 40) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    premise_lengths = torch.tensor([7, 3, 5, 1, 6])
    hypothesis_lengths = torch.tensor([2, 4, 4, 1, 3])
    premise = torch.zeros(5, 9, dtype=torch.long)
    hypothesis = torch.zeros(5, 6, dtype=torch.long)
    for row in range(5):
        premise[row, : premise_lengths[row]] = torch.randint(
            1, vocab, (int(premise_lengths[row]),), generator=generator
        )
        hypothesis[row, : hypothesis_lengths[row]] = torch.randint(
            1, vocab, (int(hypothesis_lengths[row]),), generator=generator
        )
    return premise, premise_lengths, hypothesis, hypothesis_lengths


@pytest.mark.parametrize("model", ["bilstm", "esim", "hypothesis_only"])
def test_static_and_unrolled_paths_give_the_packed_paths_logits(model: str) -> None:
    torch.manual_seed(0)
    net = build_net(model, 40, embedding_dim=8, hidden_dim=6, dropout=0.0).eval()
    batch = ragged_batch()
    logits = {}
    for path in ("packed", "static", "unrolled"):
        set_lstm_path(net, path)
        logits[path] = net(*batch)
    assert torch.allclose(logits["static"], logits["packed"], atol=1e-5)
    assert torch.allclose(logits["unrolled"], logits["packed"], atol=1e-5)


def test_the_backward_direction_starts_at_each_rows_last_real_token() -> None:
    """Padding a row further must not change its outputs: the reverse LSTM never reads a pad first."""
    torch.manual_seed(1)
    encoder = SeqEncoder(4, 3).eval()
    set_lstm_path(encoder, "static")
    x = torch.randn(1, 3, 4)
    mask = torch.ones(1, 3, dtype=torch.bool)
    short = encoder(x, None, mask)
    padded_x = torch.cat([x, torch.randn(1, 4, 4)], dim=1)
    padded_mask = torch.cat([mask, torch.zeros(1, 4, dtype=torch.bool)], dim=1)
    long = encoder(padded_x, None, padded_mask)
    assert torch.allclose(long[:, :3], short, atol=1e-6)
    assert long[:, 3:].abs().max() == 0


def test_the_reversal_is_its_own_inverse_and_leaves_pads() -> None:
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    index = reversed_within_length(mask)
    assert index.tolist() == [[2, 1, 0, 3], [0, 1, 2, 3]]
    assert torch.equal(index.gather(1, index), torch.arange(4).expand(2, 4))


def test_a_path_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="lstm path must be one of"):
        set_lstm_path(SeqEncoder(2, 2), "fast")
