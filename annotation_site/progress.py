"""Progress figures of work that runs in one long transaction (an import that commits all or
nothing): written through a second connection, outside that transaction, so that the admin and
the dashboard see them while the work runs.

On SQLite (the embedded mode) a second writer would wait for the first, so the figures are
written in the caller's transaction instead and appear when it commits.
"""

import copy

from django.db import connection
from django.db.models.sql import UpdateQuery
from django.db.utils import load_backend


class ProgressWriter:
    def __init__(self):
        self._side = None

    def update(self, model, pk, **fields):
        """UPDATE model SET fields WHERE pk = pk, visible to others at once where the database allows."""
        if connection.vendor != "postgresql" or not connection.in_atomic_block:
            model.objects.filter(pk=pk).update(**fields)
            return
        if self._side is None:
            backend = load_backend(connection.settings_dict["ENGINE"])
            self._side = backend.DatabaseWrapper(copy.deepcopy(connection.settings_dict), alias="progress")
        query = UpdateQuery(model)
        query.add_update_values(fields)
        query.add_filter("pk", pk)
        sql, params = query.get_compiler(connection=self._side).as_sql()
        with self._side.cursor() as cursor:  # autocommit: committed at once
            cursor.execute(sql, params)
            updated = cursor.rowcount
        if not updated:
            # The row is not committed yet (the caller made it in its own transaction, e.g. a
            # test's): invisible to the second connection, so written in the caller's transaction.
            model.objects.filter(pk=pk).update(**fields)

    def close(self):
        if self._side is not None:
            self._side.close()
            self._side = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
