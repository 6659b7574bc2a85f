"""The completion hold of guessers and poor workers: the two sequential tests' answer to a completing session
(docs/quality.md, "Two tests" and "The first session pays on a validator's evidence, or defers").

A study with `hold_code_at_chance` asks before it hands out a completion code (`hold_code_of_guesser`,
a hold check of crowd.hold_kinds); the code is held when the worker's answers over every session so
far are probably at chance, probably at the study's poor accuracy, or not yet shown acceptable
(`hold_findings` is the one rule). A first session is paid on positive evidence only
(`FIRST_SESSION_LEVELS`), else deferred (`DEFERRED`): about 30 labels cannot tell a worker who reads
a third of the items from an honest one, and deferring costs the honest one a wait, not a false
hold. A later paid session in the study gives the deferred codes (`release_deferred_codes`).
"""

from collections.abc import Callable, Iterable

from corpus.models import Worker
from crowd import hold_kinds
from crowd.hold_kinds import Found, HoldKind
from crowd.holds import lift
from crowd.models import CodeHold, Study, StudySession

from . import sequential
from .correlated_runs import CORRELATED, correlated_group_of, group_reason
from .selectors import quality_evidence, sequential_evidence

# The first session's own test: a worker who reads a third of the items (about 62% right) against an
# honest validator (SNLI's and MultiNLI's: 85-89%); its code is paid only while P(the lower level) is
# below FIRST_SESSION_PAY_BELOW (bench/quality_test.py --first-pay).
FIRST_SESSION_LEVELS = (0.65, 0.85)
FIRST_SESSION_PAY_BELOW = 0.5
DEFERRED_WORDS = "Deferred to a second batch"


GUESSER = "guesser"
DEFERRED = "deferred"

# The task apps' own evidence for the quality test (validation's per-premise labels), registered at
# their start: quality names no app above it.
_more_strata: list[Callable[[Worker], Iterable[sequential.QualityStratum]]] = []


def add_strata(source: Callable[[Worker], Iterable[sequential.QualityStratum]]) -> None:
    """Add a task app's strata to every quality test of a completing session (its ready())."""
    if source not in _more_strata:
        _more_strata.append(source)


def hold_findings(
    worker: Worker, study: Study, *, more: Iterable[sequential.QualityStratum] = (), first_session: bool = False
) -> list[Found]:
    """Why this worker's code is held in this study: at chance (the stronger finding), else probably
    poor, else not yet shown acceptable (one GUESSER finding); one of a correlated group (ids
    that share their wrong answers, found by the latest aggregation run of the study's dataset);
    else, for a first session short of a validator's evidence, DEFERRED. `more`: strata a task app
    adds to the quality test (MPE's per-premise labels)."""
    found: list[Found] = []
    chance = sequential_evidence(worker)
    quality = quality_evidence(worker, poor=study.poor_accuracy, acceptable=study.acceptable_accuracy, more=more)
    if chance.holds_code:
        found.append(Found(GUESSER, f"Labels at chance so far: {chance.reason}."))
    elif quality.outcome == sequential.POOR:
        found.append(Found(GUESSER, f"Labels probably below the study's acceptable accuracy: {quality.reason}."))
    elif quality.outcome == sequential.UNDECIDED_HELD:
        # Better than chance is not enough: a code is paid on evidence of acceptable work.
        text = f"Labels not yet shown to reach the study's acceptable accuracy (held for review): {quality.reason}."
        found.append(Found(GUESSER, text))
    group = correlated_group_of(worker, study.dataset_id)
    if group is not None:
        found.append(Found(CORRELATED, group_reason(group)))
    poor, acceptable = FIRST_SESSION_LEVELS
    # A study whose acceptable level is at or below a partial reader's accuracy wants them paid.
    if not found and first_session and quality.items and study.acceptable_accuracy > poor:
        first = quality_evidence(worker, poor=poor, acceptable=acceptable, more=more)
        if first.posterior_poor >= FIRST_SESSION_PAY_BELOW:
            text = f"{DEFERRED_WORDS} (a first session is paid on evidence of a validator's accuracy): {first.reason}."
            found.append(Found(DEFERRED, text))
    return found


def is_first_session(study_session: StudySession) -> bool:
    """No other session of this worker in this study was completed before."""
    return not (
        StudySession.objects.filter(
            study_id=study_session.study_id, worker_id=study_session.worker_id, completed_at__isnull=False
        )
        .exclude(pk=study_session.pk)
        .exists()
    )


def release_deferred_codes(study_session: StudySession) -> int:
    """Lift the deferred holds of the worker's earlier sessions in this study (those no researcher
    decided): this session's evidence was enough to pay. Their codes are given unless another hold
    keeps them. Returns how many sessions' deferred holds were lifted."""
    released = 0
    for earlier in (
        StudySession.objects.select_for_update()
        .filter(
            study_id=study_session.study_id,
            worker_id=study_session.worker_id,
            completed_at__isnull=False,
            pk__in=CodeHold.objects.filter(kind=DEFERRED, decision="").values("session_id"),
        )
        .exclude(pk=study_session.pk)
    ):
        released += bool(lift(earlier, DEFERRED))
    return released


def hold_code_of_guesser(study_session: StudySession, *, more: Iterable[sequential.QualityStratum] = ()) -> list[Found]:
    """The reasons to hold this completing session's code (none unless its study holds the codes of
    guessers and poor workers), with every task app's registered strata beside `more`. A session
    paid on its evidence gives the worker's deferred codes in the study."""
    if not study_session.study.hold_code_at_chance:
        return []
    strata = [*more, *(stratum for source in _more_strata for stratum in source(study_session.worker))]
    found = hold_findings(
        study_session.worker, study_session.study, more=strata, first_session=is_first_session(study_session)
    )
    if not found:
        release_deferred_codes(study_session)
    return found


def register_quality_hold_kinds() -> None:
    """The quality test's kinds (QualityConfig.ready): one check finds all three; a correlated group
    found after completion holds the sessions then (`correlated_runs.hold_money_of_members`)."""
    hold_kinds.register(HoldKind(GUESSER, "labels at chance or below the study's level", check=hold_code_of_guesser))
    hold_kinds.register(HoldKind(CORRELATED, "labels correlated with other ids"))
    hold_kinds.register(HoldKind(DEFERRED, "first session deferred to a second batch"))
