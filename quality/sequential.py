"""Sequential tests on a worker's judgments (Wald's SPRT), for sessions too short for the binomial
flags of `quality.flags`: the chance test ("at chance" against "ordinary"), one evidence over every
task kind that collects judgments (strata), the catch-only flag judged beside that evidence, and
the quality test beside it ("poor" against "acceptable" accuracy).

Everything here is plain Python and dataclasses; no pandas, no Django.
"""

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .flags import TOO_FAST_MIN_ITEMS, TOO_FAST_SECONDS, WorkerFlag, WorkerId, chance_agreement

# --- a sequential test for short sessions ------------------------------------------------------
#
# The binomial flag (`flags.random_guesser_flags`) waits for a minimum number of items, so a guesser
# doing one short session escapes it. Wald's SPRT weighs every label as it comes, across sessions
# and studies: H1 "at chance" against H0 "as an ordinary validator". With chance ≈ 0.35 and ordinary
# 0.75, a guesser gains about 0.35 of log ratio a label, so 20 labels reach the bound (4.6).

ORDINARY_AGREEMENT = 0.75  # below MultiNLI/SNLI's individual-vs-author agreement (85-89%): conservative
SEQUENTIAL_ALPHA = 0.01  # an ordinary validator called a guesser
SEQUENTIAL_BETA = 0.01  # a guesser let through
AT_CHANCE, ORDINARY, UNDECIDED = "at_chance", "ordinary", "undecided"
HOLD_POSTERIOR = 0.9  # hold a completion code when "at chance" is at least this probable


@dataclass(frozen=True)
class SequentialResult:
    items: int
    agreements: int
    chance: float
    log_ratio: float
    decision: str

    @property
    def posterior_at_chance(self) -> float:
        """P(labels at chance | labels so far) with even prior odds: the Bayesian reading of the same ratio."""
        return 1 / (1 + math.exp(-self.log_ratio))

    @property
    def holds_code(self) -> bool:
        """Whether a study holding codes at chance holds this one: posterior at least HOLD_POSTERIOR.
        Weaker evidence than the flag's (a hold asks a researcher to look; it excludes nobody): about
        91% of 20-item uniform guessers held, an ordinary validator almost never, a careless one (70%)
        about 2% of the time (simulated, tests/quality/test_short_session_guessers.py)."""
        return self.items > 0 and self.posterior_at_chance >= HOLD_POSTERIOR

    @property
    def reason(self) -> str:
        return (
            f"{self.agreements} of {self.items} answers agree with their items' reference (written label, "
            f"researchers' label or other judges) ({self.agreements / self.items:.0%} where chance is "
            f"{self.chance:.0%} and an ordinary judge reaches about {ORDINARY_AGREEMENT:.0%}); "
            f"log-likelihood ratio {self.log_ratio:.1f}, P(at chance) {self.posterior_at_chance:.2f}"
            if self.items
            else "no labels yet"
        )


def sequential_guesser_test(
    agreements: int,
    items: int,
    chance: float,
    ordinary: float = ORDINARY_AGREEMENT,
    alpha: float = SEQUENTIAL_ALPHA,
    beta: float = SEQUENTIAL_BETA,
) -> SequentialResult:
    """Wald's SPRT of "labels at chance" (H1) against "labels at ordinary agreement" (H0)."""
    chance = min(max(chance, 0.05), ordinary - 0.05)  # the two hypotheses must stay apart
    log_ratio = agreements * math.log(chance / ordinary) + (items - agreements) * math.log(
        (1 - chance) / (1 - ordinary)
    )
    return SequentialResult(items, agreements, chance, log_ratio, _wald_decision(log_ratio, alpha, beta))


def _wald_decision(log_ratio: float, alpha: float, beta: float) -> str:
    """Wald's thresholds: at chance above log((1-β)/α), ordinary below log(β/(1-α)), else undecided."""
    if log_ratio >= math.log((1 - beta) / alpha):
        return AT_CHANCE
    if log_ratio <= math.log(beta / (1 - alpha)):
        return ORDINARY
    return UNDECIDED


# --- one evidence over every task kind that collects judgments ---------------------------------
#
# Each answer is weighed against the best reference its item has (`quality.selectors.
# guesser_evidence_by_worker`); each kind of comparison is a stratum with its own chance and
# ordinary agreement, and the strata's log-likelihood ratios add up (independent evidence).

# An ordinary judge's agreement beyond chance, as Cohen's kappa: 0.75 on three balanced labels
# (above) is (0.75 - 1/3) / (1 - 1/3) = 0.625 of the way from chance to full agreement.
ORDINARY_KAPPA = (ORDINARY_AGREEMENT - 1 / 3) / (1 - 1 / 3)
# Against another judge's answer rather than a reference: two ordinary judges (each right 75% of
# the time on three labels) agree 0.75² + 0.25²/2 ≈ 0.59 of the time, a kappa of about 0.4.
OTHERS_KAPPA = 0.4
# Against the answer at least two other judges agree on (and more of them than on any other): that
# answer is right about 95% of the time, and an ordinary judge agrees with it about 0.72 of the time.
AGREEING_OTHERS_KAPPA = 0.55
MAX_ORDINARY = 0.95


