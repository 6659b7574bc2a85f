"""The model's vote in the stopping rule, off by default: a study may let a model whose calibration
accuracy passes its threshold stop a pair once two human labels (the writer's included) agree with
the model's label. Without it the decided rule (corpus.stopping) needs three human labels to agree.
bench/replay_model_vote.py replays SNLI dev with `vote_stop` and `replay_with_model`.
"""

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corpus.labels import LABELS, LABELS_PER_PAIR, NO_GOLD
from corpus.stopping import decided_stop, majority_gold

if TYPE_CHECKING:
    from .models import ModelUse

HUMANS_WITH_MODEL = 2


@dataclass(frozen=True)
class VoteStanding:
    allowed: bool
    why: str


def vote_standing(use: "ModelUse") -> VoteStanding:
    """Whether the study's vote model has earned its vote now: its latest calibration has at
    least `vote_min_calibration_pairs` gold pairs and an accuracy of at least `vote_min_accuracy`."""
    from .calibration import latest_calibration

    annotator = use.vote_annotator
    if annotator is None:
        return VoteStanding(False, "no model has a vote in this study")
    calibration = latest_calibration(annotator)
    if calibration is None or calibration.accuracy is None:
        return VoteStanding(False, "the model has not been calibrated")
    if calibration.pairs < use.vote_min_calibration_pairs:
        return VoteStanding(
            False, f"calibrated on {calibration.pairs} gold pairs, fewer than {use.vote_min_calibration_pairs}"
        )
    if calibration.accuracy < use.vote_min_accuracy:
        return VoteStanding(
            False, f"calibration accuracy {calibration.accuracy:.3f} is below {use.vote_min_accuracy:.3f}"
        )
    return VoteStanding(True, f"calibration accuracy {calibration.accuracy:.3f} on {calibration.pairs} gold pairs")


# --- plain rule and replay -----------------------------------------------------------------------


def vote_stop(human_labels: Sequence[str], model_label: str | None) -> bool:
    """Stop before the fifth label because two human labels agree with the model's label."""
    if model_label not in LABELS or len(human_labels) >= LABELS_PER_PAIR:
        return False
    return Counter(human_labels)[model_label] >= HUMANS_WITH_MODEL


def replay_with_model(labels: Sequence[str], model_label: str | None) -> tuple[int, str, bool]:
    """(labels used, gold at the stop, whether the model's vote stopped it) of one full human
    sequence under the decided rule with the model's vote beside it."""
    for used in range(1, len(labels) + 1):
        seen = labels[:used]
        counts = Counter(seen)
        e, n, c = (counts[label] for label in LABELS)
        if decided_stop(e, n, c, used):
            return used, majority_gold(seen), False
        if vote_stop(seen, model_label):
            assert model_label is not None
            return used, model_label, True
    return len(labels), majority_gold(labels), False


@dataclass
class VoteReplay:
    name: str
    accuracy: float | None = None  # the model's accuracy against the five-label gold (pairs with one)
    pairs: int = 0
    validation_labels: int = 0
    saved_human_rule: int = 0
    saved_with_vote: int = 0
    vote_stops: int = 0
    gold_changed: int = 0
    gold_given_to_no_gold: int = 0  # of gold_changed: a pair whose five labels give "-" given the model's label

    def row(self) -> str:
        acc = "n/a" if self.accuracy is None else f"{self.accuracy:.3f}"
        share = self.saved_with_vote / self.validation_labels if self.validation_labels else 0.0
        human = self.saved_human_rule / self.validation_labels if self.validation_labels else 0.0
        return (
            f"| {self.name} | {acc} | {self.pairs} | {self.saved_human_rule} ({human:.1%}) | "
            f"{self.saved_with_vote} ({share:.1%}) | {self.vote_stops} | {self.gold_changed - self.gold_given_to_no_gold} | "
            f"{self.gold_given_to_no_gold} |"
        )


HEADER = (
    "| model labels | accuracy vs 5-label gold | pairs | saved, decided rule (human only) | saved, with the vote "
    "| pairs the vote stopped | gold changed to another label | '-' pairs given a label |\n|---|---|---|---|---|---|---|---|"
)


def replay_vote(name: str, sequences: Sequence[Sequence[str]], model_labels: Sequence[str | None]) -> VoteReplay:
    """Replay five-label sequences under the decided rule alone and with the model's vote."""
    result = VoteReplay(name=name)
    right = scored = 0
    for labels, model_label in zip(sequences, model_labels, strict=True):
        if len(labels) != LABELS_PER_PAIR:
            continue
        result.pairs += 1
        result.validation_labels += LABELS_PER_PAIR - 1
        gold = majority_gold(labels)
        if gold != NO_GOLD:
            scored += 1
            right += model_label == gold
        human_used = _decided_used(labels)
        used, stopped_gold, by_vote = replay_with_model(labels, model_label)
        result.saved_human_rule += LABELS_PER_PAIR - human_used
        result.saved_with_vote += LABELS_PER_PAIR - used
        result.vote_stops += by_vote
        result.gold_changed += stopped_gold != gold
        result.gold_given_to_no_gold += stopped_gold != gold and gold == NO_GOLD
    result.accuracy = right / scored if scored else None
    return result


def _decided_used(labels: Sequence[str]) -> int:
    for used in range(1, len(labels) + 1):
        counts = Counter(labels[:used])
        e, n, c = (counts[label] for label in LABELS)
        if decided_stop(e, n, c, used):
            return used
    return len(labels)
