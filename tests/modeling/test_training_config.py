"""Training configs are validated with bounds, and embeddings come from named sources or files
under EMBEDDINGS_DIR only (pure: no Django, no torch)."""

import math

import pytest

from modeling.training.config import ConfigError, check_embeddings, resolve_config


@pytest.mark.parametrize(
    "config, message",
    [
        ({"max_len": 0}, "max_len must be from 1 to 4096"),
        ({"max_len": 10**9}, "max_len must be from 1 to 4096"),
        ({"seed": -1}, "seed must be from 0"),
        ({"seed": 2**40}, "seed must be from 0"),
        ({"cpu_threads": 0}, "cpu_threads must be from 1 to 256"),
        ({"cpu_threads": 10_000}, "cpu_threads must be from 1 to 256"),
        ({"train_eval_limit": -5}, "train_eval_limit must be from 0"),
        ({"epochs": 10**6}, "epochs must be from 0 to 1000"),
        ({"epochs": 2.5}, "epochs must be an integer"),
        ({"epochs": True}, "epochs must be an integer"),
        ({"epochs": float("inf")}, "epochs must be an integer"),
        ({"lr": float("nan")}, "lr must be a finite number"),
        ({"lr": float("inf")}, "lr must be a finite number"),
        ({"lr": "Infinity"}, "lr must be a finite number"),
        ({"lr": 0}, "lr must be from"),
        ({"lr": 1e6}, "lr must be from"),
        ({"grad_clip": -1}, "grad_clip must be from"),
        ({"max_minutes": float("nan")}, "max_minutes must be a finite number"),
        ({"max_minutes": 10**9}, "max_minutes must be from"),
        ({"dropout": float("nan")}, "dropout must be a finite number"),
        ({"dropout": 1.0}, "dropout must be in [0, 1)"),
        ({"mix_fraction": float("nan")}, "mix_fraction must be a finite number"),
        ({"mix_fraction": 1.5}, "mix_fraction must be in [0, 1]"),
        ({"bucket": "false"}, "bucket must be true or false"),
        ({"amp": 1}, "amp must be true or false"),
        ({"batch_size": [32]}, "batch_size must be an integer"),
        ({"device": "cuda; rm -rf /"}, "device must be auto"),
        ({"device": 3}, "device must be auto"),
        ({"train_genre": "fic\x00tion"}, "train_genre must be a non-empty string"),
        ({"train_genre": ""}, "train_genre must be a non-empty string"),
        ({"embeddings": "/etc/passwd"}, "embeddings must be random, glove-6b-50d"),
        ({"embeddings": "../../etc/passwd"}, "embeddings must be random, glove-6b-50d"),
        ({"embeddings": 5}, "embeddings must be a non-empty string"),
        ({"bogus": 1}, "unknown config key"),
    ],
)
def test_bad_configs_are_refused_with_a_message(config, message, monkeypatch, tmp_path):
    monkeypatch.setenv("EMBEDDINGS_DIR", str(tmp_path))
    monkeypatch.delenv("EMBEDDINGS_FILE", raising=False)
    with pytest.raises(ConfigError) as error:
        resolve_config("cbow", config)
    assert message in str(error.value)


def test_good_configs_resolve_to_typed_values(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBEDDINGS_DIR", str(tmp_path))
    config = resolve_config(
        "cbow",
        {
            "max_len": "64",
            "seed": 7,
            "cpu_threads": 2,
            "lr": "0.002",
            "epochs": 3.0,
            "max_minutes": 5,
            "embeddings": "glove.txt",
        },
    )
    assert (config["max_len"], config["seed"], config["cpu_threads"], config["epochs"]) == (64, 7, 2, 3)
    assert math.isclose(config["lr"], 0.002) and config["max_minutes"] == 5.0
    assert config["embeddings"] == str((tmp_path / "glove.txt").resolve())
    assert resolve_config("esim")["cpu_threads"] is None and resolve_config("esim")["lr"] == 4e-4
    # The resolved config goes through resolve_config again on the worker: it must stay valid.
    assert resolve_config("cbow", config) == config


def test_embeddings_sources(monkeypatch, tmp_path):
    monkeypatch.delenv("EMBEDDINGS_DIR", raising=False)
    monkeypatch.setenv("EMBEDDINGS_FILE", "/srv/vectors/glove.840B.300d.txt")
    assert check_embeddings("random") == "random" and check_embeddings("glove-6b-50d") == "glove-6b-50d"
    assert check_embeddings("/srv/vectors/glove.840B.300d.txt") == "/srv/vectors/glove.840B.300d.txt"
    with pytest.raises(ConfigError, match="must be random, glove-6b-50d;"):
        check_embeddings("/srv/vectors/other.txt")  # no EMBEDDINGS_DIR: no other file
    monkeypatch.setenv("EMBEDDINGS_DIR", str(tmp_path))
    inside = str(tmp_path / "sub" / "v.txt")
    assert check_embeddings(inside) == inside
    with pytest.raises(ConfigError, match=f"or a file under {tmp_path}"):
        check_embeddings(str(tmp_path.parent / "escape.txt"))
    with pytest.raises(ConfigError):
        check_embeddings(str(tmp_path))
