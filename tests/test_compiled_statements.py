"""base/compiled.py: a statement built once per process, and built again once forgotten."""

import pytest

from base.compiled import compiled_once, forget_compiled
from corpus.models import Dataset

pytestmark = pytest.mark.django_db


def test_a_statement_is_built_at_its_first_use_only_and_again_once_forgotten():
    built = []

    def build():
        built.append(1)
        return Dataset.objects.filter(slug="first").values("pk")

    first = compiled_once("tests.first", build)
    assert compiled_once("tests.first", build) == first and len(built) == 1
    assert "WHERE" in first[0] and first[1] == ("first",)
    forget_compiled()
    assert compiled_once("tests.first", build) == first and len(built) == 2


def test_the_compiled_statement_runs_as_the_queryset_would():
    Dataset.objects.create(slug="kept", name="kept")
    Dataset.objects.create(slug="other", name="other")

    sql, params = compiled_once("tests.kept", lambda: Dataset.objects.filter(slug="kept").order_by("pk"))

    assert [dataset.slug for dataset in Dataset.objects.raw(sql, params)] == ["kept"]
