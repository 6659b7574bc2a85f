"""quality/guessers.py at its edges: the strata a task app registers and a study's own levels reach
the quality test, a correlated group holds as its own kind, the first session is deferred exactly
where its boundaries say, a first session is this worker's first completed one in this study, a
paid session lifts only its worker's deferred holds in the study, and the quality app registers
its three kinds.

The evidence is given as strata (`more`, as a task app adds them) to a worker with no labels of
their own, so each test names the agreements it weighs; sessions and holds are real rows."""

from collections.abc import Iterable

import pytest
from django.utils import timezone

from base.long_tasks import JobStatus
from corpus.labels import LABELS
from corpus.models import Worker
from crowd import hold_kinds
from crowd.hold_kinds import Found
from crowd.holds import hold
from crowd.models import CodeHold, CodeHoldDecision, Study, StudySession, TaskKind
from quality import guessers, sequential
from quality.correlated_runs import CORRELATED, group_reason
from quality.guessers import (
    DEFERRED,
    DEFERRED_WORDS,
    FIRST_SESSION_LEVELS,
    GUESSER,
    add_strata,
    hold_code_of_guesser,
    hold_findings,
    is_first_session,
    register_quality_hold_kinds,
    release_deferred_codes,
)
from quality.models import AggregationRun, CorrelatedWorkerGroup
from quality.selectors import quality_evidence
from tests.validation.validation_factories import make_dataset

ITEMS = 60
# Agreements of ITEMS with researchers' labels (reference accuracy 0.95), and what the test makes of them.
POOR_SHARE = 30  # 50%: poor under any study's levels
HELD_AT_65 = 40  # 67%: held for review between 65% and 80%, paid between 55% and 80%
SHORT_OF_A_VALIDATOR = 42  # 70%: paid by the default levels, P(65% rather than 85%) 0.81
VALIDATOR = 50  # 83%: paid by every level, the first session's too


def stratum(agreements: int, items: int = ITEMS) -> sequential.QualityStratum:
    """Answers spread evenly over the three labels against researchers' labels spread the same way."""
    third = items // 3
    spread = dict(zip(LABELS, (third, third, items - 2 * third), strict=True))
    return sequential.QualityStratum(
        own=spread,
        reference=dict(spread),
        agreements=agreements,
        reference_accuracy=sequential.REFERENCE_ACCURACY["qualification"],
    )


# A two-way reference right half the time: each answer is as likely from a poor worker as from an
# acceptable one, so the evidence weighs exactly nothing (P(poor) exactly 0.5) whatever the levels.
WEIGHTLESS = sequential.QualityStratum(
    own={"entailment": 15, "not_entailment": 15},
    reference={"entailment": 15, "not_entailment": 15},
    agreements=15,
    reference_accuracy=0.5,
    labels=2,
)


def study_of(slug: str, *, poor: float = 0.55, acceptable: float = 0.75, hold_codes: bool = True) -> Study:
    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=make_dataset(slug),
        task_kind=TaskKind.VALIDATION,
        completion_code=slug.upper(),
        catch_trial_share=0,
        hold_code_at_chance=hold_codes,
        poor_accuracy=poor,
        acceptable_accuracy=acceptable,
    )


def session_of(study: Study, worker: Worker, number: int = 1, *, completed: bool = True) -> StudySession:
    return StudySession.objects.create(
        study=study,
        worker=worker,
        external_session_id=f"s-{worker.pk}-{number}",
        completed_at=timezone.now() if completed else None,
    )


def deferred(session: StudySession) -> StudySession:
    """The session completed with its code deferred, as a first session short of evidence is."""
    assert hold(session, DEFERRED, f"{DEFERRED_WORDS}: a first session.") is not None
    session.refresh_from_db()
    assert session.completion_code == "" and session.code_is_held
    return session


def kinds(found: list[Found]) -> list[str]:
    return [finding.kind for finding in found]


