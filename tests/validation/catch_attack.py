"""A patient cheater's view of catch trials: everything a participant's browser can read, pooled.

`simulate` runs participants through a validation study by the pages alone (home page, batch page,
submit) and records, per item served, only what the participant saw: the form field name, the
page's data attributes and hidden inputs, the item's text, and the home page's "pairs validated"
count before and after the batch. The truth (which items were catch trials) comes from the
database, for scoring the attacks only.

The attacks:
- counter: a batch's catch trials = 5 minus the rise of "pairs validated";
- pk gap: the item whose identifier stands farthest from its batch neighbours' median is a catch trial;
- served: an item (by its text) seen by more than four participants is a catch trial;
- stump: the best one-feature threshold rule over all of the above, fitted on half the items and
  scored (balanced accuracy) on the other half.
"""

import random
import re
from dataclasses import dataclass, field
from decimal import Decimal
from statistics import median

from django.urls import reverse

from corpus.models import Label, Pair
from crowd.arrival import SESSION_KEY
from crowd.models import Study, StudySession, TaskKind
from quality.services import set_reference_label
from tests.present import present
from tests.validation.validation_factories import make_dataset, make_pair
from validation.models import ValidationClaim

FIELD = re.compile(r'<input type="radio" class="label-input" name="([^"]+)"')
DATA_ATTRIBUTE = re.compile(r'data-(?:pair|item|claim|id)="([^"]*)"')
HIDDEN = re.compile(r'<input type="hidden" name="(?!csrfmiddlewaretoken)[^"]*" value="([^"]*)"')
HYPOTHESIS = re.compile(r'<p class="hypothesis">([^<]*)</p>')
COUNTER = re.compile(r'data-count="validation_labels">(\d+)<')


@dataclass
class Item:
    batch: int
    name: str
    text: str
    identifier: int
    is_catch: bool
    position: int
    visible_values: list = field(default_factory=list)


@dataclass
class Observation:
    items: list
    counter_rises: list  # per batch: (rise of "pairs validated", catch trials in it, items shown)
    pair_pks: set


def identifier_of(name):
    """The number an attacker reads from a field name: its digits, else the whole suffix as hex."""
    suffix = name.rsplit("-", 1)[-1]
    if suffix.isdigit():
        return int(suffix)
    try:
        return int(suffix, 16)
    except ValueError:
        return sum(map(ord, suffix))


def build_study(ordinary=36, catch=8, share=0.3, slug="catch-attack"):
    dataset = make_dataset(slug)
    for number in range(ordinary):
        make_pair(dataset, label=[Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION][number % 3])
    for _ in range(catch):
        # A researcher-labelled pair from the same data (fully labelled, like the demo's).
        pair = make_pair(dataset, label=Label.ENTAILMENT, needs_validation=False)
        set_reference_label(pair, Label.ENTAILMENT, is_catch_trial=True)
    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=10,
        completion_code="CODE",
        catch_trial_share=share,
        bonus_per_catch_match=Decimal("0.10"),
    )


def _counter(client):
    return int(present(COUNTER.search(client.get(reverse("home")).content.decode())).group(1))


def simulate(client_class, make_worker, study, participants=16, batches_each=2, seed=7):
    rng = random.Random(seed)
    items, rises = [], []
    batch_number = 0
    for number in range(participants):
        worker = make_worker(username=f"attacker-{study.slug}-{number}")
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{number}")
        client = client_class()
        client.force_login(worker.user)
        store = client.session
        store[SESSION_KEY] = session.pk
        store.save()
        for _ in range(batches_each):
            before = _counter(client)
            response = client.get(reverse("validation:next"))
            if response.status_code != 302 or "/batch/" not in response.url:
                break
            html = client.get(response.url).content.decode()
            batch_id = response.url.rstrip("/").rsplit("/", 1)[-1]
            truth = {
                claim.pair.hypothesis: claim.is_catch_trial
                for claim in ValidationClaim.objects.filter(batch=batch_id).select_related("pair")
            }
            names = list(dict.fromkeys(FIELD.findall(html)))
            texts = HYPOTHESIS.findall(html)
            visible = DATA_ATTRIBUTE.findall(html) + HIDDEN.findall(html)
            for position, (name, text) in enumerate(zip(names, texts, strict=True)):
                items.append(
                    Item(batch_number, name, text, identifier_of(name), truth[text], position, visible + names)
                )
            answers = {name: rng.choice(["entailment", "neutral", "contradiction"]) for name in names}
            assert client.post(response.url, answers).status_code == 302
            rises.append((_counter(client) - before, sum(truth.values()), len(names)))
            batch_number += 1
    return Observation(items, rises, set(Pair.objects.values_list("pk", flat=True)))


