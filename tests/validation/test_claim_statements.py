"""Every task kind claims through `crowd.claiming` and takes the same few statements on PostgreSQL
and SQLite (one path, no database of its own): the worker's lock or their open claim, their open
batch, the locked candidates, the recount under the lock, the insert, and what the kind keeps on
its rows (validation: its lazy expiry of the worker's and the candidates' claims, the trusted-only
check and the pairs' held places; writing: the premise's claims made)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from collection import writing_claims
from collection.models import WritingClaim
from corpus.models import Dataset
from tests import factories
from tests.collection.writing_helpers import add_premises, writing_setup
from validation import batch_claims, premise_labels
from validation import grammaticality as grammar
from validation.models import GrammaticalityClaim, PremiseLabelClaim, ValidationClaim

from .premise_helpers import make_items
from .validation_factories import make_pair

pytestmark = pytest.mark.django_db

# Savepoints aside (the test runs in a transaction): one count per kind, whatever the database.
# Writing takes the same steps (the exclusion, the open claim, the study's pool, the candidate lock,
# recount, insert and claims made) in one call of a database function
# (`collection.writing_claims._claim_statement`); validation asks the exclusion in the statement of
# its trusted-only check.
EXPECTED = {"validation": 8, "premise": 5, "grammaticality": 5, "writing": 1}


def statements(claim):
    with CaptureQueriesContext(connection) as queries:
        batch = claim()
    return batch, [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


def test_a_validation_claim(dataset, make_worker):
    for _ in range(12):
        make_pair(dataset)
    worker = make_worker()
    batch, sql = statements(lambda: batch_claims.claim_validation_batch(worker, dataset=dataset))
    assert ValidationClaim.objects.filter(batch=batch).count() == 5
    assert len(sql) == EXPECTED["validation"], sql


def test_a_premise_claim(make_worker):
    make_items(6)
    worker = make_worker()
    batch, sql = statements(lambda: premise_labels.claim_premise_batch(worker))
    assert PremiseLabelClaim.objects.filter(batch=batch).count() == 5
    assert len(sql) == EXPECTED["premise"], sql


def test_a_grammaticality_claim(make_worker):
    dataset = factories.dataset("gram-statements")
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=3)
    for _ in range(8):
        factories.pair(dataset, factories.premise(dataset), ["neutral"])
    worker = make_worker()
    batch, sql = statements(lambda: grammar.claim_page(worker))
    assert GrammaticalityClaim.objects.filter(batch=batch).count() == 5
    assert len(sql) == EXPECTED["grammaticality"], sql


def test_a_writing_claim(make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 6)
    worker = make_worker()
    claim, sql = statements(lambda: writing_claims.claim_next_premise(worker, dataset=dataset))
    assert WritingClaim.objects.get(worker=worker) == claim
    assert len(sql) == EXPECTED["writing"], sql
