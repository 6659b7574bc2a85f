"""Each baseline can fit a tiny dataset, pads never change a prediction, and the registry is strict."""

import pytest
import torch

from modeling.nets import NETS, build_net
from modeling.nets.layers import masked_max, masked_mean, masked_softmax
from modeling.training.data import (
    SnapshotData,
    Vocab,
    collate,
    encode_examples,
    example_from_row,
)
from modeling.training.loop import Trainer, resolve_config, train

from .training_fixtures import learnable_rows

TINY = {
    "embedding_dim": 16,
    "hidden_dim": 16,
    "dropout": 0.0,
    "lr": 0.01,
    "batch_size": 8,
    "epochs": 25,
    "patience": 100,
    "seed": 3,
    "cpu_threads": 1,
}
torch.set_num_threads(1)  # tiny models on a shared CPU: one thread is the fastest
TRAINABLE = [name for name in NETS if name != "majority"]


def examples(rows, split="train"):
    return [example_from_row(row, split) for row in rows]


@pytest.mark.parametrize("model", TRAINABLE)
def test_every_model_fits_a_tiny_dataset(model):
    # Cue words make the labels learnable; 45 pairs must be (nearly) memorised.
    data = SnapshotData(train=examples(learnable_rows(45, seed=11)), evals={}, manifest={})
    results, _ = train(data, model, TINY)
    assert results["train_accuracy"] >= 0.95, results["train_accuracy"]
    assert results["epochs_run"] == TINY["epochs"]


def test_majority_predicts_the_most_frequent_train_label():
    rows = learnable_rows(40, seed=2)
    for row in rows[:20]:
        row["gold_label"] = "neutral"
    train_ex = examples(rows)
    expected = max(
        ("entailment", "neutral", "contradiction"), key=lambda label: sum(r["gold_label"] == label for r in rows)
    )
    test_rows = learnable_rows(30, seed=5)
    data = SnapshotData(train=train_ex, evals={"test": examples(test_rows, "test")}, manifest={})
    results, _trainer = train(data, "majority", {})
    assert results["majority_label"] == expected == "neutral"
    share = sum(r["gold_label"] == expected for r in test_rows) / len(test_rows)
    assert results["accuracy"]["test"] == pytest.approx(share, abs=1e-6)
    assert results["epochs_run"] == 0


@pytest.mark.parametrize("model", TRAINABLE)
def test_padding_never_changes_a_prediction(model):
    rows = learnable_rows(6, seed=4)
    rows[0]["sentence1"] = " ".join(["word"] * 40)  # forces wide padding on every other row
    rows[0]["sentence2"] = " ".join(["other"] * 25)
    exs = examples(rows)
    vocab = Vocab.build(exs)
    encode_examples(exs, vocab)
    torch.manual_seed(0)
    config = resolve_config(model, {"embedding_dim": 8, "hidden_dim": 8})
    trainer = Trainer(model, config, vocab)
    trainer.net.eval()
    with torch.no_grad():
        batch = collate(exs)
        together = trainer.net(batch.premise, batch.premise_lengths, batch.hypothesis, batch.hypothesis_lengths)
        for i, ex in enumerate(exs):
            alone = collate([ex])
            logits = trainer.net(alone.premise, alone.premise_lengths, alone.hypothesis, alone.hypothesis_lengths)
            torch.testing.assert_close(logits[0], together[i], atol=1e-5, rtol=1e-4)


def test_masked_pooling_and_softmax_ignore_pads():
    x = torch.tensor([[[1.0], [3.0], [100.0]], [[-2.0], [-4.0], [-8.0]]])
    mask = torch.tensor([[True, True, False], [True, True, True]])  # lengths 2 and 3
    assert masked_mean(x, mask).squeeze(-1).tolist() == pytest.approx([2.0, -14 / 3])
    assert masked_max(x, mask).squeeze(-1).tolist() == [3.0, -2.0]
    weights = masked_softmax(torch.zeros(2, 3), mask)
    assert weights[0].tolist() == pytest.approx([0.5, 0.5, 0.0])
    assert weights[1].tolist() == pytest.approx([1 / 3] * 3)


def test_registry_names_every_model_kind_and_refuses_others():
    from modeling.models import ModelKind

    assert set(NETS) == set(ModelKind.values)
    with pytest.raises(ValueError, match="unknown model 'transformer'"):
        build_net("transformer", 10)
    assert build_net("esim", 10, embedding_dim=4, hidden_dim=4).projection[0].in_features == 4 * 2 * 4


def test_paper_defaults_and_config_checks():
    assert resolve_config("esim")["dropout"] == 0.5 and resolve_config("esim")["lr"] == 4e-4
    cbow = resolve_config("cbow")
    assert (cbow["embedding_dim"], cbow["hidden_dim"], cbow["dropout"], cbow["lr"]) == (300, 300, 0.1, 1e-3)
    assert resolve_config("bilstm", {"hidden_dim": "64"})["hidden_dim"] == 64
    with pytest.raises(ValueError, match="unknown config key"):
        resolve_config("cbow", {"hiden_dim": 5})
    with pytest.raises(ValueError, match="dropout"):
        resolve_config("cbow", {"dropout": 1.5})
    with pytest.raises(ValueError, match="epochs must be from 0 to 1000"):
        resolve_config("cbow", {"epochs": 10**6})
    with pytest.raises(ValueError, match="device must be"):
        resolve_config("cbow", {"device": "tpu"})


def test_training_is_deterministic_with_a_seed():
    rows = learnable_rows(30, seed=8)
    outcomes = []
    for _ in range(2):
        data = SnapshotData(train=examples(rows), evals={"dev": examples(learnable_rows(12, 9), "dev")}, manifest={})
        results, _ = train(data, "bilstm", dict(TINY, epochs=3))
        outcomes.append([h["loss"] for h in results["history"]])
    assert outcomes[0] == outcomes[1]


def test_model_names_agree_everywhere():
    from modeling.models import ModelKind
    from modeling.nets import NETS
    from modeling.training.config import MODEL_NAMES

    assert set(MODEL_NAMES) == set(ModelKind.values) == set(NETS)


def test_the_hypothesis_only_model_never_reads_the_premise():
    """Its whole point (Poliak et al. 2018): any premise, any length, gives the same prediction."""
    torch.manual_seed(0)
    net = build_net("hypothesis_only", 60, embedding_dim=8, hidden_dim=8, dropout=0.0).eval()
    hypothesis = torch.randint(1, 60, (4, 7))
    hypothesis_lengths = torch.tensor([7, 5, 3, 1])
    premises = [
        (torch.randint(1, 60, (4, 9)), torch.tensor([9, 9, 4, 2])),
        (torch.randint(1, 60, (4, 3)), torch.tensor([3, 1, 2, 3])),
        (torch.zeros(4, 1, dtype=torch.long), torch.tensor([1, 1, 1, 1])),
    ]
    with torch.no_grad():
        outputs = [net(premise, lengths, hypothesis, hypothesis_lengths) for premise, lengths in premises]
    assert all(torch.equal(outputs[0], other) for other in outputs[1:])
