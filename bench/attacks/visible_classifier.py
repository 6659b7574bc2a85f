"""A classifier over everything a participant can see (extending tests/validation/catch_attack.py): does
any of it tell an item's author label, or whether it is a catch trial?

Participants take part by HTTP and answer at random; per item the attacker records what the pages
show: its position and the batch's size, its premise's repetitions (in the batch, side by side, and
in the participant's earlier batches), the hypothesis (length, and its words hashed into buckets),
the response times of `/validate/next/` and the batch page, and the item's identifier (the form
field name read as a number, and its rank in the batch). A logistic regression (torch, multinomial,
class-weighted) is cross-validated in five folds split by premise (a pair served to several
participants must not be learnt in one fold and scored in another: the model would memorise its
text, which no participant can learn the label of); the held-out predictions are
scored against the author label (three classes, chance 1/3) and against catch-trial-ness (binary,
chance 0.5), each with a bootstrap interval. The study's hypotheses are drawn from one vocabulary
whatever their label (`_common`), so the text itself carries no label.

Setup: a validation study of its own, 120 premises of three pairs plus 20 catch premises, a catch
share of 0.15, eight batches per code; 24 participants. At chance: both intervals cover chance.
"""

import random
import zlib
from collections import Counter
from typing import Any

from . import _common

NAME = "visible_classifier"
CLAIM = "Predict author label and catch-trial-ness from order, premise repetition, text, response time and ids."

BUCKETS = 16
SIZE = 5


def _number(name: str) -> float:
    """The identifier as an attacker would read it: trailing digits, else the token as hex."""
    suffix = name.rsplit("-", 1)[-1]
    if suffix.isdigit():
        return float(int(suffix))
    try:
        return float(int(suffix[:12], 16))
    except ValueError:
        return float(zlib.crc32(suffix.encode()))


def features(batch: _common.Batch, earlier_premises: dict[str, int]) -> list[list[float]]:
    """One row per item of the batch, in page order."""
    items = batch.items
    numbers = [_number(item.name) for item in items]
    ranks = {value: rank for rank, value in enumerate(sorted(numbers))}
    rows = []
    for index, item in enumerate(items):
        position = [1.0 if index == slot else 0.0 for slot in range(SIZE)]
        same = [other.premise == item.premise for other in items]
        before = index > 0 and items[index - 1].premise == item.premise
        after = index + 1 < len(items) and items[index + 1].premise == item.premise
        run_index = 0
        while index - run_index - 1 >= 0 and items[index - run_index - 1].premise == item.premise:
            run_index += 1
        words = item.hypothesis.lower().split()
        hashed = [0.0] * BUCKETS
        for word in words:
            hashed[zlib.crc32(word.encode()) % BUCKETS] += 1.0
        rows.append(
            [
                *position,
                len(items) / SIZE,
                sum(same) - 1.0,
                float(before),
                float(after),
                float(run_index),
                float(earlier_premises.get(item.premise, 0)),
                len(words) / 10,
                len(item.hypothesis) / 60,
                batch.next_ms / 100,
                batch.page_ms / 100,
                ranks[numbers[index]] / SIZE,
                (numbers[index] % 1000) / 1000,
                *hashed,
            ]
        )
    return rows


def _fit(x, y, classes: int, *, seed: int):
    """A class-weighted, lightly L2-regularised multinomial logistic regression, fitted by L-BFGS."""
    import torch

    counts = torch.bincount(y, minlength=classes).float().clamp(min=1)
    torch.manual_seed(seed)
    model = torch.nn.Linear(x.shape[1], classes)
    optimiser = torch.optim.LBFGS(model.parameters(), max_iter=200)
    loss_fn = torch.nn.CrossEntropyLoss(weight=counts.sum() / counts)

    def closure():
        optimiser.zero_grad()
        loss = loss_fn(model(x), y) + 1e-3 * model.weight.pow(2).sum()
        loss.backward()
        return loss

    optimiser.step(closure)
    return model


