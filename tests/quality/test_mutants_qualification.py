"""The qualification test's rules at their edges: the words a worker and a researcher are given,
the matches a pass needs, whose last try a refusal speaks of, which draw a try answers, what a try
keeps, and when passing makes a worker trusted."""

import pytest
from django.utils import timezone

from crowd.access import Refusal
from crowd.models import DeviceSighting, Study, StudySession
from markets.models import ConnectedMarket, MarketConnection
from quality import qualification
from quality.models import QualificationAnswer, QualificationAttempt, QualificationTest
from quality.qualification import NOT_READY_MESSAGE, OTHER_TRY_MESSAGE, QualificationRefused
from tests.collection.writing_helpers import make_study
from tests.quality.qualification_helpers import answers, qualified_study, take_try

pytestmark = pytest.mark.django_db


def another_test(test: QualificationTest) -> QualificationTest:
    """A second qualified study of the same dataset, its test drawing from the same pool."""
    study = make_study(test.study.dataset, slug="other-qualified", access="qualified")
    other = QualificationTest.objects.create(
        study=study, max_attempts=test.max_attempts, items_per_try=test.items_per_try
    )
    other.items.set(test.items.all())
    return other


LEAD = "Thank you for taking the qualification test. Your answers did not reach this study's pass mark."


def test_a_pool_too_small_is_refused_in_words_that_name_its_size() -> None:
    assert qualification.pool_problem(8, 4) is None
    assert qualification.pool_problem(1, 4) == (
        "The pool holds 1 item; a try of 4 needs a pool of at least 8 (2 times the try), so that each try draws "
        "its own items and answers learnt on one participant id are not the next id's test. Add items or ask "
        "fewer per try."
    )
    assert qualification.pool_problem(2, 3) is not None
    assert qualification.pool_problem(2, 3).startswith("The pool holds 2 items; a try of 3 needs a pool of at least 6")  # type: ignore[union-attr]


def test_a_failed_try_says_how_many_tries_are_left_in_words() -> None:
    _study, test = qualified_study(max_attempts=3)
    assert qualification.failed_message(test) == f"{LEAD} You may take the test again: 3 tries left."
    test.max_attempts = 1
    assert qualification.failed_message(test) == f"{LEAD} You may take the test again: 1 try left."
    test.max_attempts = 0
    assert qualification.failed_message(test) == (
        f"{LEAD} You have no tries left, so we cannot offer you this study's tasks this time. Please return the "
        "study on the crowd platform; you will not be penalised, and we are grateful for your time."
    )


def test_a_failed_try_counts_the_tries_left_to_its_worker(make_worker) -> None:
    _study, test = qualified_study(max_attempts=3)
    result = take_try(test, make_worker(username="failing"), correct=0)
    assert qualification.failed_message(test, result.attempt) == f"{LEAD} You may take the test again: 2 tries left."


@pytest.mark.parametrize(
    "pass_mark, total, matches",
    [(0.75, 4, 3), (2 / 3, 3, 2), (1.0, 3, 3), (0.6, 5, 3), (0.0, 4, 0), (0.75, 0, 0)],
)
def test_a_pass_needs_the_fewest_matches_that_reach_the_mark(pass_mark, total, matches) -> None:
    _study, test = qualified_study(pass_mark=pass_mark)
    assert qualification.needed(test, total) == matches


def test_the_last_try_is_the_workers_own_at_this_test(make_worker) -> None:
    _study, test = qualified_study(max_attempts=3)
    other_test = another_test(test)
    mine = make_worker(username="mine")
    someone = make_worker(username="someone")
    DeviceSighting.objects.create(worker=mine, device="shared-browser")
    DeviceSighting.objects.create(worker=someone, device="shared-browser")
    own = take_try(test, mine, correct=0).attempt
    # Later tries: of an id seen in the same browser at this test, and of the worker at another test.
    take_try(test, someone, correct=0)
    take_try(other_test, mine, correct=0)
    assert qualification.last_attempt(test, mine) == own


def test_without_a_try_of_their_own_the_last_try_is_a_linked_ids_at_this_test(make_worker) -> None:
    _study, test = qualified_study(max_attempts=3)
    other_test = another_test(test)
    newcomer = make_worker(username="newcomer")
    linked_by_browser = make_worker(username="linked")
    stranger = make_worker(username="stranger")
    DeviceSighting.objects.create(worker=newcomer, device="their-browser")
    DeviceSighting.objects.create(worker=linked_by_browser, device="their-browser")
    # The linked id's try was sent from no browser the records know: it is theirs by the id.
    linked_try = take_try(test, linked_by_browser, correct=0).attempt
    take_try(test, stranger, correct=0)
    take_try(other_test, linked_by_browser, correct=0)
    assert qualification.last_attempt(test, newcomer) == linked_try
    assert qualification.last_attempt(test, make_worker(username="alone")) is None
    assert qualification.last_attempt(test, None) is None


