"""The order bot: labels a validation batch from the premises and positions alone.

It never reads a hypothesis. The writing task saves one premise's three pairs entailment, neutral,
contradiction; if a batch serves them in that order, the items of one premise give their labels away
(the first is entailment, the next neutral, the last contradiction; a short group that opens the batch
is the tail of a trio), and a lone premise inside the batch is a catch trial. The bot answers that guess and counts the completion codes it earns.

Setup (the judge, Django against the server's DATABASE_URL): a validation study of its own, 40
premises of three pairs plus 10 catch premises, a catch share of 0.2, six batches per code, codes
held at chance (`_common.build_validation_study`). Then 12 participants arrive by the study link.

Scored: balanced accuracy of the guessed label against the author's label over the ordinary items
(three classes, chance 1/3, bootstrap interval), catch-trial precision against the catch base rate,
codes earned. At chance: the interval covers 1/3 and no code was earned.
"""

from . import _common

NAME = "order_bot"
CLAIM = "Guess each pair's author label from premise runs and positions only, spot catch trials, earn codes."

ORDER = ("entailment", "neutral", "contradiction")


def guess(batch: _common.Batch) -> tuple[dict[str, str], set[str]]:
    """({field name: guessed label}, names guessed to be catch trials), from premises and positions."""
    items = batch.items
    groups: dict[str, list[_common.Item]] = {}
    for item in items:
        groups.setdefault(item.premise, []).append(item)
    labels: dict[str, str] = {}
    catch: set[str] = set()
    last = len(items) - 1
    for members in groups.values():
        if len(members) == 1 and 0 < members[0].position < last:
            catch.add(members[0].name)  # a lone premise inside the batch: a catch trial
            labels[members[0].name] = ORDER[0]
            continue
        # The group that opens the batch, if short, is a trio's tail (its head went to an earlier
        # batch); any other is a trio's head.
        offset = len(ORDER) - len(members) if members[0].position == 0 and len(members) < len(ORDER) else 0
        for index, item in enumerate(members):
            labels[item.name] = ORDER[min(offset + index, len(ORDER) - 1)]
    return labels, catch


def _answering(guesses: dict[str, tuple[str, bool]]):
    """The bot's answer to a batch: its guesses, noted in `guesses` for the score."""

    def answer(batch: _common.Batch, history: list) -> dict[str, str]:
        labels, catch = guess(batch)
        for name, label in labels.items():
            guesses[name] = (label, name in catch)
        return labels

    return answer


def run(base_url: str, *, seed: int = 0, participants: int = 12) -> dict:
    slug = _common.build_validation_study(NAME, seed=seed, premises=40, catch_premises=10, share=0.2, tasks_per_batch=6)
    guessed, actual, flagged_catch, codes = [], [], [], 0
    catch_total = items_total = 0
    for number in range(participants):
        guesses: dict[str, tuple[str, bool]] = {}
        session = _common.take_part(base_url, slug, f"ORDER{slug[-10:]}x{number}", _answering(guesses))
        codes += session.code is not None
        for batch in session.batches:
            for name, truth in batch.truth.items():
                label, said_catch = guesses.get(name, (ORDER[0], False))
                items_total += 1
                catch_total += truth.is_catch
                if said_catch:
                    flagged_catch.append(truth.is_catch)
                if not truth.is_catch:
                    guessed.append(label)
                    actual.append(truth.author_label)
    value = _common.balanced_accuracy(guessed, actual)
    interval = _common.bootstrap_interval(guessed, actual, seed=seed)
    precision = sum(flagged_catch) / len(flagged_catch) if flagged_catch else 0.0
    base_rate = catch_total / items_total if items_total else 0.0
    return {
        "attack": NAME,
        "tries": participants,
        "succeeded": codes,
        "measure": "balanced accuracy vs author label",
        "value": round(value, 3),
        "interval": interval,
        "at_chance_or_refused": _common.covers(interval, 1 / 3) and codes == 0,
        "detail": (
            f"{len(actual)} ordinary items; catch trials flagged {len(flagged_catch)}, precision "
            f"{precision:.2f} (base rate {base_rate:.2f}); codes earned {codes} of {participants}"
        ),
    }
