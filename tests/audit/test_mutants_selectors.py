"""Reading the audit log (audit/selectors.py) at the edges mutmut found unguarded: each filter of
the page, its CSV and the API narrows by its own field and only when set, the CSV's time is ISO
8601, a release's datasheet counts every dataset it names and leaves out exports, and the team of
a named thing is its latest entry's."""

import csv
import io

import pytest
from django.utils import timezone

from audit import selectors
from audit.services import record

pytestmark = pytest.mark.django_db


@pytest.fixture
def log(django_user_model):
    alice = django_user_model.objects.create_user(username="alice")
    bob = django_user_model.objects.create_user(username="bob")
    first = record("pair.gold", actor=alice, subject_type="corpus.pair", subject_id=1, datasets=["snli"])
    cut = timezone.now()
    second = record("worker.excluded", actor=bob, subject_type="corpus.worker", subject_id=2, datasets=["mnli"])
    return first, second, cut


def test_each_filter_narrows_by_its_own_field_and_none_set_reads_everything(log):
    first, second, cut = log

    assert set(selectors.entries(None)) == {first, second}
    assert list(selectors.entries(None, actor="alice")) == [first]
    assert list(selectors.entries(None, subject_type="corpus.worker")) == [second]
    assert list(selectors.entries(None, dataset="snli")) == [first]
    assert list(selectors.entries(None, since=cut)) == [second]
    assert list(selectors.entries(None, action="worker.")) == [second]
    assert not selectors.entries(None, actor="alice", dataset="mnli").exists()


def test_the_csv_writes_each_entrys_time_as_iso_8601(log):
    first, second, _ = log

    rows = list(csv.DictReader(io.StringIO(selectors.as_csv([first, second]))))

    assert [row["at"] for row in rows] == [first.at.isoformat(), second.at.isoformat()]
    assert [row["actor"] for row in rows] == ["alice", "bob"]


def test_a_datasheet_counts_the_decisions_on_every_dataset_it_names_and_no_export(log):
    first, second, _ = log
    again = record("pair.gold", subject_type="corpus.pair", subject_id=3, datasets=["snli"])
    record("release.published", subject_type="release", after={"name": "r1"}, datasets=["snli"])
    record("snapshot.created", subject_type="modeling.snapshot", datasets=["mnli"])

    summary = selectors.summary_for_datasets(["snli", "mnli"])

    assert summary == [
        {"action": "pair.gold", "count": 2, "first": first.at.isoformat(), "last": again.at.isoformat()},
        {"action": "worker.excluded", "count": 1, "first": second.at.isoformat(), "last": second.at.isoformat()},
    ]


def test_the_team_of_a_named_thing_is_its_latest_entrys_of_that_action(log):
    record("release.published", subject_type="release", team_id=1, after={"name": "r1"})
    record("release.published", subject_type="release", team_id=2, after={"name": "r1"})
    record("release.published", subject_type="release", team_id=None, after={"name": "r2"})
    record("release.withdrawn", subject_type="release", team_id=3, after={"name": "r1"})
    record("release.published", subject_type="release", team_id=4, after={"name": "r3"})

    assert selectors.teams_of_named("release.published", ["r1", "r2"]) == {"r1": 2, "r2": None}
    assert selectors.teams_of_named("release.published", []) == {}