def kinds_held(session: StudySession) -> list[str]:
    return list(CodeHold.objects.filter(session=session).values_list("kind", flat=True))


@pytest.fixture
def own_strata(monkeypatch):
    """The registered strata sources as the test leaves them: the apps' sources come back untouched."""
    monkeypatch.setattr(guessers, "_more_strata", [])


@pytest.fixture
def own_kinds(monkeypatch):
    """The registered hold kinds as the test leaves them: the apps' kinds come back untouched."""
    monkeypatch.setattr(hold_kinds, "_kinds", {})


# --- the evidence that reaches the quality test ----------------------------------------------------


@pytest.mark.django_db
def test_strata_given_by_a_task_app_reach_the_quality_test(make_worker):
    worker = make_worker(username="poor-elsewhere")
    study = study_of("more-strata")
    (found,) = hold_findings(worker, study, more=[stratum(POOR_SHARE)])
    assert found.kind == GUESSER
    assert found.text.startswith("Labels probably below the study's acceptable accuracy: 30 of 60 answers"), found.text
    assert hold_findings(worker, study) == [], "without them the worker has no evidence against them"


@pytest.mark.django_db
def test_the_studys_own_poor_and_acceptable_levels_decide(make_worker):
    """67% is held for review between a poor 65% and an acceptable 80%, and paid where poor is 55%."""
    worker = make_worker(username="two-thirds")
    more = [stratum(HELD_AT_65)]
    strict = study_of("strict-levels", poor=0.65, acceptable=0.8)
    lenient = study_of("lenient-levels", poor=0.55, acceptable=0.8)
    expected = quality_evidence(worker, poor=0.65, acceptable=0.8, more=more)
    assert expected.outcome == sequential.UNDECIDED_HELD
    assert hold_findings(worker, strict, more=more) == [
        Found(
            GUESSER,
            f"Labels not yet shown to reach the study's acceptable accuracy (held for review): {expected.reason}.",
        )
    ]
    assert "about 65% rather than the study's acceptable 80%" in expected.reason
    assert hold_findings(worker, lenient, more=more) == []


@pytest.mark.django_db
def test_a_paid_first_sessions_evidence_includes_the_task_apps_strata(make_worker):
    """A validator's 83% given as strata pays a first session at once: the first session's own test
    weighs the same strata as the study's, not the worker's bare record."""
    worker = make_worker(username="validator")
    study = study_of("first-more")
    assert hold_findings(worker, study, more=[stratum(VALIDATOR)], first_session=True) == []


@pytest.mark.django_db
def test_registered_strata_and_the_callers_strata_both_reach_the_completion_check(make_worker, own_strata):
    worker, other = make_worker(username="registered"), make_worker(username="someone-else")
    study = study_of("registered-strata")
    asked: list[Worker] = []

    def premise_labels(of: Worker) -> Iterable[sequential.QualityStratum]:
        asked.append(of)
        return [stratum(POOR_SHARE)] if of.pk == worker.pk else []

    add_strata(premise_labels)
    add_strata(premise_labels)
    assert guessers._more_strata == [premise_labels], "a source registered twice is asked once"

    assert kinds(hold_code_of_guesser(session_of(study, worker))) == [GUESSER]
    assert asked == [worker], "the source is asked about the completing session's worker, once"
    assert hold_code_of_guesser(session_of(study, other)) == []
    assert hold_code_of_guesser(session_of(study, other, 2), more=[stratum(POOR_SHARE)])[0].kind == GUESSER


@pytest.mark.django_db
def test_a_study_that_does_not_hold_codes_asks_nothing(make_worker, own_strata):
    worker = make_worker(username="unheld")

    def never(of: Worker) -> Iterable[sequential.QualityStratum]:
        raise AssertionError("a study without the hold asks no source")

    add_strata(never)
    session = session_of(study_of("no-hold", hold_codes=False), worker)
    assert hold_code_of_guesser(session, more=[stratum(POOR_SHARE)]) == []


