"""A fixed small corpus exported and compared with reviewed files in tests/golden/export/.

The same bytes must come out on every run, so any
change to the export's format, order, escaping or hashing shows up here as a diff to review.
The manifest is compared whole except its "snapshot" id, which is the database's row id.

To accept an intended change: NLI_UPDATE_GOLDEN=1 pytest tests/modeling/test_export_golden.py,
then read the diff of tests/golden/export/ before committing it. Never in CI (CI set, as .ci/run
sets it): there the request itself fails the test, so a pass cannot bless its own output.
"""

import json
import os
from pathlib import Path

import pytest

from corpus.models import Dataset, Label
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.conftest import REPO_ROOT, in_ci
from tests.modeling.conftest import (
    FIVE_C,
    FIVE_E,
    SPLIT_VOTE,
    add_pair,
    add_premise,
    genre,
)

GOLDEN = REPO_ROOT / "tests" / "golden" / "export"
L = Label


@pytest.fixture
def fixed_corpus(db):
    """Every id is written out, so nothing depends on which tests ran before or on row ids."""
    mini = Dataset.objects.create(slug="mini", name="Mini")
    fiction, letters = genre("fiction"), genre("letters", is_training=False)
    other = Dataset.objects.create(slug="captions-only", name="Captions only", is_imported=True)
    captions = genre("captions")

    p = add_premise(mini, fiction, "train", 'He said "stop"\tand\tleft.', prompt_id="g-train-1")
    add_pair(
        mini, p, "He left.", [L.ENTAILMENT], pair_id="g-train-1e", needs_validation=False, parse="( ( He ) ( left . ) )"
    )
    add_pair(mini, p, 'Nobody said "stop".', FIVE_C, pair_id="g-train-1c")
    add_pair(mini, p, "He may come back,\nlater.", SPLIT_VOTE, pair_id="g-train-1n")
    p = add_premise(mini, fiction, "train", "Ünïcödé: ß, 東京, emoji 🙂, and a backslash \\ .", prompt_id="g-train-2")
    add_pair(mini, p, "Four labels only.", [L.NEUTRAL, L.NEUTRAL, L.ENTAILMENT, L.NEUTRAL], pair_id="g-train-2n")
    p = add_premise(mini, fiction, "dev", "A café in Zürich — naïve façade.", prompt_id="g-dev-1")
    add_pair(mini, p, "There is a café.", FIVE_E, pair_id="g-dev-1e")
    add_pair(mini, p, "NA", SPLIT_VOTE, pair_id="g-dev-1n")
    p = add_premise(mini, letters, "dev", "Dear donor,\r\nthank you.", prompt_id="g-dev-2")
    add_pair(mini, p, "Someone is thanked.", FIVE_E, pair_id="g-dev-2e")
    add_pair(mini, p, '"quoted" start and end "', FIVE_C, pair_id="g-dev-2c")
    p = add_premise(mini, fiction, "test", "  leading and trailing spaces  ", prompt_id="g-test-1")
    add_pair(mini, p, "null", FIVE_E, pair_id="g-test-1e")
    p = add_premise(mini, letters, "test", "Sincerely, the board.", prompt_id="g-test-2")
    add_pair(mini, p, "", FIVE_C, pair_id="g-test-2c")
    p = add_premise(other, captions, "dev", "Two dogs run.", prompt_id="123.jpg#0")
    add_pair(other, p, "Animals run.", FIVE_E, pair_id="123.jpg#0r1e")
    add_pair(other, p, "Cats sleep.", FIVE_C, pair_id="123.jpg#0r1c")
    p = add_premise(other, captions, "test", "A man sings.", prompt_id="124.jpg#1")
    add_pair(other, p, "A person sings.", [L.ENTAILMENT] * 4, pair_id="124.jpg#1r1e")


def golden_paths():
    # .gitattributes (keep the bytes as they are: no line-ending conversion) is not a golden file.
    return sorted(p for p in GOLDEN.iterdir() if not p.name.startswith(".")) if GOLDEN.exists() else []


def comparable_manifest(data):
    manifest = json.loads(data)
    manifest["snapshot"] = "<snapshot id>"
    return (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def exported_files(snapshot):
    files = {}
    for path in sorted(Path(snapshot.directory).iterdir()):
        data = path.read_bytes()
        files[path.name] = comparable_manifest(data) if path.name == "manifest.json" else data
    return files


def rewrite_golden_requested():
    if not os.environ.get("NLI_UPDATE_GOLDEN"):
        return False
    if in_ci():
        pytest.fail("NLI_UPDATE_GOLDEN is set in CI: golden files are never rewritten there", pytrace=False)
    return True


@pytest.mark.parametrize("filters", [None], ids=["all-datasets"])
def test_a_fixed_corpus_exports_to_the_reviewed_golden_files(fixed_corpus, filters):
    files = exported_files(export_snapshot(create_snapshot(None, filters=filters)))
    if rewrite_golden_requested():
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for old in golden_paths():
            old.unlink()
        for name, data in files.items():
            (GOLDEN / name).write_bytes(data)
    golden = {path.name: path.read_bytes() for path in golden_paths()}
    assert sorted(files) == sorted(golden), "the export wrote other files than the golden ones"
    for name in files:
        assert files[name] == golden[name], f"{name} differs from tests/golden/export/{name}"
