"""Colluders pooling what they were shown: can forty ids together tell catch trials?

One participant sees a batch; forty who pool their pages see how often each premise and each pair
comes round, with how many hypotheses a premise appears, when it first appeared, where in a batch it
sat, and whether the id had met the premise before. A catch trial used to be a pair whose premise
never showed a second hypothesis (its other pairs were finished and never served): pooled, that
alone told it.

Setup (the judge, Django against the server's DATABASE_URL): a validation study of its own, as a
study meets its data in practice: 120 premises of three pairs written E, N, C that need validation,
and 60 finished premises (three pairs with five labels each, imported, no claims) of which one pair
each is marked a catch trial by a researcher (`set_reference_label`); the siblings carry no
reference label. Hypotheses are drawn from one vocabulary whatever their label (`_common`), so the
text tells nothing. Catch share 0.2, five batches per code. Then 40 ids arrive by the study link
and take their batches in turns (one batch each, round after round, as colluders working at once),
answering at random.

The attacker: per served item, features from the pooled pages only (premise and hypothesis as text,
never a label or an identifier):
- after the fact (everything the forty saw): distinct hypotheses the premise appeared with, times
  the premise and the pair were served, rounds and batches (the pool's clock: one batch of one id
  a tick) between the premise's first and last serving, position in the batch, premise met by this
  id before;
- in real time (only what the pool had seen before this batch): the same counts so far, rounds and
  batches since the premise first appeared, position, met before.
A random forest (class-weighted) is cross-validated in five folds split by premise (stratified), so
it scores premises it did not learn from: an upper bound for colluders who learnt which items were
catch trials from some other source (a leaked bonus list). Balanced accuracy (chance 0.5) with a
bootstrap interval over the items; at chance when both intervals cover 0.5. The detail also gives
the simple rule of the outside check: "a premise seen with one hypothesis only is a catch trial".
"""

import random
from collections import defaultdict
from dataclasses import dataclass

from . import _common

NAME = "catch_colluders"
CLAIM = "Forty ids pool what they were shown and tell catch trials from ordinary pairs."

PARTICIPANTS = 40
ROUNDS = 5


def build_study(tag: str, *, seed: int, premises: int = 120, catch_premises: int = 60, share: float = 0.2) -> str:
    """The study described in the module's docstring; its slug."""
    _common.django_ready()
    import time
    from decimal import Decimal

    from django.db import transaction

    from corpus.models import Dataset, Genre, Pair, Premise, PromptFamily, Split
    from corpus.services import create_pairs
    from crowd.models import Study, TaskKind
    from quality.services import set_reference_label

    rng = random.Random(seed)
    slug = f"attack-{tag}-{seed}-{time.time_ns() % 10**10}"
    with transaction.atomic():
        family, _ = PromptFamily.objects.get_or_create(slug="attack-family", defaults={"name": "Attack family"})
        genre, _ = Genre.objects.get_or_create(
            slug="attack-fiction", defaults={"name": "Attack fiction", "family": family, "is_training": True}
        )
        dataset = Dataset.objects.create(slug=slug, name=slug)
        for number in range(premises + catch_premises):
            finished = number >= premises
            premise = Premise.objects.create(
                dataset=dataset,
                genre=genre,
                split=Split.DEV,
                prompt_id=f"{slug}-p{number}",
                text=_common._sentence(rng, 10, 18),
            )
            pairs = [
                Pair(
                    premise=premise,
                    pair_id=f"{slug}-{number}{label[0]}",
                    hypothesis=_common._sentence(rng, 5, 9),
                    author_label=label,
                )
                for label in _common.LABELS
            ]
            # A finished pair carries its five labels (imported with them); an open one its author's.
            votes = [[label] * (5 if finished else 1) for label in _common.LABELS]
            made = create_pairs(dataset, Split.DEV, pairs, votes, needs_validation=not finished)
            if finished:
                trap = rng.choice(made)
                set_reference_label(trap, trap.author_label, is_catch_trial=True)
        Study.objects.create(
            slug=slug,
            name=slug,
            dataset=dataset,
            task_kind=TaskKind.VALIDATION,
            tasks_per_batch=ROUNDS,
            completion_code=f"CODE-{tag.upper()}",
            catch_trial_share=share,
            bonus_per_catch_match=Decimal("0.10"),
            # No market here: a paid study opens only as an unverified link (crowd.arrival.launch_refusal).
            open_link_unverified=True,
        )
    return slug


@dataclass
class Serving:
    """One item as an id saw it, with the pool's clock (the round and the batch's turn in it)."""

    tick: int
    round: int
    participant: int
    premise: str
    hypothesis: str
    position: int
    is_catch: bool


def observe(base_url: str, slug: str, *, seed: int, participants: int = PARTICIPANTS) -> list[Serving]:
    """The ids take their batches in turns and answer at random; every item served, in pool order."""
    rng = random.Random(seed)
    people = [_common.Participant(base_url) for _ in range(participants)]
    for number, person in enumerate(people):
        person.arrive(slug, f"COLLUDE{slug[-10:]}x{number}")
    servings: list[Serving] = []
    tick = 0
    for round_number in range(ROUNDS + 1):
        for number, person in enumerate(people):
            batch = person.next_batch()
            if isinstance(batch, str):
                continue
            person.submit(batch, {item.name: rng.choice(_common.LABELS) for item in batch.items})
            truth = _common.batch_truth(batch.batch_id)
            for item in batch.items:
                servings.append(
                    Serving(
                        tick,
                        round_number,
                        number,
                        item.premise,
                        item.hypothesis,
                        item.position,
                        truth[item.name].is_catch,
                    )
                )
            tick += 1
    return servings


