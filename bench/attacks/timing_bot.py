"""The timing bot: tells batches with a catch trial from those without by how long
the server takes to hand them out.

Times `/validate/next/` (the claim) and the batch page for every batch; the judge (Django against the
server's DATABASE_URL) says afterwards which batches held a catch trial. A threshold on one timing
("slower than t ms means a catch trial", or faster) is fitted on half the batches (the best balanced
accuracy over every threshold and direction, on either timing) and scored on the other half.

Setup: a validation study of its own, 90 premises of three pairs plus 16 catch premises, a catch
share of 0.13 (about half the batches of five hold one), ten batches per code; 20 participants.

Scored: the held-out balanced accuracy (binary, chance 0.5) with a bootstrap interval. At chance: the
interval covers 0.5.
"""

import random

from . import _common

NAME = "timing_bot"
CLAIM = "Tell batches holding a catch trial from the others by the time /validate/next/ or the batch page takes."


def fit_threshold(rows: list[tuple[float, float, bool]]) -> tuple[int, float, bool]:
    """(which timing, threshold, slower means catch) with the best balanced accuracy on `rows`."""
    best = (0, 0.0, True, -1.0)
    actual = [has_catch for _, _, has_catch in rows]
    for which in (0, 1):
        values = sorted({row[which] for row in rows})
        for threshold in values:
            for slower in (True, False):
                predicted = [(row[which] > threshold) == slower for row in rows]
                score = _common.balanced_accuracy(predicted, actual)
                if score > best[3]:
                    best = (which, threshold, slower, score)
    return best[0], best[1], best[2]


def run(base_url: str, *, seed: int = 0, participants: int = 20) -> dict:
    slug = _common.build_validation_study(
        NAME, seed=seed, premises=90, catch_premises=16, share=0.13, tasks_per_batch=10
    )
    rng = random.Random(seed)
    rows: list[tuple[float, float, bool]] = []
    for number in range(participants):
        session = _common.take_part(
            base_url,
            slug,
            f"TIMING{slug[-10:]}x{number}",
            lambda batch, history: {item.name: rng.choice(_common.LABELS) for item in batch.items},
        )
        for batch in session.batches:
            rows.append((batch.next_ms, batch.page_ms, any(t.is_catch for t in batch.truth.values())))
    rng.shuffle(rows)
    half = len(rows) // 2
    train, test = rows[:half], rows[half:]
    which, threshold, slower = fit_threshold(train)
    predicted = [(row[which] > threshold) == slower for row in test]
    actual = [row[2] for row in test]
    value = _common.balanced_accuracy(predicted, actual)
    interval = _common.bootstrap_interval(predicted, actual, seed=seed)
    with_catch = sorted(row[0] for row in rows if row[2])
    without = sorted(row[0] for row in rows if not row[2])
    median = lambda values: values[len(values) // 2] if values else float("nan")  # noqa: E731
    return {
        "attack": NAME,
        "tries": len(test),
        "succeeded": sum(p == a for p, a in zip(predicted, actual, strict=True)),
        "measure": "held-out balanced accuracy (catch trial or not)",
        "value": round(value, 3),
        "interval": interval,
        "at_chance_or_refused": _common.covers(interval, 0.5),
        "detail": (
            f"{len(rows)} batches, {len(with_catch)} with a catch trial; /validate/next/ median "
            f"{median(with_catch):.1f} ms with vs {median(without):.1f} ms without; threshold on "
            f"{'next' if which == 0 else 'page'} {'>' if slower else '<='} {threshold:.1f} ms"
        ),
    }