# --- the attacks -------------------------------------------------------------------------------


def precision_recall(predicted, actual):
    hits = sum(p and a for p, a in zip(predicted, actual, strict=True))
    flagged, positives = sum(predicted), sum(actual)
    return (hits / flagged if flagged else 0.0), (hits / positives if positives else 0.0)


def counter_exactness(observation):
    """Share of batches where the items shown minus the counter's rise is exactly the number of catch
    trials, and the same share for a blind guess of 'none' (what the counter adds is the difference)."""
    rises = observation.counter_rises
    exact = sum(shown - rise == catch for rise, catch, shown in rises) / len(rises)
    blind = sum(catch == 0 for _, catch, _ in rises) / len(rises)
    return exact, blind


def gap_feature(items):
    by_batch: dict[int, list[Item]] = {}
    for item in items:
        by_batch.setdefault(item.batch, []).append(item)
    gaps = {}
    for members in by_batch.values():
        for item in members:
            others = [other.identifier for other in members if other is not item]
            gaps[id(item)] = abs(item.identifier - median(others)) if others else 0
    return [gaps[id(item)] for item in items]


def pk_gap_attack(observation, threshold=None):
    """Flag, in each batch, the item farthest from the others' median when its gap is over `threshold`
    (default: the median gap of all items times 3)."""
    items = observation.items
    gaps = gap_feature(items)
    threshold = threshold if threshold is not None else 3 * (median(gaps) or 1)
    predicted = [gap > threshold for gap in gaps]
    return precision_recall(predicted, [item.is_catch for item in items])


def served_counts(items):
    seen: dict[str, int] = {}
    for item in items:
        seen[item.text] = seen.get(item.text, 0) + 1
    return [seen[item.text] for item in items]


def served_attack(observation, more_than=4):
    items = observation.items
    predicted = [count > more_than for count in served_counts(items)]
    return precision_recall(predicted, [item.is_catch for item in items])


def pks_on_page(observation):
    """Visible identifiers (field names, data attributes, hidden values) that carry a pair's primary key."""
    found = set()
    for item in observation.items:
        for value in item.visible_values:
            for number in re.findall(r"\d+", value):
                if int(number) in observation.pair_pks and value.rsplit("-", 1)[-1] == number:
                    found.add(value)
    return found


def _balanced_accuracy(predicted, actual):
    positives = [p for p, a in zip(predicted, actual, strict=True) if a]
    negatives = [p for p, a in zip(predicted, actual, strict=True) if not a]
    if not positives or not negatives:
        return 0.5
    return (sum(positives) / len(positives) + sum(not p for p in negatives) / len(negatives)) / 2


def stump_attack(observation):
    """Best single-feature threshold rule (either direction), fitted on even batches, scored on odd ones.

    Features: the identifier's gap from its batch, the position in the batch, and the batch's
    counter rise: what one participant reads. Returns the held-out balanced accuracy (0.5 is
    chance). The pooled served count is a coalition's, and has its own test (`served_attack`): at
    the simulation's end it tells only that a pair served fewer than four times was an ordinary
    one still open (every catch pair of the pool was used up, 4 servings each), which no one can
    know while labelling; in the stump it made a real but end-of-study signal (0.57 alone) that
    beat the shuffled marks in about one run of three.
    """
    features, actual, train, test = _stump_inputs(observation)
    return _best_stump(features, actual, train, test)


