"""DNC's JSON (importers.dnc) on every released file under ../shared/data/dnc.

Expected counts are the README's table (../shared/data/README.md, "DNC"). No database.
"""

import json
from collections import Counter
from pathlib import Path

import pytest

from importers import dnc
from tests.conftest import shared_file
from tests.present import present

# README.md: rows and label counts per *_data.json; which ones have a *_metadata.json.
README_LABELS: dict[str, dict[str | int, int]] = {
    "dev/recast_factuality": {"entailed": 2664, "not-entailed": 2664},
    "dev/recast_kg_relations": {5: 916, 3: 870, 4: 449, 1: 160, 2: 71},
    "dev/recast_megaveridicality": {"entailed": 394, "not-entailed": 788},
    "dev/recast_puns": {"entailed": 876, "not-entailed": 876},
    "dev/recast_sentiment": {"entailed": 300, "not-entailed": 300},
    "dev/recast_verbnet": {"entailed": 92, "not-entailed": 51},
    "function_words/NLI/nli-comparatives": {"contradiction": 44, "entailment": 41, "neutral": 4},
    "function_words/NLI/nli-negation": {"neutral": 145, "contradiction": 234, "entailment": 212},
    "function_words/NLI/nli-prepositions": {"neutral": 119, "entailment": 134, "contradiction": 105},
    "function_words/NLI/nli-quantification": {"entailment": 149, "contradiction": 156, "neutral": 18},
    "function_words/NLI/nli-spatial": {"entailment": 71, "contradiction": 72, "neutral": 14},
    "train/recast_megaveridicality": {"entailed": 3150, "not-entailed": 6300},
    "train/recast_sentiment": {"entailed": 2400, "not-entailed": 2400},
    "train/recast_verbnet": {"entailed": 834, "not-entailed": 564},
}
WITHOUT_METADATA = {"dev/recast_kg_relations"}


def dnc_root():
    return shared_file("dnc")


def dataset_path(name):
    return shared_file(f"dnc/{name}_data.json")


@pytest.fixture(scope="module")
def datasets():
    return {name: dnc.read_dnc(dataset_path(name)) for name in README_LABELS}


def as_ordered_json(text):
    """Parsed JSON in which objects are lists of (key, value): equality then includes field order."""
    return json.loads(text, object_pairs_hook=list)


# --- reading ---------------------------------------------------------------------------------


def test_every_json_file_under_dnc_reads(datasets):
    root = dnc_root()
    found = {str(path.relative_to(root)) for path in root.rglob("*.json")}
    read = set()
    for name, dataset in datasets.items():
        read.add(f"{name}_data.json")
        if dataset.metadata_path:
            read.add(f"{name}_metadata.json")
    assert found == read
    assert {name for name, dataset in datasets.items() if dataset.metadata_path is None} == WITHOUT_METADATA
    assert [str(path.relative_to(root))[: -len("_data.json")] for path in dnc.find_dnc_files(root)] == sorted(
        README_LABELS
    )


@pytest.mark.parametrize("name", sorted(README_LABELS))
def test_counts_per_label_equal_the_readme(datasets, name):
    assert dict(Counter(pair.label for pair in datasets[name].pairs)) == README_LABELS[name]


def test_pairs_carry_their_provenance(datasets):
    sentiment = datasets["dev/recast_sentiment"].pairs[0]
    assert (sentiment.pair_id, sentiment.label, sentiment.split, sentiment.type_of_inference) == (
        509058,
        "entailed",
        "dev",
        "Sentiment",
    )
    assert sentiment.hypothesis == "Jesse liked the product . "
    assert sentiment.provenance == dnc.Provenance(
        corpus="Kotzias et. al. 2015",
        corpus_sent_id="amazon_cells_labelled.txt 140",
        corpus_license=None,
        creation_approach="automatic",
        misc=None,
        keys=dnc.METADATA_KEYS,
    )

    megaveridicality = datasets["dev/recast_megaveridicality"].pairs[0].provenance
    assert megaveridicality.extra == {"corpus-split": "dev"}
    assert "misc" not in megaveridicality.keys
    assert datasets["dev/recast_factuality"].pairs[0].provenance.corpus_sent_id == 1975
    negation = datasets["function_words/NLI/nli-negation"].pairs[0].provenance
    assert negation.creation_approach == "crowdsource"
    assert negation.misc["task_desc"] == "unchanged-neg"

    kg = datasets["dev/recast_kg_relations"].pairs[0]
    assert kg.provenance is None
    assert kg.extra == {"annotations": "5"}


# --- label schemes ---------------------------------------------------------------------------


def test_binary_label_agrees_with_the_two_way_mapping_in_every_file(datasets):
    for name, dataset in datasets.items():
        disagreeing = [pair.pair_id for pair in dataset.pairs if pair.binary_label != dnc.is_entailed(pair.label)]
        assert disagreeing == [], name


def test_each_file_has_one_label_scheme(datasets):
    schemes = {name: {pair.label_scheme for pair in dataset.pairs} for name, dataset in datasets.items()}
    assert schemes["dev/recast_kg_relations"] == {dnc.ORDINAL}
    assert all(schemes[name] == {dnc.THREE_WAY} for name in schemes if name.startswith("function_words"))
    assert all(
        scheme == {dnc.TWO_WAY}
        for name, scheme in schemes.items()
        if name != "dev/recast_kg_relations" and not name.startswith("function_words")
    )


