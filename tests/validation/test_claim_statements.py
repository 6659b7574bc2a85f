"""Each batch task's claim takes the same few statements, whatever the task (`validation.claiming`):
the worker's lock, their open batch, the locked candidates, the recount under the lock and the
insert (validation: its lazy expiry too, or all of it in one statement on PostgreSQL)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corpus.models import Dataset
from tests import factories
from validation import grammaticality as grammar
from validation import premise_labels, services
from validation.models import GrammaticalityClaim, PremiseLabelClaim, ValidationClaim

from .premise_helpers import make_items
from .validation_factories import make_pair

pytestmark = pytest.mark.django_db

# Savepoints aside (the test runs in a transaction): the counts each claim took before the three
# shared one helper, measured then and unchanged by it.
EXPECTED = {
    "validation": {"sqlite": 7, "postgresql": 5},
    "premise": {"sqlite": 5, "postgresql": 5},
    "grammaticality": {"sqlite": 5, "postgresql": 5},
}


def statements(claim):
    with CaptureQueriesContext(connection) as queries:
        batch = claim()
    return batch, [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


def test_a_validation_claim(dataset, make_worker):
    for _ in range(12):
        make_pair(dataset)
    worker = make_worker()
    batch, sql = statements(lambda: services.claim_validation_batch(worker, dataset=dataset))
    assert ValidationClaim.objects.filter(batch=batch).count() == 5
    assert len(sql) == EXPECTED["validation"][connection.vendor], sql


def test_a_premise_claim(make_worker):
    make_items(6)
    worker = make_worker()
    batch, sql = statements(lambda: premise_labels.claim_premise_batch(worker))
    assert PremiseLabelClaim.objects.filter(batch=batch).count() == 5
    assert len(sql) == EXPECTED["premise"][connection.vendor], sql


def test_a_grammaticality_claim(make_worker):
    dataset = factories.dataset("gram-statements")
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=3)
    for _ in range(8):
        factories.pair(dataset, factories.premise(dataset), ["neutral"])
    worker = make_worker()
    batch, sql = statements(lambda: grammar.claim_page(worker))
    assert GrammaticalityClaim.objects.filter(batch=batch).count() == 5
    assert len(sql) == EXPECTED["grammaticality"][connection.vendor], sql
