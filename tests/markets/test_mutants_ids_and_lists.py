"""The market ids' formats and the market's lists, at the edges mutmut found unguarded.

The ids (markets/ids.py): each check hands back the id it was given, refuses something that is no
text at all as a bad id, and says in its refusal which id it was and what its market's format is; a
connection's problems name each of its fields out of format, leave blank fields to the
required-field checks and leave alone the field the other market would use.

The lists (markets/lists.py): only this study's workers from the connection's own market, with an
id on it, go to the lists; who passed the study's qualification test goes on the qualified list
unless this team excluded them, and who this team excluded goes on the excluded list if they came
to the study; each worker goes once per list and connection, a worker on one list still goes on
the other, a sync that meets the entries another sync of the same connection just made still
ends well, a list the market refused is sent again next time while the other list is still sent,
and every request is recorded as made by whoever asked for the sync.
"""

from typing import Any

import pytest
from django.db import connection as db_connection

from corpus.models import Market, Worker, WorkerExclusion
from crowd.models import StudySession
from markets import lists
from markets.ids import (
    ARRIVAL_FORMAT,
    MTURK_FORMAT,
    PROLIFIC_FORMAT,
    TOKEN_FORMAT,
    BadMarketId,
    connection_id_problems,
    mturk_type_id,
    participant_id,
    path_token,
    prolific_id,
)
from markets.models import ListEntry, ListKind, MarketCall
from quality.models import QualificationAttempt, QualificationTest
from teams.models import Team

from .conftest import arrive, connect_mturk, connect_prolific, make_study

PROLIFIC = "60a3f1c2b4e5d6f7a8b9c0d1"
MTURK = "3XYZ0ABCDEF1GHIJ2KLMN3OPQR4STU"
BAD = "../users/me/#"
QUALIFIED_GROUP = "5fa0000000000000000000b1"
EXCLUDED_GROUP = "5fa0000000000000000000b2"
MTURK_QUALIFICATION = "3STANDINQUALTYPE00000000000001"


# --- the ids ---------------------------------------------------------------------------------


def test_an_id_in_its_markets_format_is_handed_back_as_it_was_given():
    assert prolific_id(PROLIFIC) == PROLIFIC
    assert mturk_type_id(MTURK) == MTURK
    assert path_token("sub_mission-1") == "sub_mission-1"
    assert participant_id("worker.1:a_b-c") == "worker.1:a_b-c"


def test_each_refusal_says_which_id_it_was_and_what_its_markets_format_is():
    refusals = [
        (prolific_id, f"The Prolific id '{BAD}' is not a market id: {PROLIFIC_FORMAT}."),
        (mturk_type_id, f"The MTurk id '{BAD}' is not a market id: {MTURK_FORMAT}."),
        (path_token, f"The id '{BAD}' is not a market id: {TOKEN_FORMAT}."),
        (participant_id, f"The participant's id '{BAD}' is not a market id: {ARRIVAL_FORMAT}."),
    ]
    for check, words in refusals:
        with pytest.raises(BadMarketId) as refused:
            check(BAD)
        assert str(refused.value) == words
    with pytest.raises(BadMarketId) as refused:
        prolific_id("study-1", "The study")
    assert str(refused.value) == f"The study 'study-1' is not a market id: {PROLIFIC_FORMAT}."


@pytest.mark.parametrize("value", [None, 60, b"60a3f1c2b4e5d6f7a8b9c0d1"])
def test_something_that_is_no_text_is_refused_as_a_bad_id(value: Any):
    for check in (prolific_id, mturk_type_id, path_token, participant_id):
        with pytest.raises(BadMarketId, match="is not a market id"):
            check(value)


def test_a_prolific_connection_names_each_field_out_of_prolifics_format():
    problems = connection_id_problems(
        "prolific",
        market_study_id=BAD,
        hit_type_id=BAD,
        qualified_list_id="qual/1",
        excluded_list_id=MTURK,
    )

    assert problems == {
        "market_study_id": f"The Prolific study id '{BAD}' is not a market id: {PROLIFIC_FORMAT}.",
        "qualified_list_id": f"The qualified workers' list id 'qual/1' is not a market id: {PROLIFIC_FORMAT}.",
        "excluded_list_id": f"The excluded workers' list id '{MTURK}' is not a market id: {PROLIFIC_FORMAT}.",
    }


def test_an_mturk_connection_names_each_field_out_of_mturks_format():
    problems = connection_id_problems(
        "mturk",
        market_study_id=BAD,
        hit_type_id=PROLIFIC,
        qualified_list_id="qual/1",
        excluded_list_id=BAD,
    )

    assert problems == {
        "hit_type_id": f"The HIT type id '{PROLIFIC}' is not a market id: {MTURK_FORMAT}.",
        "qualified_list_id": f"The qualified workers' list id 'qual/1' is not a market id: {MTURK_FORMAT}.",
        "excluded_list_id": f"The excluded workers' list id '{BAD}' is not a market id: {MTURK_FORMAT}.",
    }


