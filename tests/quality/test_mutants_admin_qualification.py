"""The qualification test's admin at the edges mutmut found unguarded: the pool rule's error sits on
the items field and a form whose items are invalid is answered, not crashed; the items offered are
the reference labels in pairID order, each named without a query of its own; the list reads every
row's pool in one statement. The list's counting columns are decorated (@admin.display), so mutmut
makes no mutant of them."""

import html
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.models import Pair
from quality.models import QualificationTest, ReferenceLabel
from tests import factories
from tests.collection.writing_helpers import make_study
from tests.quality.qualification_helpers import qualified_study

pytestmark = pytest.mark.django_db

ADD = "admin:quality_qualificationtest_add"


def _form(study_pk: int, items: list[Any], items_per_try: int) -> dict[str, Any]:
    return {
        "study": study_pk,
        "items": items,
        "items_per_try": items_per_try,
        "pass_mark": 0.75,
        "max_attempts": 2,
        "grants_trusted": "on",
        "instructions": "",
    }


def _reference_labels(count: int) -> list[ReferenceLabel]:
    reference_set = factories.dataset("reference-extra")
    made = []
    for _ in range(count):
        premise = factories.premise(reference_set, factories.genre("fiction"))
        made.append(
            ReferenceLabel.objects.create(pair=factories.pair(reference_set, premise, ["neutral"]), label="neutral")
        )
    return made


def test_a_too_small_pool_is_refused_on_the_items_field_itself(client, researcher):
    """Fails if the pool rule's message is shown as a form-wide error, away from the items it is about."""
    study, test = qualified_study(slug="pool-on-items")
    client.force_login(researcher)
    items = list(test.items.values_list("pk", flat=True))
    response = client.post(
        reverse("admin:quality_qualificationtest_change", args=[test.pk]), _form(study.pk, items[:5], 3)
    )
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert [html.unescape(error) for error in form.errors["items"]] == [
        "The pool holds 5 items; a try of 3 needs a pool of at least 6 (2 times the try), so that each try draws "
        "its own items and answers learnt on one participant id are not the next id's test. Add items or ask fewer "
        "per try."
    ]
    assert not form.non_field_errors()
    assert QualificationTest.objects.get().items.count() == 8


def test_a_form_with_unknown_items_is_answered_with_the_field_error_not_a_crash(client, researcher):
    """Fails if the pool rule measures items the form could not read: a server error instead of the form again."""
    study, test = qualified_study(slug="unknown-items")
    other = make_study(study.dataset, slug="no-test-yet")
    client.force_login(researcher)
    missing = ReferenceLabel.objects.order_by("-pk").values_list("pk", flat=True)[0] + 1000
    response = client.post(reverse(ADD), _form(other.pk, [missing], 2))
    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["items"]
    assert QualificationTest.objects.get() == test


def test_the_items_offered_are_in_pair_id_order(client, researcher):
    """Fails if the reference labels are offered in the order they were made, not by their pairID."""
    made = _reference_labels(3)
    names = ["x-third", "y-second", "z-first"]
    for row, name in zip(made, reversed(names), strict=True):
        Pair.objects.filter(pk=row.pair_id).update(pair_id=name)
    client.force_login(researcher)
    response = client.get(reverse(ADD))
    assert response.status_code == 200
    offered = [value for value, _label in response.context["adminform"].form.fields["items"].choices]
    assert [choice.value for choice in offered] == [row.pk for row in reversed(made)]
    page = response.content.decode()
    positions = [page.index(f">{name} (reference-extra)") for name in names]
    assert positions == sorted(positions)


def test_the_add_page_names_every_offered_item_without_a_query_per_item(client, researcher):
    """Fails if each offered reference label reads its pair and dataset on its own: the page's queries grow with the pool."""
    _reference_labels(2)
    client.force_login(researcher)
    url = reverse(ADD)
    assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    _reference_labels(4)
    with CaptureQueriesContext(connection) as many:
        response = client.get(url)
    assert response.status_code == 200
    assert response.content.decode().count("(reference-extra)") >= 6
    assert len(many.captured_queries) == len(few.captured_queries)


def test_the_list_reads_every_tests_pool_in_one_statement(client, researcher):
    """Fails if the list reads each test's pool on its own: a query per row for the pool column."""
    study, test = qualified_study(slug="listed-first")
    pool = list(test.items.all())
    for slug, size in (("listed-second", 3), ("listed-third", 5)):
        QualificationTest.objects.create(study=make_study(study.dataset, slug=slug)).items.add(*pool[:size])
    client.force_login(researcher)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("admin:quality_qualificationtest_changelist"))
    assert response.status_code == 200
    assert response.context["cl"].result_count == 3
    pool_reads = [query for query in queries.captured_queries if "quality_qualificationtest_items" in query["sql"]]
    assert len(pool_reads) == 1
