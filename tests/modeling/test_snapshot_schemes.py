"""Snapshots follow the label scheme: two-way and ordinal labels written in the scheme's words,
the scheme stated in the manifest, one scheme per snapshot, DNC's full-agreement rule and the
grammaticality filter."""

import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from corpus.models import Dataset, Grammaticality, GrammaticalityJudgment, LabelScheme, Pair
from corpus.services import add_label, create_pairs
from modeling.snapshots.format import manifest_labels, read_manifest
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db
E, N = "entailment", "neutral"


def rows(snapshot, split):
    path = Path(snapshot.directory) / f"{split}.jsonl"
    return {row["pairID"]: row for row in map(json.loads, path.read_text().splitlines())}


def two_way_corpus():
    dataset = Dataset.objects.create(slug="recast", name="Recast", label_scheme=LabelScheme.TWO_WAY)
    g = genre("recast-genre")
    train = add_premise(dataset, g, "train", "Ann liked the film.")
    add_pair(dataset, train, "Ann liked it.", [E], pair_id="t1", needs_validation=False)
    add_pair(dataset, train, "Ann hated it.", [N], pair_id="t2", needs_validation=False)
    dev = add_premise(dataset, g, "dev", "Bo sold the car.")
    add_pair(dataset, dev, "Bo had a car.", [E] * 5, pair_id="d-unanimous")
    add_pair(dataset, dev, "Bo bought a car.", [N, N, N, E, N], pair_id="d-split")
    add_pair(dataset, dev, "Bo sold it.", [E], pair_id="d-single", needs_validation=False)
    return dataset


def test_two_way_snapshot_writes_entailed_and_not_entailed_and_states_the_scheme():
    two_way_corpus()
    snapshot = export_snapshot(create_snapshot(None, datasets=["recast"]))
    manifest = read_manifest(snapshot.directory)
    assert manifest["label_scheme"] == "two_way"
    assert manifest_labels(manifest) == ("entailed", "not-entailed")
    train, dev = rows(snapshot, "train"), rows(snapshot, "dev")
    assert (train["t1"]["gold_label"], train["t2"]["gold_label"]) == ("entailed", "not-entailed")
    assert dev["d-split"]["annotator_labels"] == ["not-entailed"] * 3 + ["entailed", "not-entailed"]
    assert dev["d-split"]["gold_label"] == "not-entailed"
    assert dev["d-single"]["gold_label"] == "-"  # one label, dev: no gold unless asked for
    tsv = (Path(snapshot.directory) / "dev.tsv").read_text()
    assert "entailed\t" in tsv and "contradiction" not in tsv and "neutral" not in tsv


def test_author_all_gives_unvalidated_recast_pairs_their_label_in_every_split():
    two_way_corpus()
    snapshot = export_snapshot(create_snapshot(None, datasets=["recast"], filters={"unvalidated_gold": "author-all"}))
    assert rows(snapshot, "dev")["d-single"]["gold_label"] == "entailed"


def test_three_way_manifest_keeps_its_old_form(small_corpus):
    manifest = read_manifest(export_snapshot(create_snapshot(None, datasets=["mini"])).directory)
    assert "label_scheme" not in manifest and manifest_labels(manifest) == ("entailment", "neutral", "contradiction")


def test_a_snapshot_never_mixes_schemes(small_corpus):
    two_way_corpus()
    with pytest.raises(ValidationError, match="different label schemes"):
        create_snapshot(None, datasets=["mini", "recast"])
    with pytest.raises(ValidationError, match="different label schemes"):
        create_snapshot(None)  # every dataset


def test_full_agreement_keeps_only_pairs_whose_labels_all_agree():
    two_way_corpus()
    snapshot = export_snapshot(create_snapshot(None, datasets=["recast"], filters={"full_agreement": True}))
    assert snapshot.filters["full_agreement"] is True
    assert set(rows(snapshot, "dev")) == {"d-unanimous"}  # not the 4-1 split, not the single label


