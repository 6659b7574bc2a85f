"""A training run's configuration: the papers' defaults and the checks on what a researcher asks for.

Free of torch and of Django on purpose: the web site validates a launch without loading torch,
and the training loop runs without Django.
"""

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# The baselines, by name: modeling.models.ModelKind offers these to the database and forms,
# and modeling.nets has one file per name (a test keeps the registry equal).
MODELS = {
    "majority": "most frequent class",
    "cbow": "CBOW",
    "bilstm": "BiLSTM",
    "esim": "ESIM",
    "hypothesis_only": "hypothesis-only",
}
MODEL_NAMES = tuple(MODELS)

# Defaults of MultiNLI §3 / Chen et al. 2017: 300-d embeddings and hidden states, Adam,
# dropout 0.1 (CBOW, BiLSTM) and 0.5 (ESIM), lr 4e-4 for ESIM.
# A config is a JSON object: values of several types, checked against TYPES and BOUNDS below.
DEFAULTS: dict[str, Any] = {
    "embedding_dim": 300,
    "hidden_dim": 300,
    "dropout": 0.1,
    "lr": 1e-3,
    "batch_size": 32,
    "epochs": 10,
    "patience": 3,
    "max_len": 128,
    "seed": 1,
    "train_genre": None,
    "mix_dataset": None,
    "mix_fraction": 0.15,
    "device": "auto",
    "embeddings": None,  # None: settings.EMBEDDINGS_FILE or random; "random"; a path; "glove-6b-50d"
    "mlp_layers": 1,
    "grad_clip": 10.0,
    "max_minutes": None,  # stop after the epoch that crosses this wall-clock budget
    "bucket": True,  # length-bucketed batches (False: the plain baseline of bench/train.py)
    "amp": True,  # mixed precision, used only on CUDA
    "train_eval_limit": 5000,  # train accuracy is measured on at most this many train pairs
    "cpu_threads": None,  # torch threads on a CPU node (None: torch's default); 1 on a busy machine
    # "graphed": fixed shapes, each captured as a CUDA graph on a GPU (graphed.py); eager stays the
    # default until a GPU run has measured the graphed step's accuracy.
    "step": "eager",
}
STEPS = ("eager", "graphed")
MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "esim": {"dropout": 0.5, "lr": 4e-4},
    "majority": {"epochs": 0},
}
# Named embedding sources; any other value must be a file under EMBEDDINGS_DIR (or the
# operator's own EMBEDDINGS_FILE), so a config cannot make a node read any path it can see.
NAMED_EMBEDDINGS = ("random", "glove-6b-50d")
# Bounds of every numeric key (inclusive); a value outside, NaN or infinite is refused.
BOUNDS = {
    "embedding_dim": (1, 2048),
    "hidden_dim": (1, 4096),
    "batch_size": (1, 4096),
    "epochs": (0, 1000),
    "patience": (1, 1000),
    "mlp_layers": (1, 8),
    "max_len": (1, 4096),
    "seed": (0, 2**32 - 1),
    "cpu_threads": (1, 256),
    "train_eval_limit": (0, 10_000_000),
    "lr": (1e-8, 10.0),
    "grad_clip": (1e-6, 1e6),
    "max_minutes": (0.1, 7 * 24 * 60),
}
_NULLABLE = ("max_len", "max_minutes", "cpu_threads")
_TYPES = {
    "embedding_dim": int,
    "hidden_dim": int,
    "batch_size": int,
    "epochs": int,
    "patience": int,
    "seed": int,
    "mlp_layers": int,
    "train_eval_limit": int,
    "dropout": float,
    "lr": float,
    "mix_fraction": float,
    "grad_clip": float,
    "bucket": bool,
    "amp": bool,
}
TYPES = {**_TYPES, "max_len": int, "cpu_threads": int, "max_minutes": float}  # with the nullable ones


class ConfigError(ValueError):
    pass


def resolve_config(model: str, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The full config a run uses: defaults, then the model's defaults, then the caller's keys."""
    if model not in MODEL_NAMES:
        raise ConfigError(f"unknown model {model!r}; choose one of {', '.join(MODEL_NAMES)}")
    config = dict(config or {})
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"unknown config key(s): {', '.join(unknown)}; known: {', '.join(DEFAULTS)}")
    resolved = {**DEFAULTS, **MODEL_DEFAULTS.get(model, {}), **config}
    for key, kind in TYPES.items():
        if resolved[key] is None and key in _NULLABLE:
            continue
        resolved[key] = _typed(key, resolved[key], kind)
    for key, (low, high) in BOUNDS.items():
        if resolved[key] is not None and not low <= resolved[key] <= high:
            raise ConfigError(f"config {key} must be from {low:g} to {high:g}, got {resolved[key]!r}")
    if not 0.0 <= resolved["dropout"] < 1.0:
        raise ConfigError("config dropout must be in [0, 1)")
    if not 0.0 <= resolved["mix_fraction"] <= 1.0:
        raise ConfigError("config mix_fraction must be in [0, 1]")
    device = resolved["device"] if resolved["device"] is not None else "auto"
    if not isinstance(device, str) or (device != "auto" and not re.fullmatch(r"cpu|cuda(:\d{1,2})?", device)):
        raise ConfigError(f"config device must be auto, cpu, cuda or cuda:N, not {device!r}")
    resolved["device"] = device
    if resolved["step"] not in STEPS:
        raise ConfigError(f"config step must be one of {', '.join(STEPS)}, not {resolved['step']!r}")
    for key in ("train_genre", "mix_dataset", "embeddings"):
        value = resolved[key]
        if value is None:
            continue
        if not isinstance(value, str) or not value or len(value) > 500 or "\x00" in value:
            raise ConfigError(f"config {key} must be a non-empty string (at most 500 characters) or null")
    if resolved["embeddings"] is not None:
        resolved["embeddings"] = check_embeddings(resolved["embeddings"])
    return resolved


def _typed(key: str, value: object, kind: type[bool] | type[int] | type[float]) -> bool | int | float:
    """`value` as `kind`, refusing what only looks like it: "false" as a bool, 2.5 or True as an
    int, NaN and infinities as numbers."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"config {key} must be true or false, got {value!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"config {key} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    try:
        number = float(value) if isinstance(value, str) else value
        if isinstance(number, float) and not math.isfinite(number):
            raise ValueError
        if kind is int:
            if isinstance(number, float) and not number.is_integer():
                raise ValueError
            return int(number)
        return float(number)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(
            f"config {key} must be {'an integer' if kind is int else 'a finite number'}, got {value!r}"
        ) from None


def embeddings_dir() -> Path | None:
    value = os.environ.get("EMBEDDINGS_DIR", "")
    return Path(value).resolve() if value else None


def check_embeddings(value: str) -> str:
    """A named source, the operator's EMBEDDINGS_FILE, or a file under EMBEDDINGS_DIR (returned
    as its resolved path); anything else is a ConfigError that says what is allowed."""
    if value in NAMED_EMBEDDINGS:
        return value
    operator_file = os.environ.get("EMBEDDINGS_FILE", "")
    if operator_file and value == operator_file:
        return value
    root = embeddings_dir()
    allowed = f"{', '.join(NAMED_EMBEDDINGS)}" + (f", or a file under {root}" if root else "")
    if root is not None:
        candidate = (root / value).resolve()  # an absolute value stays absolute; ../ is resolved
        if candidate != root and candidate.is_relative_to(root):
            return str(candidate)
    raise ConfigError(f"config embeddings must be {allowed}; got {value!r}")