# --- a correlated group ------------------------------------------------------------------------------


def group_of(study: Study, *members: Worker) -> CorrelatedWorkerGroup:
    """A group found by the latest finished aggregation run of the study's dataset."""
    now = timezone.now()
    run = AggregationRun.objects.create(dataset=study.dataset, status=JobStatus.DONE, started_at=now)
    group = CorrelatedWorkerGroup.objects.create(
        run=run, number=1, shared=40, disagreements=2, expected_disagreements=18.5, co_errors=11
    )
    group.members.add(*members)
    return group


@pytest.mark.django_db
def test_a_member_of_a_correlated_group_is_held_as_such_with_the_groups_reason(make_worker):
    member, outsider = make_worker(username="member"), make_worker(username="outsider")
    study = study_of("correlated-member")
    group = group_of(study, member)
    reason = group_reason(group)
    assert f"correlated group 1 of aggregation run {group.run_id}: 11 same wrong labels" in reason

    assert hold_findings(member, study) == [Found(CORRELATED, reason)]
    assert hold_findings(outsider, study) == []
    # Beside a guesser finding, and in place of a first session's deferral.
    assert hold_findings(member, study, more=[stratum(POOR_SHARE)])[1:] == [Found(CORRELATED, reason)]
    assert hold_findings(member, study, more=[stratum(SHORT_OF_A_VALIDATOR)], first_session=True) == [
        Found(CORRELATED, reason)
    ]


@pytest.mark.django_db
def test_a_group_of_another_datasets_run_holds_nobody_here(make_worker):
    member = make_worker(username="member-elsewhere")
    group_of(study_of("correlated-elsewhere"), member)
    assert hold_findings(member, study_of("correlated-here")) == []


# --- the first session ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_first_session_short_of_a_validators_evidence_is_deferred(make_worker):
    worker = make_worker(username="short")
    study = study_of("first-short")
    more = [stratum(SHORT_OF_A_VALIDATOR)]
    first = quality_evidence(worker, poor=FIRST_SESSION_LEVELS[0], acceptable=FIRST_SESSION_LEVELS[1], more=more)
    assert quality_evidence(worker, more=more).outcome == sequential.ACCEPTABLE
    assert hold_findings(worker, study, more=more, first_session=True) == [
        Found(
            DEFERRED,
            f"{DEFERRED_WORDS} (a first session is paid on evidence of a validator's accuracy): {first.reason}.",
        )
    ]
    assert hold_findings(worker, study, more=more) == [], "a later session is decided by the study's levels"


@pytest.mark.django_db
def test_a_study_whose_acceptable_level_is_the_lower_first_level_pays_by_its_own(make_worker):
    """At or below 65% a study wants a partial reader paid: exactly 65% pays; just above it defers."""
    worker = make_worker(username="at-the-lower-level")
    more = [stratum(SHORT_OF_A_VALIDATOR)]
    assert FIRST_SESSION_LEVELS[0] == 0.65
    at = study_of("acceptable-at-65", poor=0.5, acceptable=0.65)
    above = study_of("acceptable-above-65", poor=0.5, acceptable=0.66)
    assert hold_findings(worker, at, more=more, first_session=True) == []
    assert kinds(hold_findings(worker, above, more=more, first_session=True)) == [DEFERRED]


@pytest.mark.django_db
def test_a_first_session_whose_evidence_weighs_nothing_either_way_is_deferred(make_worker):
    """Paid only while P(the lower level) is below one half: exactly one half is deferred."""
    worker = make_worker(username="weightless")
    study = study_of("first-weightless")
    assert sequential.sequential_quality_test([WEIGHTLESS], poor=0.65, acceptable=0.85).posterior_poor == 0.5
    assert hold_findings(worker, study, more=[WEIGHTLESS]) == []
    assert kinds(hold_findings(worker, study, more=[WEIGHTLESS], first_session=True)) == [DEFERRED]


