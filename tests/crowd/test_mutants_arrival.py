"""What arrival decides besides the link's ids: the links between ids that are one person, which
browser an id first came from, whether a browser is asked before becoming an id, the account name
of a market id, and which study session a request carries."""

import threading
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.sessions.backends.signed_cookies import SessionStore
from django.db import connection, transaction
from django.http import HttpRequest
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation_site.wiring import CLAIM_MODELS
from collection.models import WritingClaim
from corpus.models import Market, Premise, Worker
from crowd import arrival
from crowd.models import (
    ClaimStatus,
    DeviceSighting,
    LinkReason,
    MarketCheck,
    Study,
    StudySession,
    TaskKind,
    WorkerLink,
)
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

pytestmark = pytest.mark.django_db


@pytest.fixture
def study() -> Study:
    dataset, _genre = writing_setup()
    return make_study(dataset)


def links() -> set[tuple[int, int, str]]:
    return set(WorkerLink.objects.values_list("worker_id", "linked_id", "reason"))


def test_linking_ids_records_both_ways_with_the_reason_once(make_worker) -> None:
    one, other, third = make_worker(), make_worker(), make_worker()
    assert arrival.link_workers(one.pk, other.pk, LinkReason.MARKET_RECORD) is True
    assert links() == {(one.pk, other.pk, LinkReason.MARKET_RECORD), (other.pk, one.pk, LinkReason.MARKET_RECORD)}
    # Linked already, either way round: no new link, no error, the first reason kept.
    assert arrival.link_workers(one.pk, other.pk, LinkReason.SAME_MARKET_SESSION) is False
    assert arrival.link_workers(other.pk, one.pk, LinkReason.SAME_MARKET_SESSION) is False
    assert len(links()) == 2
    # A link of one of them to a third id is new, whichever of the pair it starts from.
    assert arrival.link_workers(one.pk, third.pk, LinkReason.SAME_MARKET_SESSION) is True
    assert arrival.link_workers(third.pk, other.pk, LinkReason.SAME_MARKET_SESSION) is True
    assert len(links()) == 6


def test_an_id_is_never_linked_to_itself(make_worker) -> None:
    one = make_worker()
    assert arrival.link_workers(one.pk, one.pk, LinkReason.SAME_MARKET_SESSION) is False
    assert not WorkerLink.objects.exists()


def test_an_id_first_came_from_its_earliest_sighting(make_worker) -> None:
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    later = DeviceSighting.objects.create(worker=worker, device="later-browser")
    earliest = DeviceSighting.objects.create(worker=worker, device="first-browser")
    DeviceSighting.objects.filter(pk=earliest.pk).update(first_seen=later.first_seen - timedelta(hours=1))
    # A session's browser is read only when the id has no sighting.
    StudySession.objects.create(study=make_study(writing_setup()[0]), worker=worker, device="session-browser")
    assert arrival.first_device(worker) == "first-browser"


def test_sightings_of_one_moment_are_told_apart_by_their_order_of_creation(make_worker) -> None:
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    moment = timezone.now()
    DeviceSighting.objects.create(pk=900_002, worker=worker, device="second-browser")
    DeviceSighting.objects.create(pk=900_001, worker=worker, device="first-browser")
    DeviceSighting.objects.update(first_seen=moment)
    assert arrival.first_device(worker) == "first-browser"


def test_without_a_sighting_an_id_first_came_from_its_earliest_session_with_a_browser(make_worker, study) -> None:
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    stranger = make_worker(market=Market.PROLIFIC, external_id="P2")
    now = timezone.now()
    rows = [
        (worker, "no-browser", "", now - timedelta(hours=3)),
        (worker, "later", "later-browser", now - timedelta(hours=1)),
        (worker, "earliest", "first-browser", now - timedelta(hours=2)),
        (stranger, "strangers", "strangers-browser", now - timedelta(hours=4)),
    ]
    for owner, session_id, device, started in rows:
        session = StudySession.objects.create(study=study, worker=owner, external_session_id=session_id, device=device)
        StudySession.objects.filter(pk=session.pk).update(started_at=started)
    assert arrival.first_device(worker) == "first-browser"