def features(servings: list[Serving]) -> tuple[list[list[float]], list[list[float]]]:
    """(after the fact, in real time): one row per serving, from the pooled pages only."""
    hypotheses: dict[str, set[str]] = defaultdict(set)
    premise_count: dict[str, int] = defaultdict(int)
    pair_count: dict[tuple[str, str], int] = defaultdict(int)
    first_round: dict[str, int] = {}
    last_round: dict[str, int] = {}
    first_tick: dict[str, int] = {}
    last_tick: dict[str, int] = {}
    for serving in servings:
        hypotheses[serving.premise].add(serving.hypothesis)
        premise_count[serving.premise] += 1
        pair_count[(serving.premise, serving.hypothesis)] += 1
        first_round.setdefault(serving.premise, serving.round)
        last_round[serving.premise] = serving.round
        first_tick.setdefault(serving.premise, serving.tick)
        last_tick[serving.premise] = serving.tick
    after = []
    for serving in servings:
        after.append(
            [
                float(len(hypotheses[serving.premise])),
                float(premise_count[serving.premise]),
                float(pair_count[(serving.premise, serving.hypothesis)]),
                float(last_round[serving.premise] - first_round[serving.premise]),
                float(last_tick[serving.premise] - first_tick[serving.premise]),
                float(serving.position),
            ]
        )
    # In real time: the pool's record up to (not including) this batch, plus this batch itself.
    seen_hypotheses: dict[str, set[str]] = defaultdict(set)
    seen_premise: dict[str, int] = defaultdict(int)
    seen_pair: dict[tuple[str, str], int] = defaultdict(int)
    seen_first: dict[str, int] = {}
    seen_first_tick: dict[str, int] = {}
    met: set[tuple[int, str]] = set()
    live = []
    by_tick: dict[int, list[Serving]] = defaultdict(list)
    for serving in servings:
        by_tick[serving.tick].append(serving)
    for tick in sorted(by_tick):
        batch = by_tick[tick]
        for serving in batch:
            live.append(
                [
                    float(len(seen_hypotheses[serving.premise])),
                    float(seen_premise[serving.premise]),
                    float(seen_pair[(serving.premise, serving.hypothesis)]),
                    float(serving.round - seen_first.get(serving.premise, serving.round)),
                    float(serving.tick - seen_first_tick.get(serving.premise, serving.tick)),
                    float(serving.position),
                    float((serving.participant, serving.premise) in met),
                ]
            )
        for serving in batch:
            seen_hypotheses[serving.premise].add(serving.hypothesis)
            seen_premise[serving.premise] += 1
            seen_pair[(serving.premise, serving.hypothesis)] += 1
            seen_first.setdefault(serving.premise, serving.round)
            seen_first_tick.setdefault(serving.premise, serving.tick)
            met.add((serving.participant, serving.premise))
    met_before = [row[-1] for row in live]
    after = [[*row, before] for row, before in zip(after, met_before, strict=True)]
    return after, live


def cross_validated(rows: list[list[float]], actual: list[bool], groups: list[str], *, seed: int) -> list[bool]:
    """Held-out predictions of a class-weighted random forest, five folds split by premise."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import StratifiedGroupKFold

    predicted = [False] * len(rows)
    folds = StratifiedGroupKFold(n_splits=5, shuffle=True, random_state=seed)
    for train, test in folds.split(rows, actual, groups):
        model = RandomForestClassifier(
            n_estimators=200, min_samples_leaf=3, class_weight="balanced", random_state=seed
        ).fit([rows[i] for i in train], [actual[i] for i in train])
        for i, value in zip(test, model.predict([rows[i] for i in test]), strict=True):
            predicted[i] = bool(value)
    return predicted


def run(base_url: str, *, seed: int = 0) -> dict:
    slug = build_study(NAME, seed=seed)
    servings = observe(base_url, slug, seed=seed)
    actual = [serving.is_catch for serving in servings]
    groups = [serving.premise for serving in servings]
    if sum(actual) == 0:
        return {
            "attack": NAME,
            "tries": len(servings),
            "succeeded": 0,
            "measure": "cv balanced accuracy vs catch-trial-ness (after the fact)",
            "value": None,
            "interval": None,
            "at_chance_or_refused": False,
            "detail": f"{len(servings)} items served, no catch trial among them: the pool served none",
        }
    after, live = features(servings)
    after_pred = cross_validated(after, actual, groups, seed=seed)
    live_pred = cross_validated(live, actual, groups, seed=seed)
    after_value = _common.balanced_accuracy(after_pred, actual)
    after_interval = _common.bootstrap_interval(after_pred, actual, seed=seed)
    live_value = _common.balanced_accuracy(live_pred, actual)
    live_interval = _common.bootstrap_interval(live_pred, actual, seed=seed)
    lone = [row[0] == 1 for row in after]
    lone_value = _common.balanced_accuracy(lone, actual)
    return {
        "attack": NAME,
        "tries": len(servings),
        "succeeded": sum(p and a for p, a in zip(after_pred, actual, strict=True)),
        "measure": "cv balanced accuracy vs catch-trial-ness (after the fact)",
        "value": round(after_value, 3),
        "interval": after_interval,
        "at_chance_or_refused": _common.covers(after_interval, 0.5) and _common.covers(live_interval, 0.5),
        "detail": (
            f"{len(servings)} items ({sum(actual)} catch trials) from {PARTICIPANTS} ids; in real time "
            f"{live_value:.3f} {live_interval}; rule 'premise seen with one hypothesis' {lone_value:.3f} "
            f"(chance 0.5)"
        ),
    }
