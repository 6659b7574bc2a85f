"""The completion hold of guessers and poor workers: the two sequential tests' answer to a completing session.

A study with `hold_code_at_chance` asks before it hands out a completion code (the task apps pass
`hold_code_of_guesser` to `crowd.services.record_task_done`); the code is held when the worker's
answers, over every session and study so far, are probably at chance (issue 27 item 4: the chance
test, `flags.SequentialResult.holds_code`) or probably at the study's poor accuracy rather than its
acceptable one, or not yet shown acceptable (issue 51: the quality test's three outcomes,
`flags.QualityResult.outcome`, with the study's `poor_accuracy` and `acceptable_accuracy`; too fast
to read counts as evidence; an undecided session leaning to poor is held for review, not paid). `hold_reason` is
the one rule; the reason is for researchers.
"""

from collections.abc import Callable, Iterable

from corpus.models import Worker

from . import flags
from .correlated_runs import correlated_group_of, group_reason
from .selectors import quality_evidence, sequential_evidence


def hold_reason(worker, study, *, more: Iterable[flags.QualityStratum] = ()) -> str | None:
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
    return None


def hold_code_of_guesser(study_session, *, more: Iterable[flags.QualityStratum] = ()) -> str | None:
    """The reason to hold this completing session's code, or None (always None unless its study
    holds the codes of guessers and poor workers)."""
    if not study_session.study.hold_code_at_chance:
        return None
    return hold_reason(study_session.worker, study_session.study, more=more)


def hold_code_with(more: Callable[[Worker], Iterable[flags.QualityStratum]]):
    """`hold_code_of_guesser` with strata a task app computes for the session's worker (the app
    above passes its own reader, e.g. per-premise labels): what `record_task_done` is given."""

    def hold(study_session) -> str | None:
        if not study_session.study.hold_code_at_chance:
            return None
        return hold_code_of_guesser(study_session, more=more(study_session.worker))

    return hold
