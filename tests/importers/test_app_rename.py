"""The import app was first labelled `corpora`; it is `importers` now (one name, one
meaning). A database migrated under the old label must need no migration and keep its rows."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from importers.models import CorpusImport

pytestmark = pytest.mark.django_db


def test_the_old_labels_migrations_count_as_the_new_ones():
    loader = MigrationLoader(connection)
    # What an installation made before the rename has recorded (and a new one records too: a
    # replacing migration records the names it replaces).
    assert ("corpora", "0001_corpus_imports") in loader.applied_migrations
    assert ("corpora", "0002_dataset_in_corpus") in loader.applied_migrations
    assert ("importers", "0001_corpus_imports") in loader.applied_migrations
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []


def test_the_table_and_content_type_keep_their_rows():
    assert CorpusImport._meta.db_table == "corpora_corpusimport"
    content_type = ContentType.objects.get_for_model(CorpusImport)
    assert content_type.app_label == "importers"
    assert not ContentType.objects.filter(app_label="corpora").exists()
