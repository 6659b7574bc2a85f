"""Tasks that count: a writing batch completes only with written tasks, problem
reports are capped and held only on independent reports, hypotheses must be real words, and a
visit is spent on its own study's kind of task."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from collection import services, writing_claims
from collection.models import PremiseReport, WritingClaim
from corpus.models import Pair, Premise, PremiseStatus
from crowd.models import StudySession, TaskKind
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

PROLIFIC = {
    "PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e",
    "STUDY_ID": "60aa11bb22cc33dd44ee55ff",
    "SESSION_ID": "sess-001",
}
GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture
def setup(db):
    return writing_setup()


def arrive(client, study, **ids):
    response = client.get(reverse("study_entry", args=[study.slug]), {**PROLIFIC, **ids})
    assert response.status_code == 302
    return StudySession.objects.get(study=study, external_session_id={**PROLIFIC, **ids}["SESSION_ID"])


def open_task(client):
    response = client.get(reverse("writing_next"))
    assert response.status_code == 302, response.content[:500]
    return response["Location"]


# --- the attacks ----------------------------------------------------------------------


def test_three_report_only_submits_do_not_earn_the_completion_code(client, setup):
    dataset, genre = setup
    add_premises(dataset, genre, 10)
    study = make_study(dataset, tasks_per_batch=3, max_reports_per_batch=5)
    session = arrive(client, study)
    for number in range(3):
        response = client.post(open_task(client), {"problem_report": f"Report {number}: the line is broken."})
        assert response.status_code == 302
    session.refresh_from_db()
    assert PremiseReport.objects.count() == 3
    assert session.tasks_done == 0 and not session.is_complete and session.completion_code == ""
    page = client.get(reverse("writing_next"), follow=True).content.decode()
    assert study.completion_code not in page
    # Written tasks do count.
    for _ in range(3):
        client.post(open_task(client), GOOD)
    session.refresh_from_db()
    assert session.tasks_done == 3 and session.is_complete


def test_one_account_cannot_drain_premises_into_held(client, setup):
    dataset, genre = setup
    add_premises(dataset, genre, 20)
    study = make_study(dataset, tasks_per_batch=20)
    arrive(client, study)
    refused = 0
    for number in range(20):
        url = open_task(client)
        response = client.post(url, {"problem_report": f"Report {number}: nonsense line."})
        if response.url == url:  # refused: back to the same task, shown by a GET
            refused += 1
            assert "the most a batch takes" in client.get(url).content.decode()
            break
    assert PremiseReport.objects.count() == 2  # the default cap per batch
    assert refused == 1
    assert not Premise.objects.filter(status=PremiseStatus.HELD).exists()  # one reporter holds nothing


# --- reports ----------------------------------------------------------------------------------


def test_a_report_alone_releases_the_premise_to_others_and_offers_another(setup, make_worker):
    dataset, genre = setup
    first, second = add_premises(dataset, genre, 2)
    worker, other = make_worker(), make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    services.submit_hypotheses(worker, claim.token, "", "", "", problem_report="Not a sentence.")
    assert (
        present(writing_claims.claim_next_premise(worker, dataset=dataset)).premise == second
    )  # never the reported one again
    assert present(writing_claims.claim_next_premise(other, dataset=dataset)).premise == first  # back in the pool


def test_a_premise_is_held_after_the_configured_number_of_distinct_reporters(setup, make_worker):
    dataset, genre = setup
    dataset.writings_per_premise = 5
    dataset.save()
    (premise,) = add_premises(dataset, genre, 1)
    study = make_study(dataset, reports_to_hold_premise=3)
    for number in range(3):
        premise.refresh_from_db()
        assert premise.status == PremiseStatus.AVAILABLE
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s{number}")
        claim = present(writing_claims.claim_next_premise(worker, study_session=session))
        services.submit_hypotheses(worker, claim.token, "", "", "", problem_report="Garbled text here.")
    premise.refresh_from_db()
    assert premise.status == PremiseStatus.HELD


def test_the_report_cap_is_per_batch_and_the_page_says_why(client, setup):
    dataset, genre = setup
    add_premises(dataset, genre, 6)
    study = make_study(dataset, tasks_per_batch=5, max_reports_per_batch=1)
    arrive(client, study)
    client.post(open_task(client), {"problem_report": "The line is garbled."})
    page = client.get(open_task(client)).content.decode()
    assert 'id="report-refused"' in page and "the most a batch takes" in page
    assert (
        'name="problem_report"' in page
        and "disabled"
        in page.split('name="problem_report"')[0].rsplit("<", 1)[1]
        + page.split('name="problem_report"')[1].split(">", 1)[0]
    )
    # A crafted POST past the disabled box is refused too, and nothing is saved.
    url = open_task(client)
    assert client.post(url, {"problem_report": "Another broken line."}).url == url  # refused: the same task again
    assert PremiseReport.objects.count() == 1
    # A new visit (another SESSION_ID) starts a new batch with its own allowance.
    arrive(client, study, SESSION_ID="sess-002")
    url = open_task(client)
    assert client.post(url, {"problem_report": "This line is not English."}).url != url
    assert PremiseReport.objects.count() == 2


def test_reports_have_a_length_limit_and_need_words(setup, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    for report, message in [("x" * 501, "under 500 characters"), ("?!", "in words")]:
        with pytest.raises(ValidationError) as raised:
            services.submit_hypotheses(worker, claim.token, "", "", "", problem_report=report)
        assert message in raised.value.message_dict["problem_report"][0]
    assert not PremiseReport.objects.exists()
    assert WritingClaim.objects.get().status == "open"


# --- hypotheses must be real words ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ("\u200b\u200b\u200b", "Please write a sentence here."),  # zero-width spaces only
        ("\u3164 \u3164 \u2800", "Please write a sentence here."),  # blank-looking letters
        ("a\u200b", "in words"),  # one word character after removing the invisible one
        ("... !!! ???", "in words"),
        ("Boat left.", "at least 3 words"),
        ("12 34 56", "at least 3 words"),  # numbers are not words
    ],
)
def test_hypotheses_without_real_words_are_refused(setup, make_worker, text, message):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    with pytest.raises(ValidationError) as raised:
        services.submit_hypotheses(worker, claim.token, **{**GOOD, "neutral": text})
    assert message in raised.value.message_dict["neutral"][0]
    assert not Pair.objects.exists()


def test_the_minimum_word_count_is_the_studys(setup, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    worker = make_worker()
    session = StudySession.objects.create(
        study=make_study(dataset, min_hypothesis_words=8), worker=worker, external_session_id="s1"
    )
    claim = present(writing_claims.claim_next_premise(worker, study_session=session))
    with pytest.raises(ValidationError) as raised:
        services.submit_hypotheses(worker, claim.token, **GOOD)
    assert "at least 8 words" in raised.value.message_dict["entailment"][0]


def test_invisible_characters_are_removed_from_saved_hypotheses(setup, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    services.submit_hypotheses(
        worker, claim.token, **{**GOOD, "neutral": "The boat\u200b carried\u0007 tourists\u00ad away."}
    )
    assert Pair.objects.get(author_label="neutral").hypothesis == "The boat carried tourists away."


def test_the_form_shows_length_limits_for_the_live_counter(client, setup, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    worker = make_worker()
    client.force_login(worker.user)
    page = client.get(open_task(client)).content.decode()
    assert page.count('data-max-chars="500"') == 4  # three hypotheses and the report
    assert 'maxlength="500"' in page
    assert "js/char_counter.js" in page


# --- a visit is spent on its own study's kind of task ----------------------------------------------


def test_a_writing_participant_cannot_take_validation_tasks(client, setup):
    dataset, genre = setup
    add_premises(dataset, genre, 2)
    study = make_study(dataset)
    arrive(client, study)
    response = client.get(reverse("validation:next"))
    assert response.status_code == 403
    assert "for writing sentences" in response.content.decode()


def test_a_validation_participant_cannot_take_writing_tasks(client, setup):
    dataset, genre = setup
    add_premises(dataset, genre, 2)
    study = make_study(dataset, task_kind=TaskKind.VALIDATION)
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    response = client.get(reverse("writing_next"))
    assert response.status_code == 403
    assert not WritingClaim.objects.exists()
