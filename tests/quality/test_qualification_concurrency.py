"""Tries sent at once (two tabs, a double click, a script) never give a worker more tries than
the test allows, and a pass is recorded once."""

import pytest

from corpus.models import Worker
from crowd.models import Study
from quality import qualification
from quality.models import QualificationAnswer, QualificationAttempt
from tests.collection.test_writing_concurrency import at_once, new_workers
from tests.quality.qualification_helpers import qualified_study, take_try

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_eight_tries_at_once_with_two_allowed_save_at_most_two():
    """How many of the eight are saved depends on timing (a try drawn before the first save answers
    a draw that is gone: refused, nothing saved); never more than the two allowed, each whole."""
    _, test = qualified_study(max_attempts=2)
    (worker,) = new_workers(1, "racer")
    results = at_once([lambda: take_try(test, worker, 1) for _ in range(8)])
    saved = [result for result in results if isinstance(result, qualification.TryResult)]
    refused = [result for result in results if isinstance(result, qualification.QualificationRefused)]
    assert len(saved) in (1, 2) and len(refused) == 8 - len(saved), results
    assert sorted(QualificationAttempt.objects.values_list("number", flat=True)) == list(range(1, len(saved) + 1))
    assert QualificationAnswer.objects.count() == len(saved) * 4


def test_passing_tries_at_once_record_one_pass():
    study, test = qualified_study(max_attempts=5)
    Study.objects.filter(pk=study.pk).update(require_signed_link=True)  # trust follows verified ids only
    test.refresh_from_db()
    (worker,) = new_workers(1, "passer")
    results = at_once([lambda: take_try(test, worker, 4) for _ in range(6)])
    assert sum(isinstance(result, qualification.TryResult) for result in results) == 1, results
    assert QualificationAttempt.objects.filter(passed=True).count() == 1
    assert Worker.objects.get(pk=worker.pk).is_trusted