def ordinary_agreement(chance: float, kappa: float = ORDINARY_KAPPA) -> float:
    """An ordinary judge's agreement where habit alone reaches `chance`: `kappa` of the way from
    chance to full agreement, and never below its value at three balanced labels (0.75 against a
    reference: the validation task's figure). On a two-way (recast) task chance is about a half, so
    an ordinary judge reaches 0.81; a worker who always says "not-entailed" where most pairs are is
    at chance, however high their agreement."""
    # At most 0.95: where every reference is one answer, chance is 1 and nothing tells skill from habit.
    return min(MAX_ORDINARY, max(1 / 3 + kappa * (1 - 1 / 3), chance + kappa * (1 - chance)))


@dataclass(frozen=True)
class Stratum:
    """One kind of comparison of a worker's answers with references: the worker's own answers and
    the references by answer (for chance), the agreements, and the kappa of an ordinary judge."""

    own: Mapping[str, int]
    reference: Mapping[str, int]
    agreements: int
    kappa: float = ORDINARY_KAPPA

    @property
    def items(self) -> int:
        return sum(self.own.values())


def combined_sequential_test(strata: Iterable[Stratum]) -> SequentialResult:
    """Wald's test over several strata: each stratum's log-likelihood ratio (its own chance and
    ordinary agreement), added up; the decision on the sum, as `sequential_guesser_test` decides."""
    kept = [stratum for stratum in strata if stratum.items]
    results = []
    for stratum in kept:
        chance = chance_agreement(stratum.own, stratum.reference)
        results.append(
            sequential_guesser_test(
                stratum.agreements, stratum.items, chance, ordinary_agreement(chance, stratum.kappa)
            )
        )
    items = sum(result.items for result in results)
    agreements = sum(result.agreements for result in results)
    chance = sum(result.chance * result.items for result in results) / items if items else 1 / 3
    log_ratio = sum(result.log_ratio for result in results)
    decision = _wald_decision(log_ratio, SEQUENTIAL_ALPHA, SEQUENTIAL_BETA)
    return SequentialResult(items, agreements, chance, log_ratio, decision)


# --- catch trials right, ordinary labels at chance ---------------------------------------------

CATCH_ONLY = "catch_only"
CATCH_ONLY_MIN_SEEN = 3
CATCH_ONLY_MIN_ACCURACY = 0.8


def catch_only_flag(
    worker: WorkerId, catch_seen: int, catch_matched: int, evidence: SequentialResult
) -> WorkerFlag | None:
    """A worker who gets catch trials right while their ordinary labels are probably at chance: one
    who found the catch trials some other way (shared answers, a pattern) and guesses the rest.
    Catch accuracy alone would rank them first; judged beside their ordinary labels, they are flagged."""
    if (
        catch_seen < CATCH_ONLY_MIN_SEEN
        or catch_matched / catch_seen < CATCH_ONLY_MIN_ACCURACY
        or not evidence.holds_code
    ):
        return None
    return WorkerFlag(
        worker=worker,
        kind=CATCH_ONLY,
        reason=(
            f"Catch trials right ({catch_matched} of {catch_seen}) while ordinary labels are at chance: "
            f"{evidence.reason}."
        ),
        figures={
            "catch_seen": catch_seen,
            "catch_matched": catch_matched,
            "ordinary_items": evidence.items,
            "ordinary_agreements": evidence.agreements,
            "posterior_at_chance": round(evidence.posterior_at_chance, 4),
        },
    )


# --- a quality test beside the chance test -----------------------------------------------------
#
# A worker at 50-56% agreement gives the chance test no evidence either way, so a rule-based
# labeller was paid about half the time. The quality test weighs the study's own levels, "poor"
# (H1) against "acceptable" (H0), each turned into the agreement expected against a stratum's
# reference, itself right only so often (`level_agreement`, `REFERENCE_ACCURACY`): a noisier
# reference brings the levels closer, so each of its labels weighs less (docs/quality.md, "Two tests").

