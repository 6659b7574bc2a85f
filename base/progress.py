"""Progress figures of work that runs in one long transaction (an import that commits all or
nothing): written through a second connection, outside that transaction, so that the admin and
the dashboard see them while the work runs.

Outside a transaction there is nothing to see past: the figures are written at once.
"""

import copy
from typing import Any, Self

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model, Q
from django.db.models.sql import UpdateQuery
from django.db.utils import load_backend


class ProgressWriter:
    def __init__(self) -> None:
        self._side: BaseDatabaseWrapper | None = None

    def update(self, model: type[Model], pk: object, **fields: Any) -> None:
        """UPDATE model SET fields WHERE pk = pk, visible to others at once where the database allows."""
        if not connection.in_atomic_block:
            model._default_manager.filter(pk=pk).update(**fields)
            return
        if self._side is None:
            backend = load_backend(connection.settings_dict["ENGINE"])
            self._side = backend.DatabaseWrapper(copy.deepcopy(connection.settings_dict), alias="progress")
        query = UpdateQuery(model)
        query.add_update_values(fields)
        query.add_q(Q(pk=pk))  # what add_filter("pk", pk) does; its stub wants (name, value) pairs
        sql, params = query.get_compiler(connection=self._side).as_sql()
        with self._side.cursor() as cursor:  # autocommit: committed at once
            cursor.execute(sql, params)
            updated = cursor.rowcount
        if not updated:
            # The row is not committed yet (the caller made it in its own transaction, e.g. a
            # test's): invisible to the second connection, so written in the caller's transaction.
            model._default_manager.filter(pk=pk).update(**fields)

    def close(self) -> None:
        if self._side is not None:
            self._side.close()
            self._side = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
