"""Snapshots state the stopping rule of the pairs they export; `min_labels` still works."""

import pytest

from corpus.models import Dataset, Split, StoppingPolicy, StoppingRule
from corpus.services import add_label
from modeling.snapshots.format import read_manifest
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db
E, N = "entailment", "neutral"


def decided_corpus():
    dataset = Dataset.objects.create(slug="decided", name="Decided")
    StoppingPolicy.objects.create(dataset=dataset, split=Split.DEV, rule=StoppingRule.DECIDED)
    g = genre("decided-genre")
    dev = add_premise(dataset, g, "dev", "Bo sold the car.")
    stopped = add_pair(dataset, dev, "Bo had a car.", [E], pair_id="d-stopped", needs_validation=True)
    for label in (E, E):
        add_label(stopped, label)
    add_pair(dataset, dev, "Bo bought a car.", [N, N, E, E, N], pair_id="d-five")
    return dataset


def test_the_manifest_states_the_stopping_rules_and_min_labels_leaves_stopped_pairs_out():
    decided_corpus()
    manifest = read_manifest(export_snapshot(create_snapshot(None, datasets=["decided"])).directory)
    assert manifest["stopping_rules"] == {"decided": {"pairs": 2, "stopped_early": 1}}
    assert manifest["rows"] == 2
    five = read_manifest(
        export_snapshot(create_snapshot(None, datasets=["decided"], filters={"min_labels": 5})).directory
    )
    assert five["rows"] == 1
    assert five["stopping_rules"] == {"decided": {"pairs": 1, "stopped_early": 0}}


def test_a_fixed_rule_manifest_keeps_its_old_form(small_corpus):
    manifest = read_manifest(export_snapshot(create_snapshot(None, datasets=["mini"])).directory)
    assert "stopping_rules" not in manifest