DEFAULT_ACCEPTABLE_ACCURACY = 0.75
DEFAULT_POOR_ACCURACY = 0.55
# How often each kind of reference is the true label (the weight of its labels follows from it).
REFERENCE_ACCURACY = {
    "catch": 0.95,  # a researcher's label on a pair they chose as a catch trial
    "reference": 0.95,  # a researcher's reference label
    "qualification": 0.95,  # a researcher's label on a qualification-test item (quality.qualification)
    "written": 0.9,  # the label the pair was written for
    "agreeing": 0.9,  # the answer two or more other judges agree on
    "one other": DEFAULT_ACCEPTABLE_ACCURACY,  # one other judge: as good as an acceptable worker, no better
}
# "Too fast" (`too_fast_flags`' median below 4 s an item) as evidence: how much likelier that speed is
# for a poor worker than an acceptable one. A few honest skimmers are that fast, most who do not
# read are: 4 moves even odds to 0.8. Below 2 s an item nobody has read both sentences: 50.
TOO_FAST_LIKELIHOOD_RATIO = 4.0
FAR_TOO_FAST_LIKELIHOOD_RATIO = 50.0
FAR_TOO_FAST_SECONDS = TOO_FAST_SECONDS / 2
POOR, ACCEPTABLE = "poor", "acceptable"
# Three outcomes at a completion: "poor" at least HOLD_POSTERIOR_POOR probable is held as poor; at
# least PAY_POSTERIOR_POOR on the answers alone, held for review, not paid; below it, paid. 0.7 from
# bench/quality_test.py's sweep (docs/quality.md, "Paid only on evidence").
HOLD_POSTERIOR_POOR = 0.9
PAY_POSTERIOR_POOR = 0.7
UNDECIDED_HELD = "undecided"


def expected_agreement(accuracy: float, reference_accuracy: float, labels: int = 3) -> float:
    """How often a worker right with probability `accuracy` agrees with a reference right with
    probability `reference_accuracy`, errors spread evenly over the other `labels - 1` labels:
    both right, or both wrong the same way."""
    return accuracy * reference_accuracy + (1 - accuracy) * (1 - reference_accuracy) / (labels - 1)


def level_agreement(accuracy: float, reference_accuracy: float, chance: float, labels: int = 3) -> float:
    """The agreement with a stratum's references expected of a worker at `accuracy`: its agreement
    beyond chance on balanced labels (`expected_agreement`, as Cohen's kappa) carried over to the
    chance the worker's own habits reach on this stratum. On three balanced labels that is
    `expected_agreement` itself; on a two-way set where most references are one answer, a worker
    who always gives it agrees often, and the levels rise with that chance."""
    balanced = 1 / labels
    kappa = (expected_agreement(accuracy, reference_accuracy, labels) - balanced) / (1 - balanced)
    chance = balanced if math.isnan(chance) else min(max(chance, balanced), MAX_ORDINARY)
    return chance + kappa * (1 - chance)


@dataclass(frozen=True)
class QualityStratum:
    """One kind of reference a worker's answers were compared with: the worker's answers and the
    references by answer (for the chance their habits reach), the agreements, how often that kind
    of reference is right, and how many answers the task offers."""

    own: Mapping[str, int]
    reference: Mapping[str, int]
    agreements: int
    reference_accuracy: float
    labels: int = 3

    @property
    def items(self) -> int:
        return sum(self.own.values())


@dataclass(frozen=True)
class QualityResult:
    """The quality test's state for one worker: counts, the evidence (log-likelihood ratio of poor to
    acceptable, agreement and speed apart), the levels and the decision."""

    items: int
    agreements: int
    poor: float
    acceptable: float
    agreement_log_ratio: float
    speed_log_ratio: float
    decision: str
    median_seconds: float | None = None

    @property
    def log_ratio(self) -> float:
        return self.agreement_log_ratio + self.speed_log_ratio

    @property
    def posterior_poor(self) -> float:
        """P(accuracy at the poor level | answers and speed so far), even prior odds."""
        return 1 / (1 + math.exp(-self.log_ratio))

    @property
    def outcome(self) -> str:
        """The test's answer at a completion: POOR (held as poor), UNDECIDED_HELD (the evidence leans
        to poor: held for review, not paid) or ACCEPTABLE (paid). Speed alone holds nobody: there
        must be answers."""
        if not self.items:
            return ACCEPTABLE
        if self.posterior_poor >= HOLD_POSTERIOR_POOR:
            return POOR
        # Held for review on the answers alone: speed moves a worker to "poor", but an honest fast
        # reader whose answers are merely not yet convincing is not held for their pace.
        by_answers = 1 / (1 + math.exp(-self.agreement_log_ratio))
        return UNDECIDED_HELD if by_answers >= PAY_POSTERIOR_POOR else ACCEPTABLE

    @property
    def holds_code(self) -> bool:
        """Whether a study with the hold holds this worker's code: poor, or not yet shown acceptable
        (`outcome`: "poor" at least PAY_POSTERIOR_POOR probable on the answers alone)."""
        return self.outcome != ACCEPTABLE

    @property
    def reason(self) -> str:
        if not self.items:
            return "no answers yet"
        fast = (
            f"; median {self.median_seconds:.1f} s an item, too fast to read (counted as evidence)"
            if self.speed_log_ratio
            else ""
        )
        return (
            f"{self.agreements} of {self.items} answers agree with their items' reference "
            f"({self.agreements / self.items:.0%}){fast}; P(accuracy about {self.poor:.0%} rather than the "
            f"study's acceptable {self.acceptable:.0%}) {self.posterior_poor:.2f}"
        )


