"""A snapshot of "all datasets" takes all of its team's datasets, and the checks across datasets
look at those only (modeling.snapshots.services.normalize_request): one team's two-way dataset
does not block another team's three-way snapshot, and another team's aggregation run is as
unknown to a snapshot request as a missing one."""

import pytest
from django.core.exceptions import ValidationError

from modeling.snapshots.services import create_snapshot
from quality.models import AggregationRun
from tests import factories
from tests.two_teams import two_teams

pytestmark = pytest.mark.django_db


@pytest.fixture
def labs(django_user_model, make_worker):
    labs = two_teams(django_user_model, make_worker)
    two_way = factories.dataset("lab-a-rte", team=labs.team_a, label_scheme="two_way")
    factories.pair(two_way, factories.premise(two_way), ["neutral"])
    factories.pair(labs.dataset_b, factories.premise(labs.dataset_b), ["entailment"])
    return labs


def test_another_teams_two_way_dataset_does_not_block_all_of_my_datasets(labs):
    snapshot = create_snapshot(labs.owner_b)
    assert snapshot.team_id == labs.team_b.pk
    assert snapshot.datasets == ["lab-b-data"]


def test_all_of_a_teams_datasets_are_still_checked_for_one_scheme(labs):
    with pytest.raises(ValidationError) as refused:
        create_snapshot(labs.owner_a)
    assert "different label schemes" in str(refused.value.message_dict["datasets"])


def test_another_teams_aggregation_run_is_unknown(labs):
    foreign = AggregationRun.objects.create(dataset=labs.dataset_a, methods=["dawid_skene"], status="done")
    missing = foreign.pk + 1000
    said = {}
    for run_id in (foreign.pk, missing):
        with pytest.raises(ValidationError) as refused:
            create_snapshot(labs.owner_b, filters={"aggregation_run": run_id})
        said[run_id] = refused.value.message_dict["filters.aggregation_run"]
    assert said[foreign.pk] == [f"unknown aggregation run {foreign.pk}"]
    assert said[missing] == [f"unknown aggregation run {missing}"]
    assert "lab-a-data" not in str(said)


def test_an_aggregation_run_of_my_team_is_taken(labs):
    mine = AggregationRun.objects.create(dataset=labs.dataset_b, methods=["dawid_skene"], status="done")
    snapshot = create_snapshot(labs.owner_b, filters={"aggregation_run": mine.pk})
    assert snapshot.filters["aggregation_run"] == mine.pk
