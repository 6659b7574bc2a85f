"""A qualified study whose test draws four items per try from a pool of eight."""

import re

from django.urls import reverse

from corpus.models import Worker
from crowd.models import StudyAccess, TaskKind
from quality import qualification
from quality.models import QualificationDraw, QualificationTest, ReferenceLabel
from tests import factories
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

POOL = ["entailment", "neutral", "contradiction", "entailment", "neutral", "contradiction", "entailment", "neutral"]
TRY_SIZE = 4
WRONG = {"entailment": "contradiction", "neutral": "entailment", "contradiction": "neutral"}
PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc33dd44ee55ff", "SESSION_ID": "sess-q1"}
TRY_TOKEN = re.compile(r'<input type="hidden" name="try" value="([^"]+)"')


def qualified_study(
    pass_mark=0.75, max_attempts=2, task_kind=TaskKind.WRITING, slug="qualified", pool=POOL, items_per_try=TRY_SIZE
):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 5)
    study = make_study(dataset, slug=slug, tasks_per_batch=2, access=StudyAccess.QUALIFIED, task_kind=task_kind)
    test = QualificationTest.objects.create(
        study=study, pass_mark=pass_mark, max_attempts=max_attempts, items_per_try=items_per_try
    )
    reference_set = factories.dataset("reference-items")
    for label in pool:
        premise = factories.premise(reference_set, factories.genre("fiction"))
        pair = factories.pair(reference_set, premise, [label])
        test.items.add(ReferenceLabel.objects.create(pair=pair, label=label))
    return study, test


def answers(draw, correct):
    """{item token: label} for a draw: its first `correct` items answered as expected, the rest wrongly."""
    items = list(draw.items.select_related("reference").order_by("position"))
    return {
        item.token: item.reference.label if index < correct else WRONG[item.reference.label]
        for index, item in enumerate(items)
    }


def take_try(test, worker, correct, device=""):
    """One try through the service: the worker's open draw answered with `correct` matches."""
    draw = qualification.open_draw(test, worker, device)
    return qualification.submit_attempt(test, worker, draw.token, answers(draw, correct), device=device)


def draw_on_page(page_html):
    """The draw whose items a test page shows (read from its form's try field)."""
    found = TRY_TOKEN.search(page_html)
    assert found, "the page has no try field"
    return QualificationDraw.objects.get(token=found.group(1))


def form_data(client, study, correct):
    """What the test page's form sends with `correct` matches: the page is read first, as a browser does."""
    draw = draw_on_page(client.get(reverse("qualification", args=[study.slug])).content.decode())
    return {"try": draw.token, **{f"answer-{token}": label for token, label in answers(draw, correct).items()}}


def worker_of_prolific_id():
    return Worker.objects.get(external_id=PROLIFIC["PROLIFIC_PID"])
