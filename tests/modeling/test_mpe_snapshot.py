"""Training on MPE goes through snapshots: the four captions concatenated in their fixed order as
sentence1 (the documented baseline), the item's gold label (the file's or a researcher's) as gold."""

import json
from pathlib import Path

import pytest

from corpus.adjudication import adjudicate
from corpus.models import Pair
from importers import mpe
from importers.mpe_items import import_mpe_file
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.importers.helpers import ensure_genres

pytestmark = pytest.mark.django_db


def test_mpe_snapshot_concatenates_the_captions_in_order_and_keeps_adjudicated_gold(tmp_path):
    ensure_genres("captions")
    premises = tuple(mpe.MpePremise("9.jpg", n, f"Caption {n}.") for n in (3, 0, 4, 1))
    path = tmp_path / "mpe_dev.txt"
    mpe.write_mpe(
        path,
        [
            mpe.MpeItem(0, "1", premises, "A dog.", mpe.Judgments(1, 2, 2), "neutral"),  # 2-2-1: the file decides
            mpe.MpeItem(0, "2", premises, "A cat.", mpe.Judgments(0, 1, 4), "contradiction"),
            mpe.MpeItem(0, "3", premises, "A bird.", mpe.Judgments(3, 0, 2), "entailment"),  # 3-2 E/C
        ],
    )
    import_mpe_file(path, "mpe")
    adjudicate(Pair.objects.get(pair_id="3"), "contradiction")  # a researcher overrules the majority

    snapshot = export_snapshot(create_snapshot(None, datasets=["mpe"]))
    rows = [json.loads(line) for line in (Path(snapshot.directory) / "dev.jsonl").read_text().splitlines()]
    assert [row["sentence1"] for row in rows] == ["Caption 3. Caption 0. Caption 4. Caption 1."] * 3
    assert [row["gold_label"] for row in rows] == ["neutral", "contradiction", "contradiction"]
    assert rows[0]["annotator_labels"] == ["entailment", "neutral", "neutral", "contradiction", "contradiction"]


def test_majority_and_hypothesis_only_train_on_mpe_train_and_evaluate_on_dev(tmp_path):
    """A slice of the real files (train -> dev) through import, snapshot and the train command, in process."""
    from collections import Counter

    from django.core.management import call_command

    from modeling.models import RunStatus, TrainingRun
    from tests.conftest import shared_file

    ensure_genres("captions")
    for split, count in (("train", 200), ("dev", 60)):
        items = mpe.read_mpe(shared_file(f"mpe/mpe_{split}.txt")).items[:count]
        mpe.write_mpe(tmp_path / f"mpe_{split}.txt", items)
        import_mpe_file(tmp_path / f"mpe_{split}.txt", "mpe")
    snapshot = export_snapshot(create_snapshot(None, datasets=["mpe"]))
    fast = (
        '{"embedding_dim": 8, "hidden_dim": 8, "epochs": 1, "batch_size": 16, "cpu_threads": 1, "embeddings": "random"}'
    )
    for model in ("majority", "hypothesis_only"):
        call_command(
            "train",
            "--snapshot",
            str(snapshot.pk),
            "--model",
            model,
            "--in-process",
            *(["--config", fast] if model == "hypothesis_only" else []),
        )
    runs = {run.model: run for run in TrainingRun.objects.all()}
    assert {run.status for run in runs.values()} == {RunStatus.DONE}
    train_gold = Counter(Pair.objects.filter(premise__split="train").values_list("gold_label", flat=True))
    dev_gold = list(Pair.objects.filter(premise__split="dev").values_list("gold_label", flat=True))
    majority = train_gold.most_common(1)[0][0]
    assert runs["majority"].results["accuracy"]["dev"] == pytest.approx(dev_gold.count(majority) / len(dev_gold))
    assert 0.0 <= runs["hypothesis_only"].results["accuracy"]["dev"] <= 1.0