def test_blank_fields_and_ids_in_format_are_no_problem():
    assert connection_id_problems("prolific") == {}
    assert connection_id_problems("mturk") == {}
    assert (
        connection_id_problems(
            "prolific", market_study_id=PROLIFIC, qualified_list_id=QUALIFIED_GROUP, excluded_list_id=EXCLUDED_GROUP
        )
        == {}
    )
    assert connection_id_problems("mturk", hit_type_id=MTURK, qualified_list_id=MTURK, excluded_list_id=MTURK) == {}
    # A blank field before one out of format: the later one is still checked.
    assert list(connection_id_problems("prolific", excluded_list_id=BAD)) == ["excluded_list_id"]
    assert list(connection_id_problems("mturk", excluded_list_id=BAD)) == ["excluded_list_id"]


def test_the_other_markets_field_alone_is_no_problem():
    assert connection_id_problems("prolific", hit_type_id=BAD) == {}
    assert connection_id_problems("mturk", market_study_id=BAD) == {}


# --- the lists -------------------------------------------------------------------------------


def _pass(study, worker: Worker, passed: bool = True) -> None:
    test, _ = QualificationTest.objects.get_or_create(study=study)
    number = QualificationAttempt.objects.filter(test=test, worker=worker).count() + 1
    QualificationAttempt.objects.create(
        test=test, worker=worker, number=number, correct=5, total=5, score=1, passed=passed
    )


def _exclude(worker: Worker, team_id: int) -> None:
    WorkerExclusion.objects.create(worker=worker, team_id=team_id)


def _entries(connection) -> set[tuple[str, str]]:
    return {
        (entry.worker.external_id, entry.kind)
        for entry in ListEntry.objects.filter(connection=connection).select_related("worker")
    }


@pytest.mark.django_db
def test_only_this_studys_workers_of_this_market_with_an_id_go_on_the_lists(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin, qualified_list_id=QUALIFIED_GROUP, excluded_list_id=EXCLUDED_GROUP)
    passed, failed, blank, excluded, elsewhere = arrive(study, standin, django_user_model, 5)
    _pass(study, passed.worker)
    _pass(study, failed.worker, passed=False)
    Worker.objects.filter(pk=blank.worker.pk).update(external_id="")
    _pass(study, blank.worker)
    _exclude(excluded.worker, study.dataset.team_id)
    _pass(study, excluded.worker)  # excluded by this team: never on the qualified list
    # Excluded by this team but never came to this study: not on this study's excluded list.
    other_study = make_study("another-study")
    StudySession.objects.filter(pk=elsewhere.pk).update(study=other_study)
    _exclude(elsewhere.worker, study.dataset.team_id)
    # A worker from the other market who passed: not on a Prolific list.
    mturk_worker = arrive(study, standin, django_user_model, 1, market=Market.MTURK, prefix="m-")[0]
    _pass(study, mturk_worker.worker)

    assert lists.sync_lists(connection) == "qualified: 1 added; excluded: 1 added"

    assert standin.groups == {
        QUALIFIED_GROUP: {passed.worker.external_id},
        EXCLUDED_GROUP: {excluded.worker.external_id},
    }
    assert _entries(connection) == {
        (passed.worker.external_id, ListKind.QUALIFIED),
        (excluded.worker.external_id, ListKind.EXCLUDED),
    }


@pytest.mark.django_db
def test_another_teams_exclusion_neither_keeps_a_worker_off_the_qualified_list_nor_puts_them_on_the_excluded(
    standin, django_user_model
):
    study = make_study()
    connection = connect_prolific(study, standin, qualified_list_id=QUALIFIED_GROUP, excluded_list_id=EXCLUDED_GROUP)
    (session,) = arrive(study, standin, django_user_model, 1)
    _pass(study, session.worker)
    other_team = Team.objects.create(name="Another team", slug="another-team")
    _exclude(session.worker, other_team.pk)

    assert lists.sync_lists(connection) == "qualified: 1 added; excluded: nobody new"
    assert standin.groups == {QUALIFIED_GROUP: {session.worker.external_id}}


@pytest.mark.django_db
def test_a_worker_with_many_sessions_and_passes_goes_once(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin, qualified_list_id=QUALIFIED_GROUP, excluded_list_id=EXCLUDED_GROUP)
    passed, excluded = arrive(study, standin, django_user_model, 2)
    _pass(study, passed.worker)
    _pass(study, passed.worker)
    StudySession.objects.create(study=study, worker=excluded.worker, external_session_id="second-visit")
    _exclude(excluded.worker, study.dataset.team_id)

    assert lists.sync_lists(connection) == "qualified: 1 added; excluded: 1 added"
    assert ListEntry.objects.count() == 2


