"""Guessers in short sessions (issue 27 item 4): the sequential test's answer to a completing session.

A study with `hold_code_at_chance` asks before it hands out a completion code (the task apps pass
`hold_code_of_guesser` to `crowd.services.record_task_done`); the code is held when the worker's labels, over every session and study so far,
are probably at chance (`flags.SequentialResult.holds_code`: posterior at least 0.9 under the
sequential test's two hypotheses). The reason is for researchers.
"""

from .selectors import sequential_evidence


def hold_code_of_guesser(study_session):
    """The reason to hold this completing session's code, or None (always None unless its study
    holds the codes of sessions at chance)."""
    if not study_session.study.hold_code_at_chance:
        return None
    evidence = sequential_evidence(study_session.worker)
    if not evidence.holds_code:
        return None
    return f"Labels at chance so far: {evidence.reason}."
