"""base/cached_plans.py: a statement run as the body of a PL/pgSQL function gives what the statement
gives, and its function outlives the transaction that first needed it."""

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection, transaction

from base.cached_plans import CachedStatement, forget_created
from corpus.models import Dataset

pytestmark = pytest.mark.django_db

SLUG_AND_SIZE = (
    "SELECT d.slug, %s::smallint + d.writings_per_premise, %s::timestamptz, %s::text IS NULL"
    " FROM collection_dataset d WHERE d.slug = %s"
)


def on_own_connection(sql: str, params: list[Any]) -> Any:
    """The first value `sql` returns on a connection of its own, committed: what another process sees."""
    own = connection.get_new_connection(connection.get_connection_params())
    try:
        own.autocommit = True
        with own.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()[0] if cursor.description else None
    finally:
        own.close()


def function_exists(name: str) -> bool:
    return bool(on_own_connection("SELECT to_regproc(%s) IS NOT NULL", [name]))


def drop(statement: CachedStatement) -> None:
    """The statement's function dropped and the drop committed, as if it had never been made."""
    on_own_connection(f"DROP FUNCTION IF EXISTS {statement.name}", [])
    forget_created()


def test_the_function_gives_the_rows_the_statement_gives():
    Dataset.objects.create(slug="kept", name="kept", writings_per_premise=3)
    Dataset.objects.create(slug="other", name="other")
    statement = CachedStatement(
        "tests_slug_and_size", SLUG_AND_SIZE, ["smallint", "timestamptz", "text", "text"],
        ["varchar", "smallint", "timestamptz", "boolean"],
    )  # fmt: skip
    params: list[Any] = [2, datetime(2026, 11, 30, 12, tzinfo=UTC), None, "kept"]
    with connection.cursor() as cursor:
        cursor.execute(SLUG_AND_SIZE, params)
        sent = cursor.fetchall()

    assert statement.run(params) == sent == [("kept", 5, datetime(2026, 11, 30, 12, tzinfo=UTC), True)]
    assert statement.run([2, datetime(2026, 11, 30, 12, tzinfo=UTC), None, "missing"]) == []


def test_a_write_in_the_statement_is_the_callers_and_rolls_back_with_it():
    dataset = Dataset.objects.create(slug="renamed", name="before")
    statement = CachedStatement(
        "tests_rename",
        "WITH renamed AS (UPDATE collection_dataset SET name = %s WHERE id = %s RETURNING name) SELECT name FROM renamed",
        ["text", "bigint"],
        ["varchar"],
    )

    with transaction.atomic():
        assert statement.run(["after", dataset.pk]) == [("after",)]
        transaction.set_rollback(True)

    dataset.refresh_from_db()
    assert dataset.name == "before"


def test_a_function_first_needed_by_a_transaction_that_rolls_back_is_still_there():
    statement = CachedStatement("tests_first_needed", "SELECT %s::bigint + 1", ["bigint"], ["bigint"])
    drop(statement)
    assert not function_exists(statement.name)

    with transaction.atomic():
        assert statement.run([41]) == [(42,)]
        transaction.set_rollback(True)

    assert function_exists(statement.name)
    forget_created()
    assert statement.run([1]) == [(2,)]


def test_a_changed_statement_is_another_function():
    first = CachedStatement("tests_changed", "SELECT %s::bigint + 1", ["bigint"], ["bigint"])
    same = CachedStatement("tests_changed", "SELECT %s::bigint + 1", ["bigint"], ["bigint"])
    changed = CachedStatement("tests_changed", "SELECT %s::bigint + 2", ["bigint"], ["bigint"])
    retyped = CachedStatement("tests_changed", "SELECT %s::bigint + 1", ["integer"], ["bigint"])

    assert first.name == same.name
    assert len({first.name, changed.name, retyped.name}) == 3
    for statement in (first, changed, retyped):
        drop(statement)
    assert (first.run([1]), changed.run([1]), retyped.run([1])) == ([(2,)], [(3,)], [(2,)])


