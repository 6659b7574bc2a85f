"""Training on a two-way snapshot: the label set comes from the manifest (entailed / not-entailed),
two output classes, results and checkpoints named in the scheme's words."""

import pytest
import torch

from corpus.models import Dataset, LabelScheme
from modeling.snapshots.services import create_snapshot, export_snapshot
from modeling.training.checkpoint import load_checkpoint
from modeling.training.data import load_snapshot
from modeling.training.loop import train
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db
torch.set_num_threads(1)
FAST = {"embedding_dim": 8, "hidden_dim": 8, "epochs": 3, "batch_size": 8, "cpu_threads": 1, "embeddings": "random"}
E, N = "entailment", "neutral"


@pytest.fixture
def two_way_snapshot():
    dataset = Dataset.objects.create(slug="liked", name="Liked", label_scheme=LabelScheme.TWO_WAY)
    g = genre("reviews")
    for split, count in (("train", 24), ("dev", 8)):
        premise = add_premise(dataset, g, split, "When asked , Ann said , ' fine ' .")
        for i in range(count):
            # The hypothesis gives the label away, so a hypothesis-only model can learn it.
            liked = i % 2 == 0
            add_pair(
                dataset,
                premise,
                f"Ann {'liked' if liked else 'did not like'} item {i} .",
                [E if liked else N],
                pair_id=f"{split}{i}",
                needs_validation=False,
            )
    return export_snapshot(create_snapshot(None, datasets=["liked"], filters={"unvalidated_gold": "author-all"}))


@pytest.mark.parametrize("model", ["majority", "hypothesis_only"])
def test_two_way_training_uses_the_schemes_two_labels(two_way_snapshot, model, tmp_path):
    data = load_snapshot(two_way_snapshot.directory, expected_hash=two_way_snapshot.content_hash)
    assert data.labels == ("entailed", "not-entailed")
    assert {ex.label for ex in data.train} == {0, 1}
    checkpoint = tmp_path / "run.safetensors"
    results, trainer = train(data, model, FAST, checkpoint_path=checkpoint)
    assert results["labels"] == ["entailed", "not-entailed"]
    assert set(results["dev"]["per_label"]) == {"entailed", "not-entailed"}
    assert results["dev"]["n"] == 8
    if model == "majority":
        assert results["majority_label"] == "entailed"  # a 12-12 tie goes to the lower index
        assert results["accuracy"]["dev"] == 0.5
    else:
        assert trainer.net.classifier[-1].out_features == 2
        assert results["majority_baseline"]["label"] == "entailed"
    loaded = load_checkpoint(checkpoint)
    assert loaded.labels == ("entailed", "not-entailed")
    assert loaded.predict("Ann said fine.", "Ann liked item 3 .") in ("entailed", "not-entailed")