def test_sessions_of_one_moment_are_told_apart_by_their_order_of_creation(make_worker, study) -> None:
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    StudySession.objects.create(pk=900_002, study=study, worker=worker, external_session_id="b", device="second")
    StudySession.objects.create(pk=900_001, study=study, worker=worker, external_session_id="a", device="first")
    StudySession.objects.update(started_at=timezone.now())
    assert arrival.first_device(worker) == "first"


def test_an_id_never_seen_in_a_browser_came_from_none(make_worker, study) -> None:
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    assert arrival.first_device(worker) == ""
    StudySession.objects.create(study=study, worker=worker, external_session_id="a", device="")
    assert arrival.first_device(worker) == ""


def visit(market: str, worker_id: str) -> arrival.Arrival:
    return arrival.Arrival(market, worker_id, "STUDY", "SESSION")


def test_a_browser_is_asked_before_becoming_an_id_with_a_session_or_a_browser(make_worker, study) -> None:
    with_session = make_worker(market=Market.PROLIFIC, external_id="HAS-SESSION")
    StudySession.objects.create(study=study, worker=with_session, external_session_id="a")
    with_browser = make_worker(market=Market.PROLIFIC, external_id="HAS-BROWSER")
    DeviceSighting.objects.create(worker=with_browser, device="their-browser")
    make_worker(market=Market.PROLIFIC, external_id="NOTHING-YET")
    assert arrival.seen_in_another_browser(visit(Market.PROLIFIC, "HAS-SESSION"), "new-browser") is True
    assert arrival.seen_in_another_browser(visit(Market.PROLIFIC, "HAS-BROWSER"), "new-browser") is True
    assert arrival.seen_in_another_browser(visit(Market.PROLIFIC, "HAS-BROWSER"), "their-browser") is False
    assert arrival.seen_in_another_browser(visit(Market.PROLIFIC, "NOTHING-YET"), "new-browser") is False


def test_the_same_id_on_another_market_is_another_participant(make_worker, study) -> None:
    turker = make_worker(market=Market.MTURK, external_id="A1B2C3")
    StudySession.objects.create(study=study, worker=turker, external_session_id="a")
    DeviceSighting.objects.create(worker=turker, device="turkers-browser")
    assert arrival.seen_in_another_browser(visit(Market.PROLIFIC, "A1B2C3"), "new-browser") is False


def test_an_account_name_fits_the_username_column_with_its_suffix() -> None:
    long_id = "a" * 200
    assert arrival._username("prolific", long_id, 0) == f"prolific-{long_id}"[:150]
    suffixed = arrival._username("prolific", long_id, 12)
    assert len(suffixed) == 150 and suffixed == f"prolific-{long_id}"[:147] + "~12"
    assert arrival._username("mturk", "A1", 1) == "mturk-A1~1"
    # Without an attempt, the plain name: the first one tried.
    assert arrival._username("mturk", "A1") == "mturk-A1"


def request_with(user: User | AnonymousUser, session_id: int | None) -> HttpRequest:
    request = RequestFactory().get("/")
    request.session = SessionStore()
    if session_id is not None:
        request.session[arrival.SESSION_KEY] = session_id
    request.user = user
    return request


def test_the_request_carries_the_session_this_browser_arrived_with(
    make_worker, study, django_assert_num_queries
) -> None:
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    older = StudySession.objects.create(study=study, worker=worker, external_session_id="older")
    newer = StudySession.objects.create(study=study, worker=worker, external_session_id="newer")
    StudySession.objects.filter(pk=older.pk).update(started_at=newer.started_at - timedelta(hours=1))
    with django_assert_num_queries(1):
        found = arrival.current_study_session(request_with(worker.user, older.pk))
        assert found == older and found.study.dataset.slug == study.dataset.slug


def test_a_browser_not_logged_in_carries_no_session(make_worker, study) -> None:
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="a")
    assert arrival.current_study_session(request_with(AnonymousUser(), session.pk)) is None
    assert arrival.current_study_session(request_with(worker.user, None)) is None


def test_a_taken_account_name_gets_the_next_free_suffix(django_user_model) -> None:
    assert arrival._free_username(Market.PROLIFIC, "P1") == "prolific-P1"
    django_user_model.objects.create(username="prolific-P1")
    django_user_model.objects.create(username="prolific-P1~1")
    assert arrival._free_username(Market.PROLIFIC, "P1") == "prolific-P1~2"