def test_a_passed_worker_may_not_send_another_try(make_worker) -> None:
    _study, test = qualified_study(max_attempts=3)
    worker = make_worker(username="passed")
    assert take_try(test, worker, correct=4).passed
    draw = qualification.open_draw(test, worker)
    with pytest.raises(QualificationRefused) as refused:
        qualification.submit_attempt(test, worker, draw.token, answers(draw, 4))
    assert refused.value.message == "You have passed this test already."
    assert QualificationAttempt.objects.filter(worker=worker).count() == 1


def test_a_worker_without_tries_left_is_told_so(make_worker) -> None:
    _study, test = qualified_study(max_attempts=1)
    worker = make_worker(username="spent")
    take_try(test, worker, correct=0)
    draw = qualification.open_draw(test, worker)
    with pytest.raises(QualificationRefused) as refused:
        qualification.submit_attempt(test, worker, draw.token, answers(draw, 4))
    assert refused.value.message == "You have used every try this test allows."


def test_a_try_answers_only_the_open_draw_its_token_names_at_this_test(make_worker) -> None:
    _study, test = qualified_study(max_attempts=3)
    other_test = another_test(test)
    worker = make_worker(username="drawn")
    draw = qualification.open_draw(test, worker)
    elsewhere = qualification.open_draw(other_test, worker)
    for token, sent in (("an-old-page", answers(draw, 4)), (elsewhere.token, answers(elsewhere, 4))):
        with pytest.raises(QualificationRefused) as refused:
            qualification.submit_attempt(test, worker, token, sent)
        assert refused.value.message == OTHER_TRY_MESSAGE
    assert not QualificationAttempt.objects.exists()


def test_answers_for_pairs_not_on_the_page_are_refused_in_words(make_worker) -> None:
    _study, test = qualified_study()
    worker = make_worker(username="forger")
    draw = qualification.open_draw(test, worker)
    with pytest.raises(QualificationRefused) as refused:
        qualification.submit_attempt(test, worker, draw.token, {**answers(draw, 4), "not-an-item": "entailment"})
    assert refused.value.message == "Answers were sent for pairs that are not on this try's page; nothing was saved."
    del_one = dict(list(answers(draw, 4).items())[1:])
    with pytest.raises(QualificationRefused) as missing:
        qualification.submit_attempt(test, worker, draw.token, del_one)
    assert missing.value.message == "Please choose one of the three answers for every pair; nothing was saved yet."
    assert missing.value.missing == [next(iter(answers(draw, 4)))]


def test_a_draw_of_an_empty_pool_is_refused_in_words(make_worker) -> None:
    _study, test = qualified_study()
    worker = make_worker(username="early")
    test.items.clear()
    draw = qualification.open_draw(test, worker)
    with pytest.raises(QualificationRefused) as refused:
        qualification.submit_attempt(test, worker, draw.token, {})
    assert refused.value.message == "This test has no items yet; please come back later."


def test_a_try_keeps_its_answers_its_time_and_no_browser_when_none_was_named(make_worker) -> None:
    _study, test = qualified_study()
    worker = make_worker(username="kept")
    draw = qualification.open_draw(test, worker)
    sent = answers(draw, 3)
    before = timezone.now()
    attempt = qualification.submit_attempt(test, worker, draw.token, sent).attempt
    attempt.refresh_from_db()
    assert attempt.device == ""
    assert attempt.seconds is not None
    assert 0 <= attempt.seconds <= (timezone.now() - draw.drawn_at).total_seconds()
    assert attempt.seconds >= (before - draw.drawn_at).total_seconds()
    kept = dict(QualificationAnswer.objects.filter(attempt=attempt).values_list("reference__pk", "label"))
    by_reference = {item.reference_id: sent[item.token] for item in draw.items.all()}
    assert kept == by_reference


def test_passing_trusts_a_worker_where_the_market_confirms_each_participant(make_worker) -> None:
    study, test = qualified_study()
    assert not qualification.grants_trust(study)
    MarketConnection.objects.create(
        study=study,
        market=ConnectedMarket.PROLIFIC,
        market_study_id="60aa11bb22cc33dd44ee55ff",
        sealed_credentials="sealed",
        webhook_key="k-qualified",
    )
    assert qualification.grants_trust(study)
    worker = make_worker(username="confirmed")
    assert take_try(test, worker, correct=4).passed
    worker.refresh_from_db()
    assert worker.is_trusted


def test_a_worker_out_of_tries_is_thanked_for_their_time(make_worker) -> None:
    study, test = qualified_study(max_attempts=1)
    Study.objects.filter(pk=study.pk).update(access="qualified")
    worker = make_worker(username="thanked")
    take_try(test, worker, correct=0)
    refusal = qualification.admission_check(study, worker)
    assert refusal is not None
    assert refusal.title == "Thank you for your time"
    assert refusal.message == qualification.failed_message(test, qualification.last_attempt(test, worker))
    test.items.clear()
    assert qualification.admission_check(study, worker) == Refusal(NOT_READY_MESSAGE)


