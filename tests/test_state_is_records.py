"""State is a record, words are for people: no platform code decides anything from the words of a
text written for a reader (a bonus's reason, why a visit closed, a connection test's line). Each
such decision reads the record its writer keeps beside the words (`BonusEntry.cause`,
`StudySession.ended_as`, `MarketConnection.last_check_ok`, `modeling.refusals`' codes).

The text fields are found from the models (every text field named as a reason, a note, a line or a
message); the platform's source (tests, benchmarks and migrations aside, a migration being where
old words are read once into their record) is searched for a query on their words
(`reason__startswith`) and for a test of their start, end or content (`.reason.startswith(...)`,
`"x" in row.reason`)."""

import ast
import re

from django.apps import apps
from django.db import models

from tests.test_docs_are_true import REPO, project_python_files

WORD_LOOKUPS = ("startswith", "istartswith", "endswith", "iendswith", "contains", "icontains", "regex", "iregex")
PEOPLES_WORDS = re.compile(r"(reason|note|last_check|message|_text)$")
# Where reading such a field's words is the job itself, and why.
SEARCHES = {
    # Erasure finds the entries that name the person, to redact them: a search for their ids.
    ("privacy/services.py", "reason"),
}


def text_fields_for_people():
    return {
        field.name
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if isinstance(field, (models.CharField, models.TextField)) and PEOPLES_WORDS.search(field.name)
    }


def platform_files():
    skipped = {"tests", "bench", "scripts", "migrations"}
    for path in project_python_files():
        relative = path.relative_to(REPO)
        if not skipped & set(relative.parts):
            yield relative.as_posix(), path


def word_readings(tree, fields):
    """(line, field) for each query on a field's words and each test of its start, end or content."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg and "__" in node.arg:
            *path, lookup = node.arg.split("__")
            if lookup in WORD_LOOKUPS and path[-1] in fields:
                yield node.value.lineno, path[-1]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith") and _field_read(node.func.value, fields):
                yield node.lineno, _field_read(node.func.value, fields)
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            for side in node.comparators:
                if _field_read(side, fields):
                    yield node.lineno, _field_read(side, fields)


def _field_read(node, fields):
    """The field an expression reads (`x.reason`, `row["reason"]`, `str(x.reason)`), if one of `fields`."""
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    if isinstance(node, ast.Attribute) and node.attr in fields:
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in fields:
        return node.slice.value
    return None


def test_no_platform_code_decides_from_the_words_of_a_text_for_people():
    fields = text_fields_for_people()
    found = [
        f"{name}:{line} reads the words of {field}"
        for name, path in platform_files()
        for line, field in word_readings(ast.parse(path.read_text(encoding="utf-8")), fields)
        if (name, field) not in SEARCHES
    ]
    assert not found, "keep a record beside the words and read it:\n" + "\n".join(found)


def test_the_check_knows_the_fields_and_finds_each_kind_of_reading():
    fields = text_fields_for_people()
    assert {"reason", "closed_reason", "last_check", "code_held_reason"} <= fields
    readings = """
Q(closed_at__isnull=False, closed_reason__startswith=word)
rows.filter(study_session__closed_reason__icontains="returned")
connection.last_check.startswith("Connected")
row["closed_reason"].endswith("on MTurk")
str(entry.reason).startswith("Paid")
if "returned" in session.closed_reason: pass
Q(reason_code="x")
entry.reason_code.startswith("x")
"""
    assert sorted(field for _, field in word_readings(ast.parse(readings), fields)) == [
        "closed_reason",
        "closed_reason",
        "closed_reason",
        "closed_reason",
        "last_check",
        "reason",
    ]


def test_every_search_is_still_one():
    """An exception whose reading is gone would hide the next one written there."""
    fields = text_fields_for_people()
    for name, field in SEARCHES:
        tree = ast.parse((REPO / name).read_text(encoding="utf-8"))
        assert any(found == field for _, found in word_readings(tree, fields)), f"{name}: no reading of {field} now"
