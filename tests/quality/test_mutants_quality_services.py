"""Excluding workers (quality/services.py), at the edges mutmut found unguarded.

`set_excluded` refuses in words an exclusion of nobody or in no team, takes worker ids given as
text or twice as one worker, records who excluded them and why, and releases an excluded worker's
open claims on the excluding teams' data only (a readmission releases none).
`auto_exclude_flagged` excludes a flagged worker only where a study they took part in opted in,
never a worker that team already excluded, in the team of that study's dataset, on the flag rules'
options it is given.
"""

from collections.abc import Callable

import pytest

from audit.models import AuditEntry
from corpus.models import Dataset, Pair, Worker, WorkerExclusion
from corpus.services import LabelRefused
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from quality.services import auto_exclude_flagged, set_excluded
from teams.models import Team, default_team_id
from tests import factories
from tests.quality.test_worker_quality import guesser_corpus
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims, services
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db

MakeWorker = Callable[..., Worker]


def excluded_pairs() -> set[tuple[int, int]]:
    return set(WorkerExclusion.objects.values_list("worker_id", "team_id"))


def open_claims(worker: Worker) -> int:
    return ValidationClaim.objects.filter(worker=worker, status=ClaimStatus.OPEN).count()


def holder_of_open_claims(make_worker: MakeWorker) -> Worker:
    """A validator holding open claims on pairs of the default team's dataset."""
    dataset = make_dataset()
    pairs = [make_pair(dataset) for _ in range(3)]
    services.mark_for_validation(Pair.objects.filter(pk__in=[pair.pk for pair in pairs]))
    holder = make_worker()
    assert batch_claims.claim_validation_batch(holder) is not None
    assert open_claims(holder) > 0
    return holder


def opted_in_study(dataset: Dataset, workers: list[Worker], slug: str = "opted", opted: bool = True) -> Study:
    study = Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="X",
        auto_exclude_flagged=opted,
    )
    for worker in workers:
        StudySession.objects.create(study=study, worker=worker, external_session_id=f"{slug}-{worker.pk}")
    return study


def refusal(worker_ids: list[int], teams: list[int]) -> list[str]:
    with pytest.raises(LabelRefused) as refused:
        set_excluded(worker_ids, True, teams=teams)
    return refused.value.messages


def test_excluding_nobody_or_in_no_team_is_refused_in_words(make_worker: MakeWorker) -> None:
    worker = make_worker()
    assert refusal([], [default_team_id()]) == ["Choose at least one worker."]
    assert refusal([], []) == ["Choose at least one worker."]
    assert refusal([worker.pk], []) == ["Choose a team to exclude them in."]
    assert excluded_pairs() == set()


def test_a_worker_named_as_text_and_twice_is_excluded_once(make_worker: MakeWorker) -> None:
    worker = make_worker()
    team = default_team_id()

    outcome = set_excluded([str(worker.pk), worker.pk], True, teams=[team, team])

    assert outcome.changed == 1
    assert excluded_pairs() == {(worker.pk, team)}


def test_an_exclusion_records_who_decided_and_why(make_worker: MakeWorker, researcher: object) -> None:
    worker = make_worker(external_id="w-why")

    set_excluded([worker.pk], True, teams=[default_team_id()], by=researcher, reason="random guesser")

    (entry,) = AuditEntry.objects.filter(action="worker.excluded")
    assert (entry.actor, entry.reason, entry.after) == ("researcher", "random guesser", {"excluded": True})


def test_an_exclusion_given_no_reason_records_none(make_worker: MakeWorker) -> None:
    worker = make_worker()

    set_excluded([worker.pk], True, teams=[default_team_id()])

    (entry,) = AuditEntry.objects.filter(action="worker.excluded")
    assert entry.reason == ""


def test_an_exclusion_releases_open_claims_only_on_the_excluding_teams_data(make_worker: MakeWorker) -> None:
    holder = holder_of_open_claims(make_worker)
    elsewhere = Team.objects.create(slug="lab-elsewhere", name="Lab elsewhere")
    held = open_claims(holder)

    set_excluded([holder.pk], True, teams=[elsewhere.pk])
    assert open_claims(holder) == held  # the claims are on another team's data

    set_excluded([holder.pk], True, teams=[default_team_id()])
    assert open_claims(holder) == 0


def test_a_readmission_releases_no_claims(make_worker: MakeWorker) -> None:
    holder = holder_of_open_claims(make_worker)
    held = open_claims(holder)

    set_excluded([holder.pk], False, teams=[default_team_id()])

    assert open_claims(holder) == held


def test_the_flag_rules_options_decide_who_is_flagged_and_nobody_is_excluded_twice(
    make_worker: MakeWorker,
) -> None:
    dataset, honest, guesser = guesser_corpus(make_worker)
    opted_in_study(dataset, [*honest, guesser])

    # Minimums no worker reaches: nobody is flagged, so nobody is excluded.
    assert auto_exclude_flagged(guesser_min_items=1000, same_label_min_items=1000, too_fast_min_items=1000) == []
    assert excluded_pairs() == set()

    (outcome,) = auto_exclude_flagged()
    assert (outcome.changed, outcome.teams) == (1, (default_team_id(),))
    assert excluded_pairs() == {(guesser.pk, default_team_id())}

    # Still flagged, but this team excluded them already: no outcome at all.
    assert auto_exclude_flagged() == []
    assert excluded_pairs() == {(guesser.pk, default_team_id())}


def test_a_flagged_worker_is_excluded_only_in_the_team_of_an_opted_in_study_of_theirs(
    make_worker: MakeWorker,
) -> None:
    dataset, honest, guesser = guesser_corpus(make_worker)
    opted_in_study(dataset, honest, slug="opted")
    opted_in_study(dataset, [guesser], slug="not-opted", opted=False)
    lab = Team.objects.create(slug="lab-quiet", name="Lab quiet")
    # An opted-in study of another lab, whose data has none of the guesser's labels.
    opted_in_study(factories.dataset("quiet-data", team=lab), [guesser], slug="quiet")

    assert auto_exclude_flagged() == []
    assert excluded_pairs() == set()

    StudySession.objects.create(study=Study.objects.get(slug="opted"), worker=guesser, external_session_id="late")
    (outcome,) = auto_exclude_flagged()
    assert outcome.teams == (default_team_id(),)
    assert excluded_pairs() == {(guesser.pk, default_team_id())}
