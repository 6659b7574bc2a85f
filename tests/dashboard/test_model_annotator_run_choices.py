"""Registering a model annotator from a finished run: each run offered is named by its id, its dev
accuracy (the platform's re-measured figure) and when it finished, so that seven cbow runs on one
snapshot are seven different choices, not seven times "cbow on snapshot 1 (done)"."""

import datetime
import html
import re

import pytest
from django.urls import reverse

from modeling.models import NodeToken, RunStatus, Snapshot, TrainingRun
from tests import factories

pytestmark = pytest.mark.django_db


def finished_run(snapshot, *, remeasured, reported=None, finished_at, node_token=None):
    return TrainingRun.objects.create(
        snapshot=snapshot,
        snapshot_hash="h",
        model="cbow",
        status=RunStatus.DONE,
        checkpoint_name=f"cbow-{remeasured}.safetensors",
        dev_accuracy=reported,
        remeasured_accuracy=remeasured,
        remeasured_split="dev_matched",
        finished_at=finished_at,
        node_token=node_token,
    )


def run_options(client) -> dict[str, str]:
    page = client.get(reverse("dashboard:model_annotators")).content.decode()
    select = re.search(r'<select name="training_run".*?</select>', page, re.S)
    assert select is not None
    return {
        value: html.unescape(text).strip()
        for value, text in re.findall(r'<option value="(\d+)"[^>]*>(.*?)</option>', select.group(0), re.S)
    }


def test_each_run_offered_says_its_id_its_re_measured_dev_accuracy_and_when_it_finished(client, researcher):
    snapshot = Snapshot.objects.create(datasets=[factories.dataset("run-choices").slug])
    first = finished_run(
        snapshot,
        remeasured=0.6123,
        reported=0.61,
        finished_at=datetime.datetime(2026, 11, 2, 9, 30, tzinfo=datetime.UTC),
    )
    second = finished_run(
        snapshot, remeasured=0.7049, finished_at=datetime.datetime(2026, 11, 3, 17, 5, tzinfo=datetime.UTC)
    )
    client.force_login(researcher)

    options = run_options(client)

    assert set(options) == {str(first.pk), str(second.pk)}
    assert f"run {first.pk}" in options[str(first.pk)] and f"run {second.pk}" in options[str(second.pk)]
    assert "61.2%" in options[str(first.pk)] and "2026-11-02 09:30" in options[str(first.pk)]
    assert "70.5%" in options[str(second.pk)] and "2026-11-03 17:05" in options[str(second.pk)]
    assert options[str(first.pk)] != options[str(second.pk)]


def test_a_node_figure_the_platform_did_not_bear_out_is_not_the_one_named(client, researcher):
    """The accuracy named is the platform's: a node's made-up 99% shows only as the node's claim."""
    snapshot = Snapshot.objects.create(datasets=[factories.dataset("run-choices-node").slug])
    node = NodeToken.objects.create(name="gpu-1", key_hash="0" * 64)
    run = finished_run(
        snapshot,
        remeasured=0.43,
        reported=0.99,
        finished_at=datetime.datetime(2026, 11, 4, 8, 0, tzinfo=datetime.UTC),
        node_token=node,
    )
    client.force_login(researcher)

    label = run_options(client)[str(run.pk)]

    assert label.index("43.0%") < label.index("99.0%")
    assert "re-measured" in label and "node reported 99.0%" in label
