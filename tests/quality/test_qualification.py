"""Qualification and study access: a qualified study admits a worker after they
pass its test; failing is polite and retakes are limited; a closed study admits only its list."""

import pytest
from django.urls import reverse

from collection.models import WritingClaim
from corpus.models import Market, Worker
from crowd.models import Study, StudyAccess, StudySession
from quality import qualification
from quality.models import QualificationAnswer, QualificationAttempt
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.quality.qualification_helpers import (
    PROLIFIC,
    answers,
    form_data,
    qualified_study,
    take_try,
    worker_of_prolific_id,
)


def entry(study):
    return reverse("study_entry", args=[study.slug])


def post_answers(client, study, test, correct):
    return client.post(reverse("qualification", args=[study.slug]), form_data(client, study, correct))


@pytest.fixture
def study_and_test(db):
    return qualified_study()


def test_arrival_at_a_qualified_study_goes_to_the_test_first(client, study_and_test):
    study, _test = study_and_test
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 302 and response["Location"] == reverse("qualification", args=[study.slug])
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert page.content.decode().count('class="card validation-pair') == 4


def test_the_task_pages_send_an_unqualified_worker_to_the_test(client, study_and_test):
    study, _ = study_and_test
    client.get(entry(study), PROLIFIC)
    response = client.get(reverse("writing_next"))
    assert response.status_code == 302 and response["Location"] == reverse("qualification", args=[study.slug])
    assert not WritingClaim.objects.exists()


def test_passing_admits_the_worker_and_joins_the_trusted_pool(client, study_and_test):
    study, test = study_and_test
    client.get(entry(study), PROLIFIC)
    # Trust follows verified ids only (quality.qualification.grants_trust): the study's links are signed.
    Study.objects.filter(pk=study.pk).update(require_signed_link=True)
    response = post_answers(client, study, test, correct=3)  # 3 of 4 = 0.75, the pass mark
    assert response.status_code == 302 and response["Location"] == reverse("writing_next")
    worker = worker_of_prolific_id()
    attempt = QualificationAttempt.objects.get()
    assert (attempt.worker, attempt.number, attempt.correct, attempt.total, attempt.passed) == (worker, 1, 3, 4, True)
    assert QualificationAnswer.objects.filter(attempt=attempt).count() == 4
    assert QualificationAnswer.objects.filter(attempt=attempt, is_correct=True).count() == 3
    assert worker.is_trusted
    assert client.get(reverse("writing_next")).status_code == 302
    assert WritingClaim.objects.filter(worker=worker).exists()
    # Coming back later: straight to the tasks, and the test page sends them on.
    again = {**PROLIFIC, "SESSION_ID": "sess-q2", "sig": Study.objects.get(pk=study.pk).link_signature()}
    assert client.get(entry(study), again)["Location"] == reverse("writing_next")


def test_failing_is_polite_and_retakes_are_limited(client, study_and_test):
    study, test = study_and_test
    client.get(entry(study), PROLIFIC)
    first = post_answers(client, study, test, correct=2)
    assert first.status_code == 302  # back to the test, with a message
    page = client.get(first["Location"]).content.decode()
    assert "Thank you for taking the qualification test" in page and "1 try left" in page
    second = post_answers(client, study, test, correct=1)
    assert second.status_code == 200
    text = second.content.decode()
    assert "no tries left" in text and "you will not be penalised" in text
    assert QualificationAttempt.objects.count() == 2 and not QualificationAttempt.objects.filter(passed=True).exists()
    # A third try is refused and saves nothing, through the page or the service.
    assert client.get(reverse("qualification", args=[study.slug])).status_code == 403
    third = client.post(reverse("qualification", args=[study.slug]), {"try": "anything"})
    assert third.status_code == 403
    with pytest.raises(qualification.QualificationRefused):
        take_try(test, worker_of_prolific_id(), correct=4)
    assert QualificationAttempt.objects.count() == 2
    # The study stays closed to them, politely, from the link and from the task pages.
    again = client.get(entry(study), {**PROLIFIC, "SESSION_ID": "sess-q3"})
    assert again.status_code == 403 and "no tries left" in again.content.decode()
    assert client.get(reverse("writing_next")).status_code == 403
    assert not worker_of_prolific_id().is_trusted


