"""The information sheet on New study and the study's settings, and the pre-launch check's word on it."""

import html

import pytest
from django.urls import reverse

from audit.models import AuditEntry
from consent.defaults import DEFAULT_SHEET, DEFAULT_STATEMENTS
from consent.models import InformationSheet
from crowd.models import Study
from dashboard.queries.prelaunch import WARN, launch_check
from tests import factories
from tests.dashboard.test_study_setup import setup_post

from .helpers import validation_study

pytestmark = pytest.mark.django_db

OUR_SHEET = "## Purpose\n\nWe study how people write. Contact: lab@example.org."


def warnings_of(study):
    return [finding.what for finding in launch_check(study) if finding.level == WARN]


def test_new_study_offers_the_template_to_edit(client, researcher):
    factories.dataset("ours")
    client.force_login(researcher)
    page = html.unescape(client.get(reverse("dashboard:study_new")).content.decode())
    assert "## What we record" in page and "typing evidence" in page and DEFAULT_STATEMENTS[0] in page


def test_the_sheet_is_saved_with_the_study_and_an_edit_is_a_new_version(client, researcher):
    dataset = factories.dataset("ours")
    client.force_login(researcher)
    sheet = {"information_sheet": OUR_SHEET, "consent_statements": "I am 18 or older.\n\nI agree.\n"}
    client.post(reverse("dashboard:study_new"), setup_post(dataset, no_consent_code="NOCON1", **sheet))
    study = Study.objects.get(slug="our-writing")
    first = InformationSheet.objects.get(study=study)
    assert (first.version, first.statements, study.no_consent_code) == (1, ["I am 18 or older.", "I agree."], "NOCON1")
    settings_url = reverse("dashboard:study_settings", args=[study.slug])
    assert OUR_SHEET.splitlines()[0] in html.unescape(client.get(settings_url).content.decode())
    # Saving the settings with the same sheet makes no version; an edited one does.
    client.post(settings_url, setup_post(dataset, claim_minutes="20", **sheet))
    assert InformationSheet.objects.filter(study=study).count() == 1
    client.post(settings_url, setup_post(dataset, **{**sheet, "information_sheet": OUR_SHEET + " We pay well."}))
    assert list(InformationSheet.objects.filter(study=study).values_list("version", flat=True)) == [2, 1]
    assert AuditEntry.objects.filter(action="study.information_sheet").count() == 2


@pytest.mark.parametrize(
    ("sheet", "statements", "field", "says"),
    [
        (OUR_SHEET, "", "consent_statements", "at least one statement"),
        ("", "I agree.", "information_sheet", "Write the information sheet"),
    ],
)
def test_a_sheet_without_statements_or_statements_without_a_sheet_are_refused(
    client, researcher, sheet, statements, field, says
):
    dataset = factories.dataset("ours")
    client.force_login(researcher)
    posted = setup_post(dataset, information_sheet=sheet, consent_statements=statements)
    response = client.post(reverse("dashboard:study_new"), posted)
    assert response.status_code == 200 and says in html.unescape(response.content.decode())
    assert not Study.objects.exists() and not InformationSheet.objects.exists()


def test_a_given_sheet_cannot_be_removed(client, researcher):
    dataset = factories.dataset("ours")
    client.force_login(researcher)
    client.post(
        reverse("dashboard:study_new"), setup_post(dataset, information_sheet=OUR_SHEET, consent_statements="I agree.")
    )
    study = Study.objects.get(slug="our-writing")
    response = client.post(
        reverse("dashboard:study_settings", args=[study.slug]),
        setup_post(dataset, information_sheet="", consent_statements="", claim_minutes="25"),
    )
    assert "can be edited (a new version), not removed" in html.unescape(response.content.decode())
    study.refresh_from_db()
    assert study.claim_minutes != 25 and InformationSheet.objects.filter(study=study).count() == 1


def test_the_check_warns_of_no_sheet_and_of_the_templates_unfilled_places():
    study = validation_study(sheet=False)
    assert any("No information sheet" in what for what in warnings_of(study))
    from consent import services

    services.save_information_sheet(study, DEFAULT_SHEET, DEFAULT_STATEMENTS)
    warned = warnings_of(study)
    assert not any("No information sheet" in what for what in warned)
    assert any("template's places to fill in" in what for what in warned)
    services.save_information_sheet(
        study, "## Purpose\n\nAll filled in. See [our page](https://example.org).", ["I agree."]
    )
    assert not any("information sheet" in what for what in warnings_of(study))