@pytest.mark.parametrize(
    "label, two_way, three_way",
    [
        ("entailed", "entailed", None),
        ("not-entailed", "not-entailed", None),
        ("entailment", "entailed", "entailment"),
        ("neutral", "not-entailed", "neutral"),
        ("contradiction", "not-entailed", "contradiction"),
        (5, "entailed", "entailment"),
        (4, "not-entailed", "neutral"),
        (3, "not-entailed", "neutral"),
        (2, "not-entailed", "neutral"),
        (1, "not-entailed", "contradiction"),
    ],
)
def test_label_mappings(label, two_way, three_way):
    assert dnc.two_way_label(label) == two_way
    assert dnc.three_way_label(label) == three_way


@pytest.mark.parametrize("label", [0, 6, "5", True, "yes", None])
def test_unknown_labels_are_refused(label):
    with pytest.raises(ValueError, match="is not a DNC label"):
        dnc.label_scheme(label)


def test_ordinal_scale_in_three_ways(datasets):
    pairs = datasets["dev/recast_kg_relations"].pairs
    three_way = {label: sum(pair.three_way_label == label for pair in pairs) for label in dnc.THREE_WAY_LABELS}
    assert three_way == {"entailment": 916, "neutral": 870 + 449 + 71, "contradiction": 160}


# --- round trip ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(README_LABELS))
def test_data_and_metadata_round_trip_byte_for_byte(datasets, name, tmp_path):
    dataset = datasets[name]
    data_out, metadata_out = tmp_path / "data.json", tmp_path / "metadata.json"
    # Written back in the styles it was read with; without a metadata file, none is written.
    dnc.write_dnc(
        dataset.pairs,
        data_out,
        metadata_out if dataset.metadata_path else None,
        dataset.data_style,
        dataset.metadata_style,
    )
    originals = [(dataset_path(name), data_out)]
    if dataset.metadata_path:
        originals.append((dataset.metadata_path, metadata_out))
    else:
        assert not metadata_out.exists()
    for original, written in originals:
        original_bytes = Path(original).read_bytes()
        written_text = written.read_text(encoding="utf-8")
        assert as_ordered_json(written_text) == as_ordered_json(original_bytes.decode("utf-8")), original
        assert written_text.encode("utf-8") == original_bytes, original


def test_the_two_json_styles_are_told_apart(datasets):
    assert datasets["dev/recast_sentiment"].data_style == dnc.PYTHON2_STYLE
    assert datasets["function_words/NLI/nli-prepositions"].data_style == dnc.PYTHON3_STYLE


# --- building and refusing -------------------------------------------------------------------


def new_pair(pair_id=1, **changes):
    values = {
        "pair_id": pair_id,
        "context": "Kim heard that time flies .",
        "hypothesis": "Kim heard a pun",
        "label": "entailed",
        "label_set": ["entailed", "not-entailed"],
        "binary_label": True,
        "split": "dev",
        "type_of_inference": "Pun",
        "provenance": dnc.Provenance(corpus="Test", corpus_sent_id="t1", corpus_license=None),
    }
    values.update(changes)
    return dnc.DncPair(**values)


def test_pairs_built_in_code_are_written_in_dncs_key_order(tmp_path):
    dnc.write_dnc([new_pair()], tmp_path / "x_data.json", tmp_path / "x_metadata.json")
    data = as_ordered_json((tmp_path / "x_data.json").read_text())
    metadata = as_ordered_json((tmp_path / "x_metadata.json").read_text())
    assert [key for key, _ in data[0]] == list(dnc.DATA_KEYS)
    assert [key for key, _ in metadata[0]] == list(dnc.METADATA_KEYS)
    again = dnc.read_dnc(tmp_path / "x_data.json")
    assert present(again.pairs[0].provenance).corpus_sent_id == "t1"
    assert (tmp_path / "x_data.json").read_text().splitlines()[2] == '        "binary-label": true, '


def test_a_pair_without_metadata_is_an_error(tmp_path):
    dnc.write_dnc([new_pair(1), new_pair(2)], tmp_path / "x_data.json")
    dnc.write_dnc([new_pair(1)], tmp_path / "y_data.json", tmp_path / "x_metadata.json")  # metadata for pair 1 only
    with pytest.raises(dnc.DncFormatError, match=r"1 pair\(s\) have no record .* \(first pair-id 2\)"):
        dnc.read_dnc(tmp_path / "x_data.json")


def test_a_record_without_a_required_field_says_which(tmp_path):
    path = tmp_path / "z_data.json"
    path.write_text(json.dumps([{"context": "c", "hypothesis": "h", "label": "entailed"}]))
    expected = r"record 0 lacks binary-label, label-set, pair-id, split, type-of-inference$"
    with pytest.raises(dnc.DncFormatError, match=expected):
        dnc.read_dnc(path)


def test_a_label_outside_its_label_set_is_refused(tmp_path):
    path = tmp_path / "z_data.json"
    dnc.write_dnc([new_pair(label="neutral", label_set=["entailed", "not-entailed"])], path)
    with pytest.raises(dnc.DncFormatError, match="label 'neutral' is not in label-set"):
        dnc.read_dnc(path)
