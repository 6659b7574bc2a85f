"""A qualified study with a four-item test (expected labels: E, N, C, E)."""

from corpus.models import Worker
from crowd.models import StudyAccess, TaskKind
from quality.models import QualificationTest, ReferenceLabel
from tests import factories
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

EXPECTED = ["entailment", "neutral", "contradiction", "entailment"]
WRONG = {"entailment": "contradiction", "neutral": "entailment", "contradiction": "neutral"}
PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc33dd44ee55ff", "SESSION_ID": "sess-q1"}


def qualified_study(pass_mark=0.75, max_attempts=2, task_kind=TaskKind.WRITING, slug="qualified"):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 5)
    study = make_study(dataset, slug=slug, tasks_per_batch=2, access=StudyAccess.QUALIFIED, task_kind=task_kind)
    test = QualificationTest.objects.create(study=study, pass_mark=pass_mark, max_attempts=max_attempts)
    reference_set = factories.dataset("reference-items")
    for label in EXPECTED:
        premise = factories.premise(reference_set, factories.genre("fiction"))
        pair = factories.pair(reference_set, premise, [label])
        test.items.add(ReferenceLabel.objects.create(pair=pair, label=label))
    return study, test


def answers(test, correct):
    """{pair pk: label}: the first `correct` items answered as expected, the rest wrongly."""
    items = list(test.items.order_by("pk"))
    return {item.pair_id: item.label if index < correct else WRONG[item.label] for index, item in enumerate(items)}


def worker_of_prolific_id():
    return Worker.objects.get(external_id=PROLIFIC["PROLIFIC_PID"])
