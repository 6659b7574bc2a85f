"""A study's information sheet, read and answered before the first task."""

import pytest
from django.urls import reverse

from consent import services
from consent.models import ConsentAnswer, ConsentDecision, InformationSheet
from consent.rendering import sheet_html
from crowd.models import StudySession
from validation.models import ValidationClaim

from .helpers import STATEMENTS, agree, arrive, validation_study

pytestmark = pytest.mark.django_db


def consent_url(study):
    return reverse("consent:sheet", args=[study.slug])


def test_the_study_link_leads_to_the_sheet_before_any_task(client):
    study = validation_study()
    session = arrive(client, study)
    task = client.get(reverse("validation:next"))
    assert task.status_code == 302 and task["Location"] == consent_url(study)
    assert not ValidationClaim.objects.exists()
    page = client.get(consent_url(study)).content.decode()
    assert "We study how people judge sentences" in page and STATEMENTS[0] in page
    assert 'id="consent-agree"' in page and "csrfmiddlewaretoken" in page
    assert not ConsentDecision.objects.filter(study_session=session).exists()


def test_agreeing_records_the_version_and_opens_the_tasks(client):
    study = validation_study()
    session = arrive(client, study)
    response = agree(client, study)
    assert response.status_code == 302 and response["Location"] == reverse("validation:next")
    decision = ConsentDecision.objects.get(study_session=session)
    assert (decision.answer, decision.sheet.version) == (ConsentAnswer.AGREED, 1) and decision.decided_at
    task = client.get(reverse("validation:next"))
    assert task.status_code == 302 and "/validate/batch/" in task["Location"]
    assert ValidationClaim.objects.filter(study_session=session).exists()


def test_a_get_never_agrees(client):
    study = validation_study()
    session = arrive(client, study)
    client.get(consent_url(study), {"answer": "agree", "version": "1"})
    assert not ConsentDecision.objects.filter(study_session=session).exists()


def test_an_edit_is_a_new_version_that_later_arrivals_read_and_earlier_ones_keep(client, django_user_model):
    study = validation_study()
    first = arrive(client, study, "aaaaaaaaaaaaaaaaaaaaaaaa")
    agree(client, study)
    services.save_information_sheet(study, "## A new purpose\n\nWe changed the study.", STATEMENTS)
    assert list(InformationSheet.objects.filter(study=study).values_list("version", flat=True)) == [2, 1]
    assert ConsentDecision.objects.get(study_session=first).sheet.version == 1
    # The one who agreed reads the version they agreed to, and keeps their tasks.
    assert "We study how people judge" in client.get(consent_url(study)).content.decode()
    assert "/validate/batch/" in client.get(reverse("validation:next"))["Location"]
    other = client_class_for(client)
    later = arrive(other, study, "bbbbbbbbbbbbbbbbbbbbbbbb")
    assert "We changed the study" in other.get(consent_url(study)).content.decode()
    agree(other, study, version=2)
    assert ConsentDecision.objects.get(study_session=later).sheet.version == 2


def client_class_for(client):
    return type(client)()


def test_agreeing_to_a_version_edited_meanwhile_is_refused_and_saves_nothing(client):
    study = validation_study()
    session = arrive(client, study)
    client.get(consent_url(study))
    services.save_information_sheet(study, "## Changed while read", STATEMENTS)
    response = agree(client, study, version=1)
    assert response.status_code == 409 and "Changed while read" in response.content.decode()
    assert not ConsentDecision.objects.filter(study_session=session).exists()


def test_unchanged_text_makes_no_new_version():
    study = validation_study()
    sheet = InformationSheet.objects.get(study=study)
    assert services.save_information_sheet(study, f"  {sheet.text}\n", [f" {s} " for s in STATEMENTS]) is None
    assert InformationSheet.objects.filter(study=study).count() == 1


@pytest.mark.parametrize("posted", [{}, {"answer": "yes", "version": "1"}, {"answer": "agree", "version": "²"}])
def test_a_malformed_answer_is_refused_with_a_message(client, posted):
    study = validation_study()
    session = arrive(client, study)
    response = client.post(consent_url(study), posted)
    assert response.status_code == 400 and "one of the two buttons" in response.content.decode()
    assert not ConsentDecision.objects.filter(study_session=session).exists()


def test_declining_tells_how_to_return_and_no_door_gives_a_task(client):
    study = validation_study(no_consent_code="C1NOCONSENT")
    session = arrive(client, study)
    response = client.post(consent_url(study), {"answer": "decline", "version": "1"})
    declined = reverse("consent:declined", args=[study.slug])
    assert response["Location"] == declined
    page = client.get(declined).content.decode()
    assert "C1NOCONSENT" in page and "Prolific" in page
    for door in ("validation:next", "validation:grammaticality", "validation:mpe-next", "writing_next"):
        answer = client.get(reverse(door))
        assert answer.status_code == 302 and answer["Location"] == declined, door
    # A second answer does not turn a decline into consent.
    agree(client, study)
    assert ConsentDecision.objects.get(study_session=session).answer == ConsentAnswer.DECLINED
    assert not ValidationClaim.objects.exists()


def test_mturk_decline_says_return_the_hit(client):
    study = validation_study()
    client.get(
        reverse("study_entry", args=[study.slug]),
        {"workerId": "A1B2C3D4E5F6G7", "assignmentId": "3ABCDEF123456789", "hitId": "3HITID0000000001"},
    )
    client.post(consent_url(study), {"answer": "decline", "version": "1"})
    page = client.get(reverse("consent:declined", args=[study.slug])).content.decode()
    assert "return the HIT" in page


def test_the_qualification_test_asks_for_consent_first(client):
    study = validation_study(access="qualified")
    arrive(client, study)
    response = client.get(reverse("qualification", args=[study.slug]))
    assert response.status_code == 302 and response["Location"] == consent_url(study)


def test_a_study_without_a_sheet_asks_for_no_consent(client):
    study = validation_study(sheet=False)
    arrive(client, study)
    assert "/validate/batch/" in client.get(reverse("validation:next"))["Location"]


def test_a_local_worker_outside_a_study_needs_no_consent(client, make_worker):
    validation_study()
    worker = make_worker()
    client.force_login(worker.user)
    response = client.get(reverse("validation:next"))
    assert response.status_code == 302 and "/validate/batch/" in response["Location"]


def test_the_sheet_shows_raw_html_as_text_and_drops_script_links():
    html = str(sheet_html("<script>alert(1)</script> [x](javascript:alert(1)) **bold** [ok](https://example.org)"))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "javascript:" not in html.replace("[x](javascript:alert(1))", "")
    assert 'href="javascript' not in html and "<strong>bold</strong>" in html and 'href="https://example.org"' in html


def test_a_preview_reads_the_sheet_and_agrees_without_saving(client, researcher):
    study = validation_study()
    client.force_login(researcher)
    client.post(reverse("study_preview_start", args=[study.slug]))
    response = client.get(reverse("validation:next"))
    assert response["Location"] == consent_url(study)
    assert "We study how people judge" in client.get(consent_url(study)).content.decode()
    agree(client, study)
    assert not ConsentDecision.objects.exists()
    assert "/validate/batch/" in client.get(reverse("validation:next"))["Location"]
    assert StudySession.objects.get(is_preview=True)