def cross_validated(rows: list[list[float]], targets: list, groups: list, *, seed: int, folds: int = 5) -> list:
    """Held-out predictions of a class-weighted logistic regression, folds split by `groups`."""
    import torch

    classes = sorted(set(targets))
    index = {cls: number for number, cls in enumerate(classes)}
    x_all = torch.tensor(rows, dtype=torch.float32)
    y_all = torch.tensor([index[t] for t in targets])
    # Stratified: groups go round the folds by their commonest target, so every fold holds its share
    # of each class (catch premises are few: unevenly spread, a model that learnt nothing could still
    # score above chance from the folds' class shares alone).
    by_target: dict[Any, list] = {}
    for group in sorted(set(groups)):
        shares = Counter(t for t, g in zip(targets, groups, strict=True) if g == group)
        by_target.setdefault(min(shares, key=lambda t: (-shares[t], str(t))), []).append(group)
    fold_of = {}
    turn = 0
    for _, members in sorted(by_target.items(), key=lambda item: str(item[0])):
        for group in members:
            fold_of[group] = turn % folds
            turn += 1
    predicted: list = [None] * len(targets)
    for fold in range(folds):
        train = [i for i, g in enumerate(groups) if fold_of[g] != fold]
        test = [i for i, g in enumerate(groups) if fold_of[g] == fold]
        if not test or not train:
            continue
        x, y = x_all[train], y_all[train]
        mean, std = x.mean(0), x.std(0) + 1e-6
        model = _fit((x - mean) / std, y, len(classes), seed=seed + fold)
        with torch.no_grad():
            out = model((x_all[test] - mean) / std).argmax(1).tolist()
        for i, cls in zip(test, out, strict=True):
            predicted[i] = classes[cls]
    return predicted


def run(base_url: str, *, seed: int = 0, participants: int = 24) -> dict:
    slug = _common.build_validation_study(
        NAME, seed=seed, premises=120, catch_premises=20, share=0.15, tasks_per_batch=8
    )
    rng = random.Random(seed)
    rows: list[list[float]] = []
    labels: list[str] = []
    catch: list[bool] = []
    groups: list[str] = []
    for number in range(participants):
        session = _common.take_part(
            base_url,
            slug,
            f"VISIBLE{slug[-10:]}x{number}",
            lambda batch, history: {item.name: rng.choice(_common.LABELS) for item in batch.items},
        )
        seen: dict[str, int] = {}
        for batch in session.batches:
            for item, row in zip(batch.items, features(batch, seen), strict=True):
                truth = batch.truth[item.name]
                rows.append(row)
                labels.append(truth.author_label)
                catch.append(truth.is_catch)
                groups.append(item.premise)
            for item in batch.items:
                seen[item.premise] = seen.get(item.premise, 0) + 1
    ordinary = [i for i, is_catch in enumerate(catch) if not is_catch]
    label_pred = cross_validated(
        [rows[i] for i in ordinary], [labels[i] for i in ordinary], [groups[i] for i in ordinary], seed=seed
    )
    label_true = [labels[i] for i in ordinary]
    label_value = _common.balanced_accuracy(label_pred, label_true)
    label_interval = _common.bootstrap_interval(label_pred, label_true, seed=seed)
    catch_pred = cross_validated(rows, catch, groups, seed=seed)
    catch_value = _common.balanced_accuracy(catch_pred, catch)
    catch_interval = _common.bootstrap_interval(catch_pred, catch, seed=seed)
    at_chance = _common.covers(label_interval, 1 / 3) and _common.covers(catch_interval, 0.5)
    return {
        "attack": NAME,
        "tries": len(rows),
        "succeeded": sum(p == t for p, t in zip(label_pred, label_true, strict=True)),
        "measure": "cv balanced accuracy vs author label",
        "value": round(label_value, 3),
        "interval": label_interval,
        "at_chance_or_refused": at_chance,
        "detail": (
            f"{len(rows)} items ({sum(catch)} catch trials) from {participants} participants; "
            f"vs catch-trial-ness: {catch_value:.3f} {catch_interval} (chance 0.5)"
        ),
    }
