"""On a phone, a refused submit shows its error where the worker is looking and gives the keyboard
focus to what must be fixed: the page comes back at the top, the error used to be far below, and
focus was on <body>."""

import re

import pytest

from corpus.models import Label, Pair
from crowd.models import Study, TaskKind
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


@pytest.fixture
def phone(chromium_browser):
    context = chromium_browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def in_viewport(page, selector):
    return page.evaluate(
        """(selector) => { const box = document.querySelector(selector).getBoundingClientRect();
                           return box.bottom > 0 && box.top < window.innerHeight; }""",
        selector,
    )


def test_a_refused_writing_submit_scrolls_to_the_field_and_focuses_it(phone, live_server):
    dataset, genre = writing_setup(slug="phone-writing")
    add_premises(dataset, genre, 1, split="dev")
    study = make_study(dataset, slug="phone-writing", tasks_per_batch=1)
    phone.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d99&STUDY_ID=60aa11bb22cc33dd44ee55ff&SESSION_ID=phone-1"
    )
    family = genre.family
    phone.get_by_label(family.entailment_prompt).fill("A boat departed early in the morning.")
    phone.get_by_label(family.neutral_prompt).fill("a boat departed early in the morning.")  # a copy: refused
    phone.get_by_label(family.contradiction_prompt).fill("The boat never left the harbour.")
    phone.locator("#submit-hypotheses").click()
    phone.locator("#neutral-errors").wait_for()
    # The page's script moves the focus once it has loaded, which may be after the error is shown.
    phone.wait_for_function("document.activeElement && document.activeElement.name === 'neutral'", timeout=5000)

    assert not Pair.objects.exists()
    assert phone.evaluate("document.activeElement.name") == "neutral"
    assert in_viewport(phone, "#neutral-errors")
    # The report box has a label of its own (a <summary> is not one).
    assert phone.get_by_label("Report a problem with this line (optional)").count() == 1


def test_a_refused_validation_batch_scrolls_to_its_error_and_focuses_it(phone, live_server):
    dataset = make_dataset("phone-validation")
    for _ in range(6):
        make_pair(dataset, label=Label.NEUTRAL)
    study = Study.objects.create(
        slug="phone-validation",
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=1,
        completion_code="PHONE-1",
    )
    phone.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=7a1b2c3d4e5f6a7b8c9d0e99&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=phone-2"
    )
    phone.wait_for_url(re.compile(r"/validate/batch/[0-9a-f-]+/$"))
    # Sent with no label chosen, past the page's own check, as a stale or scripted page would.
    phone.evaluate("document.getElementById('validation-batch').submit()")
    phone.locator("#batch-error").wait_for()

    assert phone.evaluate("document.activeElement.id") == "batch-error"
    assert in_viewport(phone, "#batch-error")
