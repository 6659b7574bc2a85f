"""The graphed step (fixed shapes) and packed runs (several models in one vmap'd step) train what the
eager step trains: same batches, same sums. On this CPU the graphed step runs eagerly (no CUDA graph
to capture); its capture is measured on a GPU by bench/gpu_train.py."""

import pytest

from modeling.training.config import ConfigError, resolve_config
from modeling.training.data import SnapshotData, example_from_row
from modeling.training.graphed import WIDTHS, static_width
from modeling.training.loop import train
from modeling.training.packed import train_packed
from modeling.training.synthetic import synthetic_rows

SMALL = {
    "embedding_dim": 8,
    "hidden_dim": 8,
    "epochs": 3,
    "batch_size": 16,
    "cpu_threads": 1,
    "dropout": 0.0,  # dropout's masks are drawn per shape: with it, runs agree only within noise
    "embeddings": "random",
    "lr": 0.01,
    "patience": 1,
}


def corpus(seed: int, pairs: int) -> SnapshotData:
    dev = synthetic_rows(60, seed=seed + 100, giveaway="cat")
    return SnapshotData(
        train=[example_from_row(row, "train") for row in synthetic_rows(pairs, seed=seed, giveaway="cat")],
        evals={"dev_matched": [example_from_row(row, "dev_matched") for row in dev]},
        manifest={},
    )


def losses(results: dict) -> list[float]:
    return [entry["loss"] for entry in results["history"]]


@pytest.mark.parametrize("model", ["cbow", "bilstm"])
def test_the_graphed_step_trains_what_the_eager_step_trains(model: str) -> None:
    eager, _ = train(corpus(1, 200), model, dict(SMALL, step="eager"))
    graphed, _ = train(corpus(1, 200), model, dict(SMALL, step="graphed"))
    assert losses(graphed) == pytest.approx(losses(eager), abs=1e-5)
    assert graphed["accuracy"] == eager["accuracy"]
    assert graphed["best_epoch"] == eager["best_epoch"]


def test_a_packed_run_of_three_models_gives_each_its_lone_metrics() -> None:
    runs = [
        (corpus(1, 200), dict(SMALL, seed=1)),
        (corpus(2, 150), dict(SMALL, seed=2)),
        (corpus(3, 260), dict(SMALL, seed=3)),
    ]
    alone = [train(data, "bilstm", dict(config, step="graphed"))[0] for data, config in runs]
    packed = train_packed([data for data, _ in runs], "bilstm", [config for _, config in runs])
    for lone, together in zip(alone, packed, strict=True):
        assert losses(together) == pytest.approx(losses(lone), abs=1e-4)
        assert together["accuracy"] == lone["accuracy"]
        assert (together["best_epoch"], together["stopped_by"]) == (lone["best_epoch"], lone["stopped_by"])
    # The runs differ from each other: equal metrics above are each run's own, not a shared model's.
    assert len({tuple(losses(result)) for result in packed}) == 3


def test_packed_runs_of_different_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="packed runs must share hidden_dim"):
        train_packed([corpus(1, 40), corpus(2, 40)], "cbow", [SMALL, dict(SMALL, hidden_dim=16)])


def test_batches_are_padded_to_a_few_widths() -> None:
    assert [static_width(n, 128) for n in (1, 8, 9, 17, 33, 100, 500)] == [8, 8, 16, 24, 48, 128, 128]
    assert static_width(5000, 5000) == 5000 and tuple(sorted(WIDTHS)) == WIDTHS


def test_an_unknown_step_is_refused() -> None:
    with pytest.raises(ConfigError, match="step must be one of eager, graphed"):
        resolve_config("esim", {"step": "fast"})
