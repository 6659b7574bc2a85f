"""A test of a data migration: the database taken back to the migration before it, rows written
there with that state's models, then migrated forward to the newest migrations."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Targets = list[tuple[str, str]]


@contextmanager
def migrated_back(before: Targets, after: Targets) -> Iterator[Apps]:
    """The models as they were at `before`, for the block to write rows with; when it ends, the
    database is migrated through `after` and on to the newest migrations (which the test's checks
    and the tests after it read)."""
    # The test's transaction: foreign keys checked at once, so no pending check blocks an ALTER TABLE.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    yield executor.loader.project_state(before).apps
    MigrationExecutor(connection).migrate(after)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
