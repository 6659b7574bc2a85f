"""What a GPU node may report about a run: the metrics the trainer writes (loop.train,
evaluate.summarize), with their ranges, and no more bytes than such metrics take.

A node is untrusted: a made-up figure, an unknown metric or megabytes of padding would otherwise be
stored as the run's. Each problem is named, so an honest node that drifted is told what to fix.
"""

import json
import math
from collections.abc import Mapping
from typing import Any

from modeling.snapshots.format import DEV_SPLITS_FOR_EARLY_STOPPING, EVALUATION_SPLITS

# The metrics without the per-pair predictions: a MultiNLI run's are under 20 KiB.
MAX_METRICS_BYTES = 64 * 1024
# A per-pair prediction costs its pairID and two letters; this is ample for any pairID a snapshot holds.
MAX_PREDICTION_BYTES = 64
# The finish request as a whole: the metrics, the predictions of every evaluated pair, the envelope.
ENVELOPE_BYTES = 4 * 1024

TOP_LEVEL = frozenset(
    {
        "splits",
        "accuracy",
        "predictions",
        "dev",
        "test",
        "matched",
        "mismatched",
        "train_accuracy",
        "train_pairs",
        "train_pairs_per_epoch",
        "vocab_size",
        "embeddings_covered",
        "dev_split",
        "best_epoch",
        "epochs_run",
        "stopped_by",
        "history",
        "device",
        "amp",
        "amp_dtype",
        "seconds",
        "config",
        "majority_baseline",
        "majority_label",
        "labels",
        "restarts",
        "snapshot_source",
    }
)
REPORT_KEYS = frozenset({"n", "correct", "accuracy", "excluded_no_gold", "per_genre", "per_label", "confusion"})
HISTORY_KEYS = frozenset({"epoch", "loss", "dev_accuracy", "train_pairs", "seconds"})
COUNTS = frozenset(
    {
        "n",
        "correct",
        "excluded_no_gold",
        "train_pairs",
        "train_pairs_per_epoch",
        "vocab_size",
        "embeddings_covered",
        "best_epoch",
        "epochs_run",
        "restarts",
        "epoch",
    }
)
SHARES = frozenset({"accuracy", "dev_accuracy", "train_accuracy"})
# Objects whose every number is an accuracy: split -> accuracy, phase -> accuracy.
SHARE_MAPS = SHARES | {"matched", "mismatched"}
PREDICTION_LETTERS = frozenset("enc-")
PHASES = ("dev", "test")


def metrics_size(results: Mapping[str, Any]) -> int:
    """Bytes of the results as JSON, the per-pair predictions left out (they are bounded by the snapshot)."""
    return len(json.dumps({k: v for k, v in results.items() if k != "predictions"}, default=str))


def finish_body_limit(evaluated_rows: int) -> int:
    """The most bytes a finish request may hold for a snapshot with this many evaluation rows."""
    return MAX_METRICS_BYTES + MAX_PREDICTION_BYTES * max(0, evaluated_rows) + ENVELOPE_BYTES


def _number_problems(value: object, key: str, where: str, problems: list[str], share: bool = False) -> None:
    """Every number under `value`: finite, accuracies in [0, 1], counts non-negative integers, losses
    and seconds >= 0. `share`: `value` is (inside) a map of accuracies, e.g. split -> accuracy."""
    if isinstance(value, Mapping):
        inner_share = share or key in SHARE_MAPS
        for inner_key, inner in value.items():
            _number_problems(inner, str(inner_key), f"{where}.{inner_key}", problems, inner_share)
        return
    if isinstance(value, list):
        for index, inner in enumerate(value):
            _number_problems(inner, key, f"{where}[{index}]", problems, share)
        return
    if value is None or isinstance(value, str | bool):
        if key in COUNTS and isinstance(value, bool):
            problems.append(f"{where} must be a count (a non-negative integer), not {value!r}")
        return
    if not isinstance(value, int | float):
        problems.append(f"{where} is not a number, text, list or object")
        return
    if not math.isfinite(value):
        problems.append(f"{where} is {value}: every figure must be a finite number")
    elif (share or key in SHARES) and not 0.0 <= value <= 1.0:
        problems.append(f"{where} is {value}: an accuracy lies between 0 and 1")
    elif key in COUNTS and (not isinstance(value, int) or value < 0):
        problems.append(f"{where} is {value}: a count is a non-negative integer")
    elif key in ("loss", "seconds") and value < 0:
        problems.append(f"{where} is {value}: it cannot be negative")