def stump_chance_accuracies(observation, permutations=2000, seed=0):
    """The stump attack's held-out accuracies with the catch marks shuffled among the items of each
    batch: what a rule fitted on these features reaches by luck alone, at this sample size. Were the
    features uninformative, the real accuracy is one more draw from this distribution, so it beats
    all of `permutations` draws with probability 1 / (permutations + 1).

    Within each batch, because the server fixes how many catch trials a batch carries (and the
    split into fitting and scoring is by batch): under marks shuffled across all items, batches
    got none or two, and the real accuracy, on features known to be noise (keyed-hash field
    names), beat all 500 shuffles in 3 of 71 simulated studies (0.84 and 0.90 among them). Shuffled
    within batches, its rank among 200 shuffles ran from 0.01 to 0.99 over 40 studies, as a
    calibrated null's does. The batch's counter rise, the same for all its items, then tells nothing
    in either; the counter has its own test."""
    features, actual, train, test = _stump_inputs(observation)
    draw = random.Random(seed)
    batches: dict[int, list[int]] = {}
    for index, item in enumerate(observation.items):
        batches.setdefault(item.batch, []).append(index)
    accuracies = []
    for _ in range(permutations):
        shuffled = list(actual)
        for members in batches.values():
            marks = [actual[index] for index in members]
            draw.shuffle(marks)
            for index, mark in zip(members, marks, strict=True):
                shuffled[index] = mark
        accuracies.append(_best_stump(features, shuffled, train, test)[0])
    return accuracies


def _stump_inputs(observation):
    items = observation.items
    rise_of = dict(enumerate(rise for rise, _, _ in observation.counter_rises))
    features = {
        "gap": gap_feature(items),
        "position": [item.position for item in items],
        "rise": [rise_of.get(item.batch, 0) for item in items],
    }
    actual = [item.is_catch for item in items]
    train = [index for index, item in enumerate(items) if item.batch % 2 == 0]
    test = [index for index, item in enumerate(items) if item.batch % 2 == 1]
    return features, actual, train, test


def _best_stump(features, actual, train, test):
    """The rule (feature, threshold, direction) with the best balanced accuracy on `train`, first
    found in the order features, thresholds (every item's values, ascending), above before below;
    its balanced accuracy on `test`. Each feature's training items are ranked once and the
    thresholds walked up them, counting the marks below each: the shuffles fit thousands of these."""
    best: tuple[float, tuple[str, float, bool] | None] = (0.0, None)
    positives = sum(actual[i] for i in train)
    negatives = len(train) - positives
    for name, values in features.items():
        ranked = sorted((values[i], actual[i]) for i in train)
        below_positives = below_negatives = walked = 0
        for threshold in sorted(set(values)):
            while walked < len(ranked) and ranked[walked][0] < threshold:
                below_positives += ranked[walked][1]
                below_negatives += not ranked[walked][1]
                walked += 1
            above_positives, above_negatives = positives - below_positives, negatives - below_negatives
            for above, positives_hit, negatives_hit in (
                (True, above_positives, below_negatives),
                (False, below_positives, above_negatives),
            ):
                score = _balanced_of_counts(positives_hit, negatives_hit, positives, negatives)
                if score > best[0]:
                    best = (score, (name, threshold, above))
    name, threshold, above = present(best[1])
    predicted = [(features[name][i] >= threshold) == above for i in test]
    return _balanced_accuracy(predicted, [actual[i] for i in test]), best[1]


def _balanced_of_counts(positives_hit, negatives_hit, positives, negatives):
    """`_balanced_accuracy` from its counts: catch trials flagged, ordinary items passed."""
    if not positives or not negatives:
        return 0.5
    return (positives_hit / positives + negatives_hit / negatives) / 2