@pytest.mark.django_db
def test_a_first_session_is_the_workers_first_completed_one_in_the_study(make_worker):
    worker, other = make_worker(username="returning"), make_worker(username="other-worker")
    study, elsewhere = study_of("first-of-study"), study_of("another-study")
    session = session_of(study, worker)
    assert is_first_session(session), "its own completion does not make it a second session"
    session_of(elsewhere, worker)
    session_of(study, other)
    session_of(study, worker, 2, completed=False)
    assert is_first_session(session), "another study's, another worker's or an open session does not count"
    session_of(study, worker, 3)
    assert not is_first_session(session)


# --- deferred codes given by a paid session ------------------------------------------------------------


@pytest.mark.django_db
def test_a_paid_session_lifts_the_workers_deferred_holds_in_the_study_and_counts_them(make_worker):
    worker, other = make_worker(username="deferred-twice"), make_worker(username="deferred-other")
    study, elsewhere = study_of("release-here"), study_of("release-elsewhere")
    earlier = [deferred(session_of(study, worker, number)) for number in (1, 2)]
    untouched = [
        deferred(session_of(elsewhere, worker)),
        deferred(session_of(study, other)),
        deferred(session_of(study, worker, 3, completed=False)),
    ]
    paid = deferred(session_of(study, worker, 4))

    assert release_deferred_codes(paid) == 2
    for session in earlier:
        session.refresh_from_db()
        assert session.completion_code == session.expected_completion_code() and not session.code_holds.exists()
    for session in [*untouched, paid]:
        assert kinds_held(session) == [DEFERRED], session
    assert release_deferred_codes(paid) == 0, "nothing is left to lift"


@pytest.mark.django_db
def test_only_undecided_deferred_holds_are_lifted(make_worker):
    worker = make_worker(username="decided")
    study = study_of("release-decided")
    decided = deferred(session_of(study, worker, 1))
    CodeHold.objects.filter(session=decided).update(decision=CodeHoldDecision.REFUSED, decided_at=timezone.now())
    guesser = session_of(study, worker, 2)
    hold(guesser, GUESSER, "Labels at chance so far.")
    assert release_deferred_codes(session_of(study, worker, 3)) == 0
    assert kinds_held(decided) == [DEFERRED] and kinds_held(guesser) == [GUESSER]
    decided.refresh_from_db()
    assert decided.completion_code == ""


@pytest.mark.django_db
def test_a_paid_completion_gives_the_deferred_code_and_a_held_one_does_not(make_worker, own_strata):
    worker = make_worker(username="second-batch")
    study = study_of("release-at-completion")
    first = deferred(session_of(study, worker, 1))
    assert kinds(hold_code_of_guesser(session_of(study, worker, 2), more=[stratum(POOR_SHARE)])) == [GUESSER]
    assert kinds_held(first) == [DEFERRED]
    assert hold_code_of_guesser(session_of(study, worker, 3), more=[stratum(VALIDATOR)]) == []
    first.refresh_from_db()
    assert first.completion_code == first.expected_completion_code() and not first.code_holds.exists()


# --- the kinds the quality app registers ----------------------------------------------------------------


def test_the_quality_app_registers_its_three_kinds_with_one_check(own_kinds):
    register_quality_hold_kinds()
    guesser, correlated, first = (hold_kinds.kind(name) for name in (GUESSER, CORRELATED, DEFERRED))
    assert (guesser.name, guesser.label) == (GUESSER, "labels at chance or below the study's level")
    assert (correlated.name, correlated.label) == (CORRELATED, "labels correlated with other ids")
    assert (first.name, first.label) == (DEFERRED, "first session deferred to a second batch")
    assert guesser.check is hold_code_of_guesser
    assert correlated.check is None and first.check is None, "found later, or by the guesser's check"
    assert hold_kinds.checks() == [guesser]
    assert not guesser.last