@pytest.mark.django_db
def test_a_worker_on_the_qualified_list_still_goes_on_the_excluded_list_when_excluded_later(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin, qualified_list_id=QUALIFIED_GROUP, excluded_list_id=EXCLUDED_GROUP)
    (session,) = arrive(study, standin, django_user_model, 1)
    _pass(study, session.worker)
    assert lists.sync_lists(connection) == "qualified: 1 added; excluded: nobody new"

    _exclude(session.worker, study.dataset.team_id)

    assert lists.sync_lists(connection) == "qualified: nobody new; excluded: 1 added"
    assert _entries(connection) == {
        (session.worker.external_id, ListKind.QUALIFIED),
        (session.worker.external_id, ListKind.EXCLUDED),
    }


@pytest.mark.django_db
def test_a_worker_on_another_connections_list_still_goes_on_this_ones(standin, django_user_model):
    first_study = make_study()
    first = connect_prolific(first_study, standin, qualified_list_id=QUALIFIED_GROUP)
    second_study = make_study("second-study")
    second = connect_prolific(second_study, standin, qualified_list_id=EXCLUDED_GROUP)
    (session,) = arrive(first_study, standin, django_user_model, 1)
    StudySession.objects.create(study=second_study, worker=session.worker, external_session_id="on-the-second")
    _pass(first_study, session.worker)
    _pass(second_study, session.worker)

    assert lists.sync_lists(first) == "qualified: 1 added"
    assert lists.sync_lists(second) == "qualified: 1 added"
    assert standin.groups[EXCLUDED_GROUP] == {session.worker.external_id}


@pytest.mark.django_db
def test_a_list_the_market_refused_is_sent_again_and_the_other_list_still_goes(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin, qualified_list_id=QUALIFIED_GROUP, excluded_list_id=EXCLUDED_GROUP)
    passed, excluded = arrive(study, standin, django_user_model, 2)
    _pass(study, passed.worker)
    _exclude(excluded.worker, study.dataset.team_id)
    standin.fail("list.add", "400")

    line = lists.sync_lists(connection)

    qualified, rest = line.split("; ")
    assert qualified.startswith("qualified: ") and qualified != "qualified: nobody new"
    assert "added" not in qualified
    assert rest == "excluded: 1 added"
    assert _entries(connection) == {(excluded.worker.external_id, ListKind.EXCLUDED)}
    assert lists.sync_lists(connection) == "qualified: 1 added; excluded: nobody new"
    assert standin.groups[QUALIFIED_GROUP] == {passed.worker.external_id}


@pytest.mark.django_db
def test_only_the_lists_with_an_id_are_sent(standin, django_user_model):
    study = make_study()
    (session,) = arrive(study, standin, django_user_model, 1)
    _pass(study, session.worker)
    _exclude(session.worker, study.dataset.team_id)
    bare = connect_prolific(study, standin)
    assert lists.sync_lists(bare) == "No list ids are set for this connection."

    excluded_only = connect_prolific(study, standin, excluded_list_id=EXCLUDED_GROUP)

    assert lists.sync_lists(excluded_only) == "excluded: 1 added"
    assert standin.groups == {EXCLUDED_GROUP: {session.worker.external_id}}


@pytest.mark.django_db
def test_mturk_lists_take_mturk_workers_each_qualified_and_recorded_as_made_by_who_asked(standin, django_user_model):
    connection = connect_mturk(make_study("on-mturk"), standin, qualified_list_id=MTURK_QUALIFICATION)
    first, second = arrive(connection.study, standin, django_user_model, 2, market=Market.MTURK)
    prolific_worker = arrive(connection.study, standin, django_user_model, 1, prefix="p-")[0]
    for session in (first, second, prolific_worker):
        _pass(connection.study, session.worker)
    researcher = django_user_model.objects.create_user(username="researcher")

    assert lists.sync_lists(connection, by=researcher) == "qualified: 2 added"

    assert standin.qualified[MTURK_QUALIFICATION] == {first.worker.external_id, second.worker.external_id}
    calls = MarketCall.objects.filter(connection=connection, action="list.add")
    assert calls.count() == 2 and {call.made_by for call in calls} == {researcher}


@pytest.mark.django_db
def test_a_pass_of_another_studys_qualification_test_does_not_qualify_a_worker_here(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin, qualified_list_id=QUALIFIED_GROUP)
    (session,) = arrive(study, standin, django_user_model, 1)
    _pass(make_study("another-study"), session.worker)

    assert lists.sync_lists(connection) == "qualified: nobody new"
    assert standin.groups == {}


@pytest.mark.django_db(transaction=True)
def test_a_sync_that_meets_the_entries_another_sync_just_made_still_ends_well(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin, qualified_list_id=QUALIFIED_GROUP)
    (session,) = arrive(study, standin, django_user_model, 1)
    _pass(study, session.worker)

    def the_other_sync_gets_there_first() -> None:
        # The stand-in's own thread and database connection: a second sync of the same connection.
        try:
            ListEntry.objects.create(connection=connection, worker=session.worker, kind=ListKind.QUALIFIED)
        finally:
            db_connection.close()

    standin.before_answer["list.add"] = the_other_sync_gets_there_first

    assert lists.sync_lists(connection) == "qualified: 1 added"
    assert _entries(connection) == {(session.worker.external_id, ListKind.QUALIFIED)}
