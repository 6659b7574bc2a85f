"""The snapshot option that adds an aggregation run's label and posterior (off by default): with it
off the MultiNLI-format files stay byte for byte the reviewed golden ones, even when runs exist."""

import csv
import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from corpus.models import Dataset
from modeling.snapshots.services import create_snapshot, export_snapshot
from quality.aggregation_runs import run_aggregation
from quality.models import AggregatedLabel, AggregationRun
from tests.modeling.test_export_golden import exported_files, fixed_corpus, golden_paths  # noqa: F401
from tests.present import present

MULTINLI_KEYS = [
    "annotator_labels",
    "genre",
    "gold_label",
    "pairID",
    "promptID",
    "sentence1",
    "sentence1_binary_parse",
    "sentence1_parse",
    "sentence2",
    "sentence2_binary_parse",
    "sentence2_parse",
    "dataset",
]


@pytest.fixture
def run(fixed_corpus):  # noqa: F811
    run = AggregationRun.objects.create(dataset=Dataset.objects.get(slug="mini"), methods=["dawid_skene", "mace"])
    run = present(run_aggregation(run.pk))
    assert run.status == "done", run.error
    return run


def test_with_the_option_off_the_files_are_the_golden_ones(run):
    files = exported_files(export_snapshot(create_snapshot(None)))
    golden = {path.name: path.read_bytes() for path in golden_paths()}
    assert files == golden


def test_with_the_option_on_rows_gain_the_aggregated_label_and_posterior(run):
    plain = export_snapshot(create_snapshot(None, datasets=["mini"]))
    extended = export_snapshot(create_snapshot(None, datasets=["mini"], filters={"aggregation_run": run.pk}))
    results = {
        row.pair.pair_id: row
        for row in AggregatedLabel.objects.filter(run=run, method="dawid_skene").select_related("pair")
    }
    seen = 0
    for name in ("train", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched"):
        before = [json.loads(line) for line in (Path(plain.directory) / f"{name}.jsonl").read_text().splitlines()]
        after = [json.loads(line) for line in (Path(extended.directory) / f"{name}.jsonl").read_text().splitlines()]
        assert [{key: row[key] for key in MULTINLI_KEYS} for row in after] == before  # MultiNLI's fields unchanged
        for row in after:
            assert list(row)[-2:] == ["aggregated_label", "aggregated_posterior"]
            result = results.get(row["pairID"])
            if result is None:  # fewer than two labels: not scored
                assert (row["aggregated_label"], row["aggregated_posterior"]) == ("", None)
            else:
                seen += 1
                assert row["aggregated_label"] == result.label
                assert row["aggregated_posterior"] == pytest.approx(result.posterior, abs=1e-6)
        with open(Path(extended.directory) / f"{name}.tsv", newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle, delimiter="\t"))
        assert header[-2:] == ["aggregated_label", "aggregated_posterior"] and header[0] == "gold_label"
    assert seen == len(results) > 0
    assert extended.filters["aggregation_run"] == run.pk and "aggregation_run" not in plain.filters


def test_the_option_names_a_finished_run_of_the_snapshots_data(run):
    for bad in (999999, "1", True):
        with pytest.raises(ValidationError) as raised:
            create_snapshot(None, filters={"aggregation_run": bad})
        assert "filters.aggregation_run" in raised.value.message_dict
    with pytest.raises(ValidationError):
        create_snapshot(None, datasets=["captions-only"], filters={"aggregation_run": run.pk})


def test_the_snapshot_form_offers_finished_runs_and_is_off_by_default(run, client, researcher):
    from django.urls import reverse

    from modeling.models import Snapshot

    client.force_login(researcher)
    page = client.get(reverse("dashboard:snapshots")).content.decode()
    assert f'<option value="{run.pk}">run {run.pk} of mini' in page
    client.post(reverse("dashboard:snapshots"), {"datasets": ["mini"]})
    client.post(reverse("dashboard:snapshots"), {"datasets": ["mini"], "aggregation_run": str(run.pk)})
    plain, extended = Snapshot.objects.order_by("pk")
    assert "aggregation_run" not in plain.filters and extended.filters["aggregation_run"] == run.pk