def test_a_literal_percent_stays_a_percent():
    statement = CachedStatement("tests_percent", "SELECT %s::text || '%%'", ["text"], ["text"])

    assert statement.run(["50"]) == [("50%",)]


def test_each_placeholder_needs_its_type():
    with pytest.raises(ValueError, match="2 placeholders, 1 parameter types"):
        CachedStatement("tests_short", "SELECT %s::int + %s::int", ["integer"], ["integer"])


def test_a_prelude_sets_what_the_statement_reads_and_takes_the_first_placeholders():
    statement = CachedStatement(
        "tests_prelude",
        "SELECT v_found, v_found + %s",
        ["text", "integer"],
        ["integer", "integer"],
        prelude="SELECT d.writings_per_premise INTO v_found FROM collection_dataset d WHERE d.slug = %s;",
        declare="v_found integer;",
    )
    Dataset.objects.create(slug="preluded", name="preluded", writings_per_premise=4)

    assert statement.run(["preluded", 10]) == [(4, 14)]
    assert statement.run(["missing", 10]) == [(None, None)]


def test_a_prelude_returning_early_gives_no_rows():
    statement = CachedStatement(
        "tests_prelude_return",
        "SELECT %s::integer",
        ["boolean", "integer"],
        ["integer"],
        prelude="IF %s THEN RETURN; END IF;",
    )

    assert statement.run([True, 1]) == []
    assert statement.run([False, 1]) == [(1,)]


def test_a_name_declared_for_a_parameter_takes_the_first_placeholders():
    statement = CachedStatement(
        "tests_declared_alias",
        "SELECT v_slug, v_found + %s",
        ["text", "integer", "integer"],
        ["text", "integer"],
        prelude="SELECT d.writings_per_premise + %s INTO v_found FROM collection_dataset d WHERE d.slug = v_slug;",
        declare="v_slug ALIAS FOR %s; v_found integer;",
    )
    Dataset.objects.create(slug="aliased", name="aliased", writings_per_premise=4)

    assert statement.run(["aliased", 100, 10]) == [("aliased", 114)]


def test_the_prelude_placeholders_count_with_the_statements():
    with pytest.raises(ValueError, match="2 placeholders, 1 parameter types"):
        CachedStatement("tests_short_prelude", "SELECT %s::int", ["integer"], ["integer"], prelude="PERFORM %s;")


def test_a_statement_asking_for_generic_plans_plans_once_for_the_connection():
    # The function carries the setting, so it holds for its statements whatever the connection's is:
    # read back from pg_proc. A statement without it is planned as the connection says.
    generic = CachedStatement("test_generic_plans", "SELECT count(*) FROM collection_dataset d WHERE d.slug = %s",
                              ["text"], ["bigint"], generic_plans=True)  # fmt: skip
    chosen = CachedStatement("test_chosen_plans", "SELECT count(*) FROM collection_dataset d WHERE d.slug = %s",
                             ["text"], ["bigint"])  # fmt: skip
    for statement in (generic, chosen):
        drop(statement)
    try:
        assert generic.name != chosen.name
        assert generic.run(["none"]) == chosen.run(["none"]) == [(0,)]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT proname, proconfig FROM pg_proc WHERE proname IN (%s, %s)", [generic.name, chosen.name]
            )
            settings = dict(cursor.fetchall())
        assert settings == {generic.name: ["plan_cache_mode=force_generic_plan"], chosen.name: None}
    finally:
        for statement in (generic, chosen):
            drop(statement)


def test_a_statement_asking_for_index_scans_is_planned_with_sequential_scans_off():
    keyed = CachedStatement("test_index_scans", "SELECT count(*) FROM collection_dataset d WHERE d.slug = %s",
                            ["text"], ["bigint"], generic_plans=True, index_scans=True)  # fmt: skip
    drop(keyed)
    try:
        assert keyed.run(["none"]) == [(0,)]
        with connection.cursor() as cursor:
            cursor.execute("SELECT proconfig FROM pg_proc WHERE proname = %s", [keyed.name])
            (settings,) = cursor.fetchone()
        assert settings == ["plan_cache_mode=force_generic_plan", "enable_seqscan=off"]
    finally:
        drop(keyed)
