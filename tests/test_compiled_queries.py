"""annotation_site.compiled_queries: a queryset compiled once per shape, bound to each call's values."""

from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from annotation_site.compiled_queries import CompiledQuery
from corpus.models import Label, Pair
from tests import factories

pytestmark = pytest.mark.django_db


def _pairs_of(shape, values):
    pairs = Pair.objects.filter(dataset_id=values["dataset"], created_at__lte=values["until"])
    if shape == "validated":
        pairs = pairs.filter(label_count__gte=2)
    return pairs.order_by("id").values_list("pair_id")


def test_every_bind_returns_what_the_queryset_returns_for_its_own_values():
    first, second = factories.dataset("first"), factories.dataset("second")
    for dataset in (first, second):
        premise = factories.premise(dataset)
        factories.pair(dataset, premise, [Label.ENTAILMENT, Label.NEUTRAL])
        factories.pair(dataset, premise, [Label.NEUTRAL])
    compiled = CompiledQuery(_pairs_of)
    built = []
    counting = CompiledQuery(lambda shape, values: built.append(shape) or _pairs_of(shape, values))
    now = timezone.now()
    for shape in ("all", "validated"):
        for dataset in (first, second, first):
            for until in (now, now - timedelta(days=1)):
                values = {"dataset": dataset.pk, "until": until}
                expected = list(_pairs_of(shape, values))
                assert compiled.fetch(shape, **values) == expected
                assert counting.fetch(shape, **values) == expected
    assert built == ["all", "validated"]  # built once per shape, whatever the values


def test_a_value_the_statement_does_not_carry_as_a_parameter_is_refused():
    # A value written into the SQL's text: binding the first caller's value for everyone after
    # would be wrong, so it is refused when compiled.
    folded = CompiledQuery(
        lambda shape, values: Pair.objects.extra(where=[f"label_count < {values['limit']}"]).values_list("pk")
    )
    with pytest.raises(ImproperlyConfigured, match="does not take limit as parameters"):
        folded.fetch(None, limit=3)
    with pytest.raises(ImproperlyConfigured, match="ints and datetimes only"):
        CompiledQuery(_pairs_of).fetch("all", dataset="first", until=timezone.now())