def test_an_id_whose_hundred_account_names_are_taken_is_refused(django_user_model) -> None:
    names = ["mturk-A1"] + [f"mturk-A1~{attempt}" for attempt in range(1, 100)]
    django_user_model.objects.bulk_create([django_user_model(username=name) for name in names])
    with pytest.raises(
        arrival.ArrivalError, match=r"^Too many accounts share this id; please contact the researchers\.$"
    ):
        arrival._free_username(Market.MTURK, "A1")
    django_user_model.objects.filter(username="mturk-A1~99").delete()
    assert arrival._free_username(Market.MTURK, "A1") == "mturk-A1~99"


def test_a_returning_worker_is_read_with_their_account_in_one_query(make_worker, django_assert_num_queries) -> None:
    existing = make_worker(market=Market.PROLIFIC, external_id="P1")
    with django_assert_num_queries(1):
        found = arrival.worker_for_arrival(visit(Market.PROLIFIC, "P1"))
        assert found == existing and found.user.username == existing.user.username


def test_an_id_new_to_its_market_is_a_new_worker_though_another_market_knows_it(make_worker) -> None:
    turker = make_worker(market=Market.MTURK, external_id="A1B2")
    found = arrival.worker_for_arrival(visit(Market.PROLIFIC, "A1B2"))
    assert found != turker
    assert (found.market, found.external_id, found.user.username) == (Market.PROLIFIC, "A1B2", "prolific-A1B2")
    assert not found.user.has_usable_password()


def wait_until_a_query_of_this_database_waits_on_a_lock(naming: str = "") -> None:
    with connection.cursor() as cursor:
        for _ in range(600):
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
                " AND strpos(query, %s) > 0",
                [naming],
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.05)
    raise AssertionError(f"no query waited on a lock (naming {naming!r})")


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_first_arrival_commits_meanwhile_is_that_worker_read_with_their_account() -> None:
    """Two requests of one new id at once: the second's insert waits on the first's, fails when the
    first commits, and returns the worker the first created."""
    link = visit(Market.PROLIFIC, "P-TWICE")
    # The same id on another market, and another id on this one: neither is this participant.
    Worker.objects.create(user=User.objects.create(username="turker"), market=Market.MTURK, external_id="P-TWICE")
    Worker.objects.create(user=User.objects.create(username="other"), market=Market.PROLIFIC, external_id="P-OTHER")
    first_created = threading.Event()
    first_may_commit = threading.Event()
    found: dict[str, object] = {}

    def first_request() -> None:
        try:
            with transaction.atomic():
                found["first"] = arrival.worker_for_arrival(link)
                first_created.set()
                first_may_commit.wait(30)
        finally:
            connection.close()

    def second_request() -> None:
        try:
            with CaptureQueriesContext(connection) as queries:
                worker = arrival.worker_for_arrival(link)
                read = len(queries)
                found["second"] = (worker, worker.user.username, len(queries) - read)
        except BaseException as error:
            found["second"] = error
        finally:
            connection.close()

    first = threading.Thread(target=first_request)
    first.start()
    assert first_created.wait(30)
    second = threading.Thread(target=second_request)
    second.start()
    wait_until_a_query_of_this_database_waits_on_a_lock(naming="P-TWICE")
    first_may_commit.set()
    first.join(30)
    second.join(30)
    assert found["second"] == (found["first"], "prolific-P-TWICE", 0)
    assert Worker.objects.filter(external_id="P-TWICE", market=Market.PROLIFIC).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_first_visits_of_one_session_at_once_resume_the_session_the_first_made() -> None:
    """The second visit's insert waits on the first's, fails when the first commits, and resumes
    the session the first made: one session, no error, the first browser remembered."""
    dataset, _genre = writing_setup()
    study = make_study(dataset)
    link = arrival.Arrival(Market.PROLIFIC, "P-AT-ONCE", "STUDY", "SESSION-AT-ONCE")
    arrival.worker_for_arrival(link)
    first_created = threading.Event()
    first_may_commit = threading.Event()
    found: dict[str, object] = {}

    def first_visit() -> None:
        try:
            with transaction.atomic():
                found["first"] = arrival.start_study_session(study, link, claim_models=(), device="first").session
                first_created.set()
                first_may_commit.wait(30)
        finally:
            connection.close()

    def second_visit() -> None:
        try:
            found["second"] = arrival.start_study_session(study, link, claim_models=(), device="second").session
        except BaseException as error:
            found["second"] = error
        finally:
            connection.close()

    first = threading.Thread(target=first_visit)
    first.start()
    assert first_created.wait(30)
    second = threading.Thread(target=second_visit)
    second.start()
    wait_until_a_query_of_this_database_waits_on_a_lock(naming="SESSION-AT-ONCE")
    first_may_commit.set()
    first.join(30)
    second.join(30)
    assert found["second"] == found["first"]
    assert list(StudySession.objects.filter(study=study).values_list("external_session_id", "device")) == [
        ("SESSION-AT-ONCE", "first")
    ]