def test_full_agreement_on_ordinal_data_needs_the_same_rating():
    dataset = Dataset.objects.create(slug="ordinal", name="Ordinal", label_scheme=LabelScheme.ORDINAL)
    premise = add_premise(dataset, genre("kg"), "dev", "Paris is in France.")
    made = {}
    for pair_id, ratings in {"same": [5, 5, 5], "mixed": [2, 3, 1]}.items():
        (pair,) = create_pairs(
            dataset,
            "dev",
            [Pair(premise=premise, pair_id=pair_id, hypothesis=pair_id, author_label=N if ratings[0] < 5 else E)],
            [[N if ratings[0] < 5 else E]],
            ordinals=[[ratings[0]]],
        )
        for rating in ratings[1:]:
            add_label(pair, E if rating == 5 else N, ordinal=rating)
        made[pair_id] = pair
    snapshot = export_snapshot(create_snapshot(None, datasets=["ordinal"], filters={"full_agreement": True}))
    dev = rows(snapshot, "dev")
    assert set(dev) == {"same"}  # "mixed" agrees on not-entailed but not on the rating
    assert dev["same"]["annotator_labels"] == ["5", "5", "5"] and dev["same"]["gold_label"] == "entailed"
    assert read_manifest(snapshot.directory)["label_scheme"] == "ordinal"


def test_drop_ungrammatical_leaves_out_hypotheses_most_judges_found_badly_broken(make_worker):
    dataset = two_way_corpus()
    bad, fine = Pair.objects.get(pair_id="d-unanimous"), Pair.objects.get(pair_id="d-split")
    workers = [make_worker(f"judge{i}") for i in range(3)]
    for worker, judgment in zip(
        workers, [Grammaticality.MAJOR, Grammaticality.MAJOR, Grammaticality.MINOR], strict=False
    ):
        GrammaticalityJudgment.objects.create(pair=bad, worker=worker, judgment=judgment)
    for worker, judgment in zip(
        workers, [Grammaticality.MAJOR, Grammaticality.NONE, Grammaticality.MINOR], strict=False
    ):
        GrammaticalityJudgment.objects.create(pair=fine, worker=worker, judgment=judgment)
    kept = rows(
        export_snapshot(create_snapshot(None, datasets=[dataset.slug], filters={"drop_ungrammatical": True})), "dev"
    )
    assert "d-unanimous" not in kept and "d-split" in kept and "d-single" in kept


@pytest.mark.parametrize("flag", ["full_agreement", "drop_ungrammatical"])
def test_flags_must_be_booleans(flag):
    with pytest.raises(ValidationError, match="true or false"):
        create_snapshot(None, filters={flag: "yes"})


def test_dncs_test_rule_drops_the_fours_from_not_entailed_in_the_test_split_only():
    dataset = Dataset.objects.create(slug="kg", name="KG", label_scheme=LabelScheme.ORDINAL)
    g = genre("kg-genre")
    premises = {split: add_premise(dataset, g, split, f"Paris is in France ({split}).") for split in ("dev", "test")}
    cases = {"four": [4, 4, 4, 4, 4], "three": [3, 3, 3, 3, 3], "five": [5, 5, 5, 5, 5], "one-four": [2, 2, 2, 4, 2]}
    for split, premise in premises.items():
        for name, ratings in cases.items():
            (pair,) = create_pairs(
                dataset,
                split,
                [
                    Pair(
                        premise=premise,
                        pair_id=f"{split}-{name}",
                        hypothesis=name,
                        author_label=E if ratings[0] == 5 else N,
                    )
                ],
                [[E if ratings[0] == 5 else N]],
                ordinals=[[ratings[0]]],
            )
            for rating in ratings[1:]:
                add_label(pair, E if rating == 5 else N, ordinal=rating)
    plain = export_snapshot(create_snapshot(None, datasets=["kg"]))
    assert set(rows(plain, "test")) == {f"test-{name}" for name in cases}
    pruned = export_snapshot(create_snapshot(None, datasets=["kg"], filters={"drop_test_fours": True}))
    assert set(rows(pruned, "test")) == {"test-three", "test-five"}
    assert set(rows(pruned, "dev")) == {f"dev-{name}" for name in cases}  # dev and train keep their 4s
    # With full agreement it is DNC's pruned test set: unanimous ratings, no 4s.
    dnc = export_snapshot(
        create_snapshot(None, datasets=["kg"], filters={"drop_test_fours": True, "full_agreement": True})
    )
    assert set(rows(dnc, "test")) == {"test-three", "test-five"}
    with pytest.raises(ValidationError):
        create_snapshot(None, datasets=["kg"], filters={"drop_test_fours": "yes"})