def test_an_incomplete_try_saves_nothing_and_names_the_missing_pairs(client, study_and_test):
    study, _test = study_and_test
    client.get(entry(study), PROLIFIC)
    data = dict(list(form_data(client, study, correct=4).items())[:4])  # the try field and three answers
    response = client.post(reverse("qualification", args=[study.slug]), data)
    assert response.status_code == 400
    assert "every pair" in response.content.decode()
    assert response.content.decode().count("validation-pair missing") == 1
    assert not QualificationAttempt.objects.exists()


def test_answers_for_pairs_outside_the_test_are_refused(study_and_test, make_worker):
    _, test = study_and_test
    worker = make_worker()
    draw = qualification.open_draw(test, worker)
    crafted = {**answers(draw, 4), "not-a-token-of-this-try": "entailment"}
    with pytest.raises(qualification.QualificationRefused):
        qualification.submit_attempt(test, worker, draw.token, crafted)
    assert not QualificationAttempt.objects.exists()


def test_a_qualified_study_without_a_test_admits_nobody(client, db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    study = make_study(dataset, access=StudyAccess.QUALIFIED)
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 403 and "not ready yet" in response.content.decode()


def test_the_test_page_needs_the_studys_visit(client, study_and_test, make_worker):
    study, _ = study_and_test
    client.force_login(make_worker().user)
    assert client.get(reverse("qualification", args=[study.slug])).status_code == 400


# --- closed studies ---------------------------------------------------------------------------


def test_a_closed_study_admits_only_its_list(client, db, django_user_model):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    study = make_study(dataset, access=StudyAccess.CLOSED)
    stranger = client.get(entry(study), PROLIFIC)
    assert stranger.status_code == 403
    assert "invited participants" in stranger.content.decode()
    assert not StudySession.objects.exists() and not Worker.objects.exists()  # nothing left behind
    invited_user = django_user_model.objects.create(username="invited")
    invited = Worker.objects.create(user=invited_user, market=Market.PROLIFIC, external_id="INVITED0001")
    study.allowed_workers.add(invited)
    response = client.get(entry(study), {**PROLIFIC, "PROLIFIC_PID": "INVITED0001"})
    assert response.status_code == 302 and response["Location"] == reverse("writing_next")
    assert StudySession.objects.get().worker == invited
    # Taken off the list: the task pages refuse the open visit too.
    study.allowed_workers.remove(invited)
    assert client.get(reverse("writing_next")).status_code == 403


def test_researchers_manage_tests_in_the_admin_and_tries_are_read_only(client, study_and_test, researcher):
    _study, test = study_and_test
    take_try(
        test,
        Worker.objects.create(
            user=type(researcher).objects.create(username="tried"), market=Market.PROLIFIC, external_id="TRIED01"
        ),
        correct=2,
    )
    client.force_login(researcher)
    for name in ("qualificationtest_changelist", "qualificationtest_add", "qualificationattempt_changelist"):
        assert client.get(reverse(f"admin:quality_{name}")).status_code == 200, name
    page = client.get(reverse("admin:quality_qualificationtest_change", args=[test.pk])).content.decode()
    assert 'name="pass_mark"' in page and 'name="items"' in page
    attempt = QualificationAttempt.objects.get()
    attempt_page = client.get(reverse("admin:quality_qualificationattempt_change", args=[attempt.pk]))
    assert attempt_page.status_code == 200 and 'name="correct"' not in attempt_page.content.decode()


def test_a_qualified_validation_study_gates_the_validation_task_too(client, db):
    from crowd.models import TaskKind

    study, test = qualified_study(task_kind=TaskKind.VALIDATION, slug="qualified-validation")
    assert client.get(entry(study), PROLIFIC)["Location"] == reverse("qualification", args=[study.slug])
    response = client.get(reverse("validation:next"))
    assert response.status_code == 302 and response["Location"] == reverse("qualification", args=[study.slug])
    passed = post_answers(client, study, test, correct=4)
    assert passed["Location"] == reverse("validation:next")