def test_a_return_without_turk_submit_to_keeps_the_address_the_session_has(study) -> None:
    posting = arrival.Arrival(Market.MTURK, "A1", "HIT1", "ASSIGN1", turk_submit_to="https://www.mturk.com")
    started = arrival.start_study_session(study, posting, claim_models=())
    assert (started.session.turk_submit_to, started.session.device) == ("https://www.mturk.com", "")
    again = arrival.start_study_session(study, arrival.Arrival(Market.MTURK, "A1", "HIT1", "ASSIGN1"), claim_models=())
    again.session.refresh_from_db()
    assert again.session.pk == started.session.pk and again.session.turk_submit_to == "https://www.mturk.com"


@pytest.mark.django_db(transaction=True)
def test_an_arrival_whose_account_names_are_taken_meanwhile_three_times_is_asked_to_come_back() -> None:
    """Each try's account name is taken by another request that commits while this one waits on
    it: after three tries the worker is asked to open the link again, and nothing is left."""
    link = visit(Market.PROLIFIC, "P-BUSY")
    names = ["prolific-P-BUSY", "prolific-P-BUSY~1", "prolific-P-BUSY~2"]
    holding = [threading.Event() for _ in names]
    released = [threading.Event() for _ in names]
    outcome: dict[str, object] = {}

    def hold(index: int) -> None:
        try:
            with transaction.atomic():
                User.objects.create(username=names[index])
                holding[index].set()
                released[index].wait(30)
        finally:
            connection.close()

    def arrive() -> None:
        try:
            outcome["worker"] = arrival.worker_for_arrival(link)
        except arrival.ArrivalError as refusal:
            outcome["refusal"] = str(refusal)
        finally:
            connection.close()

    holders = [threading.Thread(target=hold, args=(index,)) for index in range(len(names))]
    holders[0].start()
    assert holding[0].wait(30)
    arriving = threading.Thread(target=arrive)
    arriving.start()
    for index, name in enumerate(names):
        wait_until_a_query_of_this_database_waits_on_a_lock(naming=name)
        if index + 1 < len(names):
            holders[index + 1].start()
            assert holding[index + 1].wait(30)
        released[index].set()
        holders[index].join(30)
    arriving.join(30)
    assert outcome == {"refusal": "Your account could not be created just now; please open the link again."}
    assert not Worker.objects.filter(external_id="P-BUSY").exists()
    assert set(User.objects.filter(username__startswith="prolific-P-BUSY").values_list("username", flat=True)) == set(
        names
    )


def test_a_prolific_link_becomes_its_ids_without_a_posting_address() -> None:
    params = {"PROLIFIC_PID": " P1 ", "STUDY_ID": "S1", "SESSION_ID": "X1", "turkSubmitTo": "https://www.mturk.com"}
    assert arrival.parse_arrival(params) == arrival.Arrival(Market.PROLIFIC, "P1", "S1", "X1", "")


def test_a_turk_link_keeps_only_a_turk_posting_address() -> None:
    ids = {"workerId": "W1", "hitId": "H1", "assignmentId": "A1"}
    posting = arrival.parse_arrival({**ids, "turkSubmitTo": "https://workersandbox.mturk.com/"})
    assert posting == arrival.Arrival(Market.MTURK, "W1", "H1", "A1", "https://workersandbox.mturk.com")
    assert arrival.parse_arrival({**ids, "turkSubmitTo": "https://www.mturk.com"}).turk_submit_to == (
        "https://www.mturk.com"
    )
    assert arrival.parse_arrival({**ids, "turkSubmitTo": "https://evil.example"}).turk_submit_to == ""
    assert arrival.parse_arrival({**ids, "turkSubmitTo": "https://www.mturk.comX"}).turk_submit_to == ""
    assert arrival.parse_arrival(ids).turk_submit_to == ""


