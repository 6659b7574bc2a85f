"""The dev pass at fixed shapes (device_eval.DeviceEvalSet, what the graphed step evaluates with)
predicts what Trainer.predict predicts, pair for pair, for every net, with a last batch filled."""

import pytest

from modeling.training.data import NO_LABEL
from modeling.training.device_eval import DeviceEvalSet
from modeling.training.loop import train

from .test_graphed_and_packed_training import SMALL, corpus


@pytest.mark.parametrize("model", ["cbow", "bilstm", "esim", "hypothesis_only"])
def test_the_fixed_shape_dev_pass_predicts_what_the_collated_pass_predicts(model: str) -> None:
    data = corpus(4, 200)
    _, trainer = train(data, model, dict(SMALL, step="graphed", lr=0.05))
    dev = [example for example in data.evals["dev_matched"] if example.label != NO_LABEL]
    assert len(dev) % 16, "a last batch with filler rows"

    fixed = DeviceEvalSet(trainer, dev, batch_size=16)

    assert fixed.predict() == trainer.predict(dev, batch_size=16)
    assert fixed.accuracy(dev) == trainer.accuracy(dev)
    # Not one label everywhere: the comparison above says something about each pair.
    assert len(set(fixed.predict())) > 1


def test_an_empty_split_predicts_nothing() -> None:
    data = corpus(5, 40)
    _, trainer = train(data, "cbow", dict(SMALL, step="graphed", epochs=1))
    assert DeviceEvalSet(trainer, [], batch_size=16).predict() == []


def test_capture_is_refused_off_cuda() -> None:
    data = corpus(6, 40)
    _, trainer = train(data, "cbow", dict(SMALL, step="graphed", epochs=1))
    with pytest.raises(ValueError, match="CUDA graphs need a CUDA device"):
        DeviceEvalSet(trainer, data.evals["dev_matched"], batch_size=16, graphs=True)
