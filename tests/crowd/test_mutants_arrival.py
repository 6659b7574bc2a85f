"""What arrival decides besides the link's ids: the links between ids that are one person, which
browser an id first came from, whether a browser is asked before becoming an id, the account name
of a market id, and which study session a request carries."""

import threading
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.sessions.backends.signed_cookies import SessionStore
from django.db import connection, transaction
from django.http import HttpRequest
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corpus.models import Market, Worker
from crowd import arrival
from crowd.models import DeviceSighting, LinkReason, Study, StudySession, WorkerLink
from tests.collection.writing_helpers import make_study, writing_setup

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
