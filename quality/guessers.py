"""The completion hold of guessers and poor workers: the two sequential tests' answer to a completing session.

A study with `hold_code_at_chance` asks before it hands out a completion code (the task apps pass
`hold_code_of_guesser` to `crowd.services.record_task_done`); the code is held when the worker's
answers, over every session and study so far, are probably at chance (issue 27 item 4: the chance
test, `flags.SequentialResult.holds_code`) or probably at the study's poor accuracy rather than its
acceptable one, or not yet shown acceptable (issue 51: the quality test's three outcomes,
`flags.QualityResult.outcome`, with the study's `poor_accuracy` and `acceptable_accuracy`; too fast
to read counts as evidence; an undecided session leaning to poor is held for review, not paid). `hold_reason` is
the one rule; the reason is for researchers.

The first session is paid on positive evidence only: one estimate over the qualification test, the
catch trials and the agreement with each item's reference (`selectors.quality_evidence`, every
stratum with its reference's own accuracy), tested between `FIRST_SESSION_LEVELS` (a reader of a
third of the items against a validator), must favour the validator (P(lower) below
`FIRST_SESSION_PAY_BELOW`), else the code is deferred to a second batch of evidence
(`DEFERRED_PREFIX`), decided there by the study's own levels (a study whose acceptable level is at
or below the lower one, 65%, is paid by its own levels from the first session). About 30 labels and a 20-item
qualification test cannot tell a worker who reads 30% of the items (about 62% right) from an honest
one at 75%: deferring costs such an honest worker a wait, not a false hold (bench/
RESULTS-quality-power.md). When a later session of the worker in the study is paid, their deferred
codes are given (`release_deferred_codes`); one never followed by a session waits for a researcher.
"""

from collections.abc import Callable, Iterable

from corpus.models import Worker
from crowd.models import StudySession

from . import flags
from .correlated_runs import correlated_group_of, group_reason
from .selectors import quality_evidence, sequential_evidence

# The first session's own test: a worker who reads a third of the items (about 62% right) against an
# honest validator (SNLI's and MultiNLI's: 85-89%); its code is paid only while P(the lower level) is
# below FIRST_SESSION_PAY_BELOW (bench/quality_test.py --first-pay).
FIRST_SESSION_LEVELS = (0.65, 0.85)
FIRST_SESSION_PAY_BELOW = 0.5
DEFERRED_PREFIX = "Deferred to a second batch"


def hold_reason(worker, study, *, more: Iterable[flags.QualityStratum] = (), first_session: bool = False) -> str | None:
    """Why this worker's code is held in this study, or None: at chance first (the stronger finding),
    else probably poor, else one of a correlated group (issue 51: ids that share their wrong answers,
    found by the latest aggregation run of the study's dataset). `more`: strata a task app adds to the quality test (MPE's per-premise labels)."""
    chance = sequential_evidence(worker)
    if chance.holds_code:
        return f"Labels at chance so far: {chance.reason}."
    quality = quality_evidence(worker, poor=study.poor_accuracy, acceptable=study.acceptable_accuracy, more=more)
    if quality.outcome == flags.POOR:
        return f"Labels probably below the study's acceptable accuracy: {quality.reason}."
    if quality.outcome == flags.UNDECIDED_HELD:
        # Better than chance is not enough: a code is paid on evidence of acceptable work (issue 51).
        return f"Labels not yet shown to reach the study's acceptable accuracy (held for review): {quality.reason}."
    group = correlated_group_of(worker, study.dataset_id)
    if group is not None:
        return group_reason(group)
    poor, acceptable = FIRST_SESSION_LEVELS
    # A study whose acceptable level is at or below a partial reader's accuracy wants them paid.
    if first_session and quality.items and study.acceptable_accuracy > poor:
        first = quality_evidence(worker, poor=poor, acceptable=acceptable, more=more)
        if first.posterior_poor >= FIRST_SESSION_PAY_BELOW:
            return f"{DEFERRED_PREFIX} (a first session is paid on evidence of a validator's accuracy): {first.reason}."
    return None


def is_first_session(study_session) -> bool:
    """No other session of this worker in this study was completed before."""
    return not (
        StudySession.objects.filter(
            study_id=study_session.study_id, worker_id=study_session.worker_id, completed_at__isnull=False
        )
        .exclude(pk=study_session.pk)
        .exists()
    )


def release_deferred_codes(study_session) -> int:
    """Give the codes of the worker's earlier sessions in this study that were deferred to a second
    batch (and not decided by a researcher): this session's evidence was enough to pay. Returns how
    many were given."""
    released = 0
    for earlier in (
        StudySession.objects.select_for_update()
        .filter(
            study_id=study_session.study_id,
            worker_id=study_session.worker_id,
            completed_at__isnull=False,
            code_held_reason__startswith=DEFERRED_PREFIX,
            code_hold_decision="",
        )
        .exclude(pk=study_session.pk)
    ):
        earlier.code_held_reason = ""
        earlier.completion_code = earlier.expected_completion_code()
        earlier.save(update_fields=["code_held_reason", "completion_code"])
        released += 1
    return released


def hold_code_of_guesser(study_session, *, more: Iterable[flags.QualityStratum] = ()) -> str | None:
    """The reason to hold this completing session's code, or None (always None unless its study
    holds the codes of guessers and poor workers)."""
    if not study_session.study.hold_code_at_chance:
        return None
    reason = hold_reason(
        study_session.worker, study_session.study, more=more, first_session=is_first_session(study_session)
    )
    if reason is None:
        release_deferred_codes(study_session)
    return reason


def hold_code_with(more: Callable[[Worker], Iterable[flags.QualityStratum]]):
    """`hold_code_of_guesser` with strata a task app computes for the session's worker (the app
    above passes its own reader, e.g. per-premise labels): what `record_task_done` is given."""

    def hold(study_session) -> str | None:
        if not study_session.study.hold_code_at_chance:
            return None
        return hold_code_of_guesser(study_session, more=more(study_session.worker))

    return hold