def test_a_pass_counts_only_at_its_own_test_and_for_its_own_worker(make_worker) -> None:
    _study, test = qualified_study()
    other_test = another_test(test)
    passer = make_worker(username="passer")
    assert take_try(other_test, passer, correct=4).passed
    assert not qualification.has_passed(test, passer)
    assert take_try(test, make_worker(username="someone-else"), correct=4).passed
    assert not qualification.has_passed(test, passer)
    assert take_try(test, passer, correct=4).passed
    assert qualification.has_passed(test, passer)


def test_the_ids_and_browsers_linked_to_a_worker_are_one_step_out(make_worker) -> None:
    study, test = qualified_study()
    me = make_worker(username="me")
    seen_with_me = make_worker(username="seen-with-me")
    session_mate = make_worker(username="session-mate")
    two_steps = make_worker(username="two-steps")
    DeviceSighting.objects.create(worker=me, device="sighted")
    DeviceSighting.objects.create(worker=seen_with_me, device="sighted")
    DeviceSighting.objects.create(worker=seen_with_me, device="their-other-browser")
    DeviceSighting.objects.create(worker=two_steps, device="their-other-browser")
    StudySession.objects.create(study=study, worker=me, external_session_id="s1", device="session-browser")
    StudySession.objects.create(study=study, worker=me, external_session_id="s2", device="")
    StudySession.objects.create(study=study, worker=session_mate, external_session_id="s3", device="session-browser")
    StudySession.objects.create(study=study, worker=two_steps, external_session_id="s4", device="")
    take_try(test, me, correct=0, device="try-browser")
    take_try(test, me, correct=0)  # from no browser the records know: links nobody by it
    workers, devices = qualification.linked(me)
    assert devices == {"sighted", "session-browser", "try-browser"}
    assert workers == {me.pk, seen_with_me.pk, session_mate.pk}
    assert qualification.linked(me, "named-now")[1] == devices | {"named-now"}
    assert qualification.linked(two_steps) == ({two_steps.pk, seen_with_me.pk}, {"their-other-browser"})


def test_tries_used_are_counted_at_this_test_only(make_worker) -> None:
    _study, test = qualified_study(max_attempts=3)
    other_test = another_test(test)
    worker = make_worker(username="counted")
    take_try(other_test, worker, correct=0)
    assert qualification.attempts_used(test, worker) == 0
    take_try(test, worker, correct=0)
    assert qualification.attempts_used(test, worker) == 1
    assert qualification.attempts_used(test, None) == 0


def test_a_new_draw_takes_items_this_id_was_not_shown_and_tops_up_from_those_it_was(make_worker) -> None:
    _study, test = qualified_study(max_attempts=3, items_per_try=3)
    worker = make_worker(username="three-tries")
    pool = set(test.items.values_list("pk", flat=True))
    shown: list[set[int]] = []
    for _ in range(3):
        draw = qualification.open_draw(test, worker)
        items = list(draw.items.order_by("position"))
        assert [item.position for item in items] == [1, 2, 3]
        shown.append({item.reference_id for item in items})
        qualification.submit_attempt(test, worker, draw.token, answers(draw, 0))
    first, second, third = shown
    assert len(first | second) == 6 and first | second <= pool
    # Two items of the pool were never shown: the third try has both, and one already seen.
    assert pool - first - second <= third and len(third) == 3 and len(third & (first | second)) == 1


def test_the_open_draw_is_the_one_of_this_test(make_worker) -> None:
    _study, test = qualified_study()
    other_test = another_test(test)
    worker = make_worker(username="two-tests")
    elsewhere = qualification.open_draw(other_test, worker)
    here = qualification.open_draw(test, worker)
    assert here.test == test and here != elsewhere
    assert qualification.open_draw(test, worker) == here


def test_items_seen_are_this_ids_or_this_browsers_at_this_test(make_worker) -> None:
    _study, test = qualified_study(items_per_try=4)
    other_test = another_test(test)
    worker = make_worker(username="seer")
    same_browser = make_worker(username="same-browser")
    no_browser = make_worker(username="no-browser")
    at_other_test = qualification.open_draw(other_test, worker)
    by_browser = qualification.open_draw(test, same_browser, device="the-browser")
    without_browser = qualification.open_draw(test, no_browser)

    def references(draw):
        return set(draw.items.values_list("reference_id", flat=True))

    assert qualification.seen_items(test, worker) == set()
    assert qualification.seen_items(test, worker, device="the-browser") == references(by_browser)
    assert qualification.seen_items(test, same_browser, device="another-browser") == references(by_browser)
    assert qualification.seen_items(test, no_browser) == references(without_browser)
    assert qualification.seen_items(other_test, worker) == references(at_other_test)