def test_a_link_with_missing_or_malformed_ids_names_each_problem() -> None:
    with pytest.raises(arrival.ArrivalError) as refused:
        arrival.parse_arrival({"PROLIFIC_PID": "P1", "STUDY_ID": "<b>", "SESSION_ID": " "})
    assert str(refused.value) == "STUDY_ID is not a valid id; SESSION_ID is missing."
    with pytest.raises(arrival.ArrivalError) as refused:
        arrival.parse_arrival({"workerId": "W1"})
    assert str(refused.value) == "hitId is missing; assignmentId is missing."


def test_a_link_without_ids_says_where_to_open_the_study() -> None:
    with pytest.raises(arrival.ArrivalError) as refused:
        arrival.parse_arrival({"PROLIFIC_PID": "", "other": "x"})
    assert str(refused.value) == (
        "This link carries no worker ids. Please open the study from Prolific "
        "(PROLIFIC_PID, STUDY_ID, SESSION_ID) or Mechanical Turk (workerId, assignmentId, hitId)."
    )


def test_only_turks_placeholder_assignment_is_a_preview() -> None:
    assert arrival.is_mturk_preview({"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}) is True
    assert arrival.is_mturk_preview({"assignmentId": "A1"}) is False
    assert arrival.is_mturk_preview({}) is False


def test_a_study_pays_by_task_or_by_catch_bonus(study) -> None:
    assert arrival.is_paid(study) is False
    study.payment_per_task = Decimal("0.01")
    assert arrival.is_paid(study) is True
    study.payment_per_task = Decimal("0")
    study.bonus_per_catch_match = Decimal("0.01")
    assert arrival.is_paid(study) is True
    study.bonus_per_catch_match = None
    study.payment_per_task = None
    assert arrival.is_paid(study) is False


def test_a_paid_study_with_unverified_ids_is_refused_its_launch(study) -> None:
    study.payment_per_task = Decimal("1")
    assert arrival.ids_verified(study, market_confirms=False) is False
    assert arrival.launch_refusal(study, market_confirms=False) == arrival.LAUNCH_REFUSED
    assert arrival.ids_verified(study, market_confirms=True) is True
    assert arrival.launch_refusal(study, market_confirms=True) is None
    study.require_signed_link = True
    assert arrival.ids_verified(study, market_confirms=False) is True
    assert arrival.launch_refusal(study, market_confirms=False) is None
    study.require_signed_link = False
    study.open_link_unverified = True
    assert arrival.launch_refusal(study, market_confirms=False) is None
    study.open_link_unverified = False
    study.payment_per_task = Decimal("0")
    assert arrival.launch_refusal(study, market_confirms=False) is None


def test_a_signed_study_takes_only_its_own_signature(study) -> None:
    arrival.check_link_signature(study, {})
    study.require_signed_link = True
    arrival.check_link_signature(study, {"sig": study.link_signature()})
    for params in ({}, {"sig": "0" * 16}):
        with pytest.raises(arrival.ArrivalError) as refused:
            arrival.check_link_signature(study, params)
        assert str(refused.value) == (
            "This study link is not signed correctly. Please open it again from the crowd platform."
        )


def test_an_open_link_id_is_bound_to_the_browser_it_first_came_from(make_worker, study) -> None:
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    DeviceSighting.objects.create(worker=worker, device="first-browser")
    make_worker(market=Market.PROLIFIC, external_id="NO-BROWSER")
    assert arrival.bound_to_another_browser(study, visit(Market.PROLIFIC, "P1"), "other-browser") is False
    study.open_link_unverified = True
    assert arrival.bound_to_another_browser(study, visit(Market.PROLIFIC, "P1"), "other-browser") is True
    assert arrival.bound_to_another_browser(study, visit(Market.PROLIFIC, "P1"), "first-browser") is False
    assert arrival.bound_to_another_browser(study, visit(Market.MTURK, "P1"), "other-browser") is False
    assert arrival.bound_to_another_browser(study, visit(Market.PROLIFIC, "NO-BROWSER"), "other-browser") is False


def test_ids_presenting_one_market_session_or_named_by_its_record_are_linked(make_worker, study) -> None:
    me = make_worker(market=Market.PROLIFIC, external_id="ME")
    same_session = make_worker(market=Market.PROLIFIC, external_id="SAME")
    other_market = make_worker(market=Market.MTURK, external_id="TURK")
    named_me = make_worker(market=Market.PROLIFIC, external_id="NAMED")
    named_on_turk = make_worker(market=Market.MTURK, external_id="NAMED-TURK")
    mine = StudySession.objects.create(study=study, worker=me, external_session_id="S1")
    StudySession.objects.create(study=study, worker=same_session, external_session_id="S1")
    StudySession.objects.create(study=study, worker=other_market, external_session_id="S1")
    StudySession.objects.create(study=study, worker=named_me, external_session_id="S2", market_participant_id="ME")
    StudySession.objects.create(study=study, worker=named_on_turk, external_session_id="S3", market_participant_id="ME")
    StudySession.objects.create(study=study, worker=me, external_session_id="S4", market_participant_id="ME")
    unrelated = make_worker(market=Market.PROLIFIC, external_id="UNRELATED")
    StudySession.objects.create(
        study=study, worker=unrelated, external_session_id="S5", market_participant_id="SOMEONE"
    )
    assert arrival.link_same_market_session(mine) == 2
    assert links() == {
        (me.pk, same_session.pk, LinkReason.SAME_MARKET_SESSION),
        (same_session.pk, me.pk, LinkReason.SAME_MARKET_SESSION),
        (me.pk, named_me.pk, LinkReason.MARKET_RECORD),
        (named_me.pk, me.pk, LinkReason.MARKET_RECORD),
    }
    assert arrival.link_same_market_session(mine) == 0


def test_sessions_without_a_market_session_id_are_not_one_visit(make_worker, study) -> None:
    me = make_worker(market=Market.PROLIFIC, external_id="")
    other = make_worker(market=Market.PROLIFIC, external_id="OTHER")
    mine = StudySession.objects.create(study=study, worker=me, external_session_id="")
    StudySession.objects.create(study=study, worker=other, external_session_id="", market_participant_id="")
    assert arrival.link_same_market_session(mine) == 0
    assert links() == set()


def test_a_first_visit_remembers_its_browser_and_ids(study) -> None:
    link = arrival.Arrival(Market.PROLIFIC, "P1", "STUDY-1", "SESSION-1")
    started = arrival.start_study_session(study, link, claim_models=(), device="first-browser")
    started.session.refresh_from_db()
    assert started.released_claims == 0
    assert (started.session.external_study_id, started.session.external_session_id, started.session.device) == (
        "STUDY-1",
        "SESSION-1",
        "first-browser",
    )
    assert started.session.worker.external_id == "P1"
    again = arrival.start_study_session(study, link, claim_models=(), device="second-browser")
    again.session.refresh_from_db()
    assert again.session.pk == started.session.pk and again.session.device == "first-browser"


def test_a_return_with_a_new_turk_address_updates_the_session(study) -> None:
    link = arrival.Arrival(Market.MTURK, "A1", "HIT1", "ASSIGN1", turk_submit_to="https://www.mturk.com")
    first = arrival.start_study_session(study, link, claim_models=()).session
    moved = arrival.Arrival(Market.MTURK, "A1", "HIT1", "ASSIGN1", turk_submit_to="https://workersandbox.mturk.com")
    arrival.start_study_session(study, moved, claim_models=())
    first.refresh_from_db()
    assert first.turk_submit_to == "https://workersandbox.mturk.com"


def hold(worker: Worker, premise: Premise, session: StudySession | None, *, expired: bool = False) -> WritingClaim:
    moment = timezone.now() + (timedelta(hours=-1) if expired else timedelta(hours=1))
    return WritingClaim.objects.create(worker=worker, premise=premise, study_session=session, expires_at=moment)


def statuses(*claims: WritingClaim) -> list[str]:
    return [WritingClaim.objects.get(pk=claim.pk).status for claim in claims]


def test_releasing_claims_spares_this_session_expired_claims_and_other_workers(make_worker) -> None:
    dataset, genre = writing_setup()
    study = make_study(dataset)
    premises = add_premises(dataset, genre, 5)
    # A worker holds one open writing claim at a time: one worker per claim, the filter names four.
    workers = [make_worker() for _ in premises]
    here = StudySession.objects.create(study=study, worker=workers[2], external_session_id="here")
    earlier = StudySession.objects.create(study=study, worker=workers[0], external_session_id="earlier")
    carried = hold(workers[0], premises[0], earlier)
    sessionless = hold(workers[1], premises[1], None)
    kept_here = hold(workers[2], premises[2], here)
    expired = hold(workers[3], premises[3], earlier, expired=True)
    others = hold(workers[4], premises[4], earlier)
    everything = (carried, sessionless, kept_here, expired, others)
    mine = [worker.pk for worker in workers[:4]]
    models = (WritingClaim,)
    assert arrival.release_open_claims(models, on_teams=[dataset.team_id + 1000], worker__in=mine) == 0
    assert statuses(*everything) == [ClaimStatus.OPEN] * 5
    # Every claim model's releases count, the writing claims' (the first model) as the others'.
    released = arrival.release_open_claims(
        CLAIM_MODELS, on_teams=[dataset.team_id], exclude_session=here, worker__in=mine
    )
    assert released == 2
    assert statuses(*everything) == [
        ClaimStatus.RELEASED,
        ClaimStatus.RELEASED,
        ClaimStatus.OPEN,
        ClaimStatus.OPEN,
        ClaimStatus.OPEN,
    ]
    assert arrival.release_open_claims(models, worker__in=mine) == 1
    assert statuses(kept_here, others) == [ClaimStatus.RELEASED, ClaimStatus.OPEN]


def test_opening_another_session_releases_the_claims_of_the_earlier_one(make_worker) -> None:
    dataset, genre = writing_setup()
    study = make_study(dataset)
    first, second = add_premises(dataset, genre, 2)
    link = arrival.Arrival(Market.PROLIFIC, "P1", "STUDY", "SESSION-1")
    started = arrival.start_study_session(study, link, claim_models=(WritingClaim,))
    worker = started.session.worker
    mine = hold(worker, first, started.session)
    stranger = hold(make_worker(), second, None)
    assert arrival.start_study_session(study, link, claim_models=(WritingClaim,)).released_claims == 0
    moved = arrival.start_study_session(
        study, arrival.Arrival(Market.PROLIFIC, "P1", "STUDY", "SESSION-2"), claim_models=(WritingClaim,)
    )
    assert moved.released_claims == 1 and moved.session.pk != started.session.pk
    assert statuses(mine, stranger) == [ClaimStatus.RELEASED, ClaimStatus.OPEN]


def test_only_a_session_no_market_vouched_for_or_refused_is_announced(study) -> None:
    heard: list[tuple[object, StudySession]] = []

    def listen(sender: object, session: StudySession, **_: object) -> None:
        heard.append((sender, session))

    arrival.session_arrived.connect(listen)
    try:
        link = arrival.Arrival(Market.PROLIFIC, "P1", "STUDY", "SESSION-1")
        started = arrival.start_study_session(study, link, claim_models=()).session
        assert heard == [(StudySession, started)]
        StudySession.objects.filter(pk=started.pk).update(market_check=MarketCheck.PENDING)
        arrival.start_study_session(study, link, claim_models=())
        StudySession.objects.filter(pk=started.pk).update(market_check=MarketCheck.VOUCHED)
        arrival.start_study_session(study, link, claim_models=())
        StudySession.objects.filter(pk=started.pk).update(market_check=MarketCheck.REFUSED)
        arrival.start_study_session(study, link, claim_models=())
    finally:
        arrival.session_arrived.disconnect(listen)
    assert heard == [(StudySession, started), (StudySession, started)]


def test_a_session_of_another_worker_or_another_task_kind_is_not_the_requests(make_worker, study) -> None:
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    stranger = make_worker(market=Market.PROLIFIC, external_id="P2")
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="a")
    assert arrival.current_study_session(request_with(stranger.user, session.pk)) is None
    assert arrival.current_study_session(request_with(worker.user, session.pk), task_kind=TaskKind.WRITING) == session
    assert arrival.current_study_session(request_with(worker.user, session.pk), task_kind=TaskKind.VALIDATION) is None