def _split_names(mapping: object, where: str, problems: list[str], allowed: tuple[str, ...]) -> dict[str, Any]:
    if mapping is None:
        return {}
    if not isinstance(mapping, Mapping):
        problems.append(f"{where} must be an object")
        return {}
    unknown = sorted(str(k) for k in mapping if k not in allowed)
    if unknown:
        problems.append(f"{where} names unknown splits {', '.join(unknown)} (known: {', '.join(allowed)})")
    return dict(mapping)


def _report_problems(report: object, where: str, problems: list[str]) -> None:
    if not isinstance(report, Mapping):
        problems.append(f"{where} must be an object")
        return
    unknown = sorted(str(k) for k in report if k not in REPORT_KEYS)
    if unknown:
        problems.append(f"{where} has unknown metrics {', '.join(unknown)}")
    n, correct = report.get("n"), report.get("correct")
    if isinstance(n, int) and isinstance(correct, int) and correct > n:
        problems.append(f"{where}: {correct} correct of {n} pairs")


def _prediction_problems(predictions: object, split_rows: Mapping[str, int] | None, problems: list[str]) -> None:
    for split, rows in _split_names(predictions, "predictions", problems, EVALUATION_SPLITS).items():
        where = f"predictions.{split}"
        if not isinstance(rows, Mapping) or set(rows) != {"pair_ids", "gold", "predicted"}:
            problems.append(f"{where} must hold exactly pair_ids, gold and predicted")
            continue
        ids, gold, predicted = rows["pair_ids"], rows["gold"], rows["predicted"]
        if not isinstance(ids, list) or not all(isinstance(i, str) and len(i) <= 200 for i in ids):
            problems.append(f"{where}.pair_ids must be a list of pairIDs")
            continue
        if not isinstance(gold, str) or not isinstance(predicted, str) or not len(ids) == len(gold) == len(predicted):
            problems.append(f"{where}: gold and predicted need one letter per pairID")
            continue
        if not set(gold + predicted) <= PREDICTION_LETTERS:
            problems.append(f"{where}: gold and predicted are letters e, n, c or -")
        expected = (split_rows or {}).get(split)
        if split_rows is not None and expected != len(ids):
            problems.append(
                f"{where} has {len(ids)} pairs; the snapshot's {split} file has {expected or 0}"
                if expected
                else f"{where}: the snapshot has no {split} file"
            )


def node_results_problems(results: object, *, split_rows: Mapping[str, int] | None = None) -> list[str]:
    """What is wrong with a node's results, in words; [] when they may be stored. `split_rows`: rows
    per evaluation split of the run's snapshot, which each split's predictions must cover exactly."""
    if not isinstance(results, Mapping):
        return ["results must be an object"]
    problems: list[str] = []
    unknown = sorted(str(k) for k in results if k not in TOP_LEVEL)
    if unknown:
        problems.append(f"unknown metrics {', '.join(unknown)} (a node reports what the trainer computes)")
    size = metrics_size(results)
    if size > MAX_METRICS_BYTES:
        problems.append(f"the metrics take {size} bytes; at most {MAX_METRICS_BYTES} are kept")
        return problems  # nothing more is read of an oversized report
    if not isinstance(results.get("accuracy"), Mapping):
        problems.append("results need an 'accuracy' object (split file -> accuracy)")
    _split_names(results.get("accuracy"), "accuracy", problems, EVALUATION_SPLITS)
    for split, report in _split_names(results.get("splits"), "splits", problems, EVALUATION_SPLITS).items():
        _report_problems(report, f"splits.{split}", problems)
    for phase in PHASES:
        if phase in results:
            _report_problems(results[phase], phase, problems)
    for kind in ("matched", "mismatched"):
        _split_names(results.get(kind), kind, problems, PHASES)
    dev_split = results.get("dev_split")
    if dev_split is not None and dev_split not in DEV_SPLITS_FOR_EARLY_STOPPING:
        problems.append(f"dev_split must be one of {', '.join(DEV_SPLITS_FOR_EARLY_STOPPING)} or null")
    history = results.get("history", [])
    if not isinstance(history, list) or not all(isinstance(e, Mapping) and set(e) <= HISTORY_KEYS for e in history):
        problems.append(f"history is a list of epochs with {', '.join(sorted(HISTORY_KEYS))}")
    _number_problems({k: v for k, v in results.items() if k not in ("predictions", "config")}, "", "results", problems)
    _prediction_problems(results.get("predictions"), split_rows, problems)
    return problems


def history_problems(history: object) -> list[str]:
    """What is wrong with a heartbeat's per-epoch history, in words."""
    if not isinstance(history, list) or not all(isinstance(e, Mapping) and set(e) <= HISTORY_KEYS for e in history):
        return [f"history is a list of epochs with {', '.join(sorted(HISTORY_KEYS))}"]
    problems: list[str] = []
    _number_problems(history, "", "history", problems)
    return problems
