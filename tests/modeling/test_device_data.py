"""The device-resident data path (modeling/training/device_data.py) against the host path it replaces.

On the CPU both paths must train on the same batches in the same order, so a seeded run ends with
the same weights and the same predictions: the new path changes where batches are made, never
what is learnt. (On CUDA the training step itself also changed, bf16 and fused Adam; that is
measured by bench/gpu_train.py, not asserted here.)
"""

import random

import pytest
import torch

from modeling.training import loop
from modeling.training.data import (
    Vocab,
    encode_examples,
    epoch_train_set,
    example_from_row,
    hypothesis_length,
    load_snapshot,
    make_batches,
    pair_length,
    split_for_mixing,
)
from modeling.training.device_data import DeviceTrainSet
from modeling.training.synthetic import synthetic_rows

from .training_fixtures import learnable_rows, write_snapshot_files

torch.set_num_threads(1)
FAST = {"embedding_dim": 8, "hidden_dim": 8, "batch_size": 16, "lr": 0.05, "cpu_threads": 1, "embeddings": "random"}


def encoded(rows):
    examples = [example_from_row(row, "train") for row in rows]
    for i, ex in enumerate(examples):
        ex.pair_id = str(i)
    encode_examples(examples, Vocab.build(examples), max_len=40)
    return examples


def ids_of(batch_examples):
    return [int(ex.pair_id) for ex in batch_examples]


@pytest.mark.parametrize("bucket", [True, False])
@pytest.mark.parametrize("sort_by,length", [("pair", pair_length), ("hypothesis", hypothesis_length)])
def test_each_epoch_covers_every_pair_once_in_the_host_paths_batches(bucket, sort_by, length):
    examples = encoded(synthetic_rows(1000, seed=4))  # lengths up to 40: many ties, several pools
    train_set = DeviceTrainSet(examples, [], "cpu", sort_by=sort_by)
    host_rng, device_rng = random.Random(7), random.Random(7)
    for _ in range(3):  # consecutive epochs draw from the rng as the host path does
        host = make_batches(examples, 16, rng=host_rng, bucket=bucket, pool_batches=5, length=length)
        planned, starts = train_set.plan(16, device_rng, bucket=bucket, pool_batches=5)
        order = planned.tolist()
        assert sorted(order) == list(range(len(examples)))  # every pair, exactly once
        device = [order[s : s + 16] for s in starts]
        assert device == [ids_of(b.examples) for b in host]


def test_device_batches_hold_the_host_batches_tensors():
    examples = encoded(synthetic_rows(300, seed=5))
    train_set = DeviceTrainSet(examples, [], "cpu")
    host = make_batches(examples, 32, rng=random.Random(1), pool_batches=3)
    device = list(train_set.epoch(32, random.Random(1), pool_batches=3))
    assert len(device) == len(host)
    for d, h in zip(device, host, strict=True):
        assert torch.equal(d.premise.long(), h.premise) and torch.equal(d.hypothesis.long(), h.hypothesis)
        assert torch.equal(d.premise_lengths, h.premise_lengths)
        assert torch.equal(d.hypothesis_lengths, h.hypothesis_lengths)
        assert torch.equal(d.labels, h.labels) and len(d) == len(h)


def test_mixing_draws_all_of_a_and_the_same_fresh_share_of_b_as_the_host_path():
    rows = synthetic_rows(100, seed=2, genres=("fiction",)) + synthetic_rows(200, seed=3, genres=("captions",))
    primary, secondary = split_for_mixing(encoded(rows), "captions")
    train_set = DeviceTrainSet(primary, secondary, "cpu")
    host_rng, device_rng = random.Random(3), random.Random(3)
    seen = []
    for _ in range(2):
        host = make_batches(epoch_train_set(primary, secondary, 0.15, host_rng), 16, rng=host_rng)
        planned, starts = train_set.plan(16, device_rng, fraction=0.15)
        order = planned.tolist()
        assert len(order) == len(set(order)) == 130 == train_set.pairs_per_epoch(0.15)
        assert set(range(100)) <= set(order)  # all of A
        assert [order[s : s + 16] for s in starts] == [ids_of(b.examples) for b in host]
        seen.append(set(order) - set(range(100)))
    assert seen[0] != seen[1]  # a fresh share of B each epoch


@pytest.fixture
def data(tmp_path):
    splits = {
        "train": learnable_rows(200, 1),
        "dev_matched": learnable_rows(40, 2),
        "test_matched": learnable_rows(60, 3),
    }
    write_snapshot_files(tmp_path / "snap", splits)
    return lambda: load_snapshot(tmp_path / "snap")


@pytest.mark.parametrize("model", ["cbow", "bilstm", "esim", "hypothesis_only"])
def test_a_seeded_run_ends_with_the_same_weights_and_predictions_on_either_path(data, model):
    config = dict(FAST, epochs=3, patience=10)
    host_data, device_data = data(), data()  # train() encodes each one's pairs with its run's vocabulary
    host_results, host = loop.train(host_data, model, config, data_path="host")
    device_results, device = loop.train(device_data, model, config, data_path="device")
    predictions = device.predict(device_data.evals["test_matched"])
    assert predictions == host.predict(host_data.evals["test_matched"])
    assert len(set(predictions)) > 1  # a model that learnt something, not a constant answer
    for name, weight in host.state().items():
        torch.testing.assert_close(device.state()[name], weight, rtol=1e-5, atol=1e-6, msg=name)
    assert device_results["accuracy"] == host_results["accuracy"]
    assert [h["train_pairs"] for h in device_results["history"]] == [h["train_pairs"] for h in host_results["history"]]
    for d, h in zip(device_results["history"], host_results["history"], strict=True):
        assert d["loss"] == pytest.approx(h["loss"], rel=1e-5)  # summed in float32 on the device, float64 before


def test_an_unknown_data_path_is_refused(data):
    with pytest.raises(ValueError, match="data_path must be device or host"):
        loop.train(data(), "cbow", FAST, data_path="gpu")
