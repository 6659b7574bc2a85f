"""A researcher previews a validation study and a writing study in a real browser (crowd.preview):
the banner on every task page, real items, the real checks' messages on submit, and nothing saved.
Served by a live server in its own transactions, so each submit's rollback is the outermost one, as
in production."""

import re

import pytest

from corpus.models import Label, Pair, ValidationLabel
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from crowd.preview import PREVIEW_NOT_SAVED
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.validation.validation_factories import make_dataset, make_pair
from validation.models import ValidationClaim

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BANNER = "nothing you do here is saved"
ENTAILMENT = "A boat departed early in the morning."
NEUTRAL = "The boat carried tourists to an island."
CONTRADICTION = "The boat never left the harbour."


def test_a_researcher_previews_a_validation_and_a_writing_study_and_nothing_is_saved(
    page, live_server, make_researcher
):
    dataset = make_dataset("preview-validation")
    pairs = [make_pair(dataset, label=Label.NEUTRAL) for _ in range(5)]
    Study.objects.create(
        slug="preview-validation",
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="VALID-CODE-5",
        access="closed",  # nobody on the list: the researcher previews it all the same
    )
    writing, genre = writing_setup(slug="preview-writing")
    (premise,) = add_premises(writing, genre, 1, split="dev")
    make_study(writing, slug="preview-writing", completion_code="WRITE-CODE-7")
    make_researcher("previewer", "preview-pass-1")
    page.goto(f"{live_server.url}/accounts/login/?next=/admin/crowd/study/")
    page.fill("#id_username", "previewer")
    page.fill("#id_password", "preview-pass-1")
    page.get_by_role("button", name="Log in").click()

    # Validation: from the study admin's Preview link, a batch of the study's pairs.
    page.locator('a[href="/study/preview-validation/preview/"]').first.click()
    page.get_by_role("button", name="Start the preview").click()
    page.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    assert BANNER in page.locator(".preview-banner").inner_text()
    fieldsets = page.locator("fieldset.validation-pair")
    assert fieldsets.count() == 5
    for index in range(5):
        fieldsets.nth(index).get_by_text("Might be correct").click()
    page.locator("#submit-batch").click()
    # The page after the submit (the batch page itself has no messages to wait past).
    page.locator(".messages", has_text=PREVIEW_NOT_SAVED).wait_for()
    messages = page.locator(".messages").inner_text()
    # The rolled-back view's "Saved" is not shown above "not saved".
    assert "Saved. Thank you!" not in messages and PREVIEW_NOT_SAVED in messages
    assert not ValidationLabel.objects.filter(position__gt=1).exists()
    assert all(pair.label_count == 1 for pair in Pair.objects.filter(pk__in=[p.pk for p in pairs]))
    assert not ValidationClaim.objects.filter(status__in=[ClaimStatus.OPEN, ClaimStatus.SUBMITTED]).exists()

    # Writing: a refusal as a participant gets it, then a "saved" submit that saves nothing.
    page.goto(f"{live_server.url}/study/preview-writing/preview/")
    page.get_by_role("button", name="Start the preview").click()
    page.wait_for_url(re.compile(r"/write/[0-9a-f-]+/$"))
    assert BANNER in page.locator(".preview-banner").inner_text()
    assert page.locator("#premise").inner_text() == premise.text
    family = genre.family
    page.get_by_label(family.entailment_prompt).fill(ENTAILMENT)
    page.get_by_label(family.neutral_prompt).fill(ENTAILMENT.lower())
    page.get_by_label(family.contradiction_prompt).fill(CONTRADICTION)
    page.locator("#submit-hypotheses").click()
    page.locator("#neutral-errors").wait_for()
    assert "same as your 'definitely correct' sentence" in page.locator("#neutral-errors").inner_text()
    page.get_by_label(family.neutral_prompt).fill(NEUTRAL)
    page.locator("#submit-hypotheses").click()
    page.locator(".messages", has_text=PREVIEW_NOT_SAVED).wait_for()
    messages = page.locator(".messages").inner_text()
    assert "Saved, thank you." not in messages and PREVIEW_NOT_SAVED in messages
    assert not Pair.objects.filter(dataset=writing).exists()
    premise.refresh_from_db()
    assert premise.writings_done == 0

    page.get_by_role("button", name="End preview").click()
    page.wait_for_url(re.compile(r"/admin/crowd/study/\d+/change/$"))
    assert page.locator(".preview-banner").count() == 0
    assert {session.tasks_done for session in StudySession.objects.all()} == {0}
    assert not StudySession.objects.filter(is_preview=False).exists()
