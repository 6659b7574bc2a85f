"""Many rows written as plain parameters: multi-row INSERTs, and UPDATEs from a list of values.

Django's `bulk_create` builds a model object and prepares every field of every row, and
`bulk_update` writes a CASE WHEN per row and column; on the hot writers (tally deltas,
a tagging job's tags and parse trees, a validator's counters) building those statements cost more
than running them. These take each value as its column stores it (the caller adapts datetimes:
`connection.ops.adapt_datetimefield_value`) and write it as a parameter, on the default connection
and in the caller's transaction.
"""

from collections.abc import Sequence
from typing import Any

from django.db import connection

ROWS_PER_STATEMENT = 500


def insert_rows(
    table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, per_statement: int = ROWS_PER_STATEMENT
) -> None:
    """INSERT `rows` (one value per column, in order) into `table`, `per_statement` rows a statement."""
    quote = connection.ops.quote_name
    names = ", ".join(quote(column) for column in columns)
    row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            batch = rows[start : start + per_statement]
            cursor.execute(
                f"INSERT INTO {quote(table)} ({names}) VALUES {', '.join([row_sql] * len(batch))}",
                [value for row in batch for value in row],
            )


def insert_rows_together(parts: Sequence[tuple[str, Sequence[str], Sequence[Sequence[Any]]]]) -> None:
    """INSERT the rows of several tables, each (table, columns, rows), in one statement (each table's
    INSERT but the last a data-modifying WITH) when they are few: a hot writer's deltas to two
    tallies cost one round trip, not two. Many rows: `insert_rows` per table."""
    parts = [part for part in parts if part[2]]
    if len(parts) < 2 or sum(len(rows) for _, _, rows in parts) > ROWS_PER_STATEMENT:
        for table, columns, rows in parts:
            insert_rows(table, columns, rows)
        return
    quote = connection.ops.quote_name
    inserts, params = [], []
    for table, columns, rows in parts:
        row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
        names = ", ".join(quote(column) for column in columns)
        inserts.append(f"INSERT INTO {quote(table)} ({names}) VALUES {', '.join([row_sql] * len(rows))}")
        params += [value for row in rows for value in row]
    ahead = ", ".join(f"w{index} AS ({sql})" for index, sql in enumerate(inserts[:-1]))
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {ahead} {inserts[-1]}", params)


def update_rows(
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    only_where_empty: str | None = None,
    per_statement: int = ROWS_PER_STATEMENT,
) -> None:
    """Set `columns` of the rows of `table` whose `id` is each row's first value to its other values.

    One `UPDATE ... FROM (VALUES ...)` per `per_statement` rows. `only_where_empty` names a text
    column: rows where it is filled already stay.
    """
    if not rows:
        return
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        assignments = ", ".join(f"{quote(column)} = v.{quote(column)}" for column in columns)
        names = ", ".join(quote(column) for column in columns)
        row_sql = "(" + ", ".join(["%s"] * (len(columns) + 1)) + ")"
        target = f"{quote(table)} AS t"
        unless_filled = f" AND t.{quote(only_where_empty)} = ''" if only_where_empty else ""
        for start in range(0, len(rows), per_statement):
            batch = rows[start : start + per_statement]
            cursor.execute(
                f"UPDATE {target} SET {assignments} FROM (VALUES {', '.join([row_sql] * len(batch))})"
                f" AS v(id, {names}) WHERE t.id = v.id{unless_filled}",
                [value for row in batch for value in row],
            )