def too_fast_log_ratio(timed_items: int, median_seconds: float | None) -> float:
    """The speed evidence of the quality test: log TOO_FAST_LIKELIHOOD_RATIO when the worker's median
    time per item is below what reading takes (the workers page's "too fast"), log
    FAR_TOO_FAST_LIKELIHOOD_RATIO below half of that, else 0."""
    if timed_items < TOO_FAST_MIN_ITEMS or median_seconds is None or median_seconds >= TOO_FAST_SECONDS:
        return 0.0
    if median_seconds < FAR_TOO_FAST_SECONDS:
        return math.log(FAR_TOO_FAST_LIKELIHOOD_RATIO)
    return math.log(TOO_FAST_LIKELIHOOD_RATIO)


def stratum_log_ratio(stratum: QualityStratum, poor: float, acceptable: float) -> float:
    """log P(answers | poor) / P(answers | acceptable) of one stratum."""
    if not stratum.items:
        return 0.0
    chance = chance_agreement(stratum.own, stratum.reference)
    low = level_agreement(poor, stratum.reference_accuracy, chance, stratum.labels)
    high = level_agreement(acceptable, stratum.reference_accuracy, chance, stratum.labels)
    disagreements = stratum.items - stratum.agreements
    return stratum.agreements * math.log(low / high) + disagreements * math.log((1 - low) / (1 - high))


def sequential_quality_test(
    strata: Iterable[QualityStratum],
    *,
    poor: float = DEFAULT_POOR_ACCURACY,
    acceptable: float = DEFAULT_ACCEPTABLE_ACCURACY,
    timed_items: int = 0,
    median_seconds: float | None = None,
    alpha: float = SEQUENTIAL_ALPHA,
    beta: float = SEQUENTIAL_BETA,
) -> QualityResult:
    """Wald's test of "accuracy at the poor level" (H1) against "at the acceptable level" (H0): every
    stratum's log-likelihood ratio (each against its own kind of reference) plus the speed evidence,
    added up; decided by Wald's bounds, held on the posterior (`QualityResult.holds_code`)."""
    check_quality_levels(poor, acceptable)
    kept = [stratum for stratum in strata if stratum.items]
    agreement = sum(stratum_log_ratio(stratum, poor, acceptable) for stratum in kept)
    speed = too_fast_log_ratio(timed_items, median_seconds)
    decision = _wald_decision(agreement + speed, alpha, beta)
    return QualityResult(
        items=sum(stratum.items for stratum in kept),
        agreements=sum(stratum.agreements for stratum in kept),
        poor=poor,
        acceptable=acceptable,
        agreement_log_ratio=agreement,
        speed_log_ratio=speed,
        decision={AT_CHANCE: POOR, ORDINARY: ACCEPTABLE}.get(decision, UNDECIDED),
        median_seconds=median_seconds,
    )


def check_quality_levels(poor: float, acceptable: float, labels: int = 3) -> None:
    """Refuse levels the test cannot weigh: both above chance (1/labels) and below 1, poor below acceptable."""
    chance = 1 / labels
    if not (chance < poor < acceptable < 1):
        raise ValueError(
            f"The poor level ({poor}) must be below the acceptable level ({acceptable}), "
            f"both above chance ({chance:.2f}) and below 1."
        )


def false_hold_rate(
    poor: float, acceptable: float, labels: int, *, reference_accuracy: float = REFERENCE_ACCURACY["written"]
) -> float:
    """The share of honest workers exactly at the acceptable level whose code the quality test holds
    after `labels` answers against written labels (three balanced answers, no speed evidence): the
    exact binomial probability that their agreements fall where the posterior of "poor" reaches
    PAY_POSTERIOR_POOR (held as poor or for review). Workers better than the acceptable level are
    held less often."""
    from scipy.stats import binom

    check_quality_levels(poor, acceptable)
    low = expected_agreement(poor, reference_accuracy)
    high = expected_agreement(acceptable, reference_accuracy)
    needed = math.log(PAY_POSTERIOR_POOR / (1 - PAY_POSTERIOR_POOR))
    # The log ratio falls by a fixed step per agreement: held at `most` agreements or fewer.
    per_agreement = math.log(low / high) - math.log((1 - low) / (1 - high))
    most = math.floor((needed - labels * math.log((1 - low) / (1 - high))) / per_agreement)
    return float(binom.cdf(most, labels, high)) if most >= 0 else 0.0
