"""Premise imports never half: NUL bytes, over-long lines and non-text files are dropped with
their reason or refused before anything is written; no traceback from the sentence splitter."""

import json

import pytest

from collection.models import PremiseImport
from collection.premise_import import PremiseImportError, import_premises
from collection.premise_text import DropReason
from corpus.models import ImportStatus, Premise
from tests.collection.test_premise_import import make_genre

pytestmark = pytest.mark.django_db

GOOD = "The old ferry left the harbour before the sun came up."


@pytest.fixture
def fiction():
    return make_genre("fiction", True)


@pytest.mark.parametrize(
    "content, reason",
    [
        (f"{GOOD}\n\nA man\x07 walked into the quiet bar at noon.\n", DropReason.CONTROL_CHARACTERS),
        (f"{GOOD}\n\n" + "word " * 400 + "\n", DropReason.TOO_LONG),
        (f"{GOOD}\n\n" + "x" * 300_000 + "\n", DropReason.TOO_LONG),  # a huge line: never split
    ],
    ids=["control-character-in-a-sentence", "over-long-sentence", "ten-megabyte-style-line"],
)
def test_bad_text_is_dropped_with_its_reason(tmp_path, fiction, content, reason):
    path = tmp_path / "source.txt"
    path.write_text(content, encoding="utf-8")
    report = import_premises([path], fiction)
    assert report.dropped[reason] == 1
    assert list(Premise.objects.values_list("text", flat=True)) == [GOOD]
    run = PremiseImport.objects.get()
    assert run.status == ImportStatus.DONE


@pytest.mark.parametrize(
    "record, counted",
    [
        ({"text": "A man\u0000 walked into the quiet bar at noon."}, DropReason.CONTROL_CHARACTERS),
        ({"text": "long " * 500}, DropReason.TOO_LONG),
        ({"text": "A fine sentence about the harbour today.", "promptID": "p\u00001"}, "malformed"),
    ],
    ids=["nul-in-jsonl-text", "over-long-jsonl-text", "nul-in-promptid"],
)
def test_bad_jsonl_lines_deep_in_a_file(tmp_path, fiction, record, counted):
    lines = [json.dumps({"text": f"Sentence number {i} tells of the harbour at dawn."}) for i in range(300)]
    lines.insert(250, json.dumps(record))
    path = tmp_path / "premises.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = import_premises([path], fiction, batch_size=50)
    if counted == "malformed":
        assert [(line, "NUL" in why) for _, line, why in report.malformed] == [(251, True)]
    else:
        assert report.dropped[counted] == 1
    assert Premise.objects.count() == 300
    assert PremiseImport.objects.get().status == ImportStatus.DONE


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text"),
        (b"PK\x03\x04" + b"\x00" * 20, "not a text file (it contains NUL bytes)"),
        (GOOD.encode() + b"\n" + b"\x00" * 10, "not a text file (it contains NUL bytes)"),
    ],
    ids=["png", "zip-like", "text-with-nul-bytes"],
)
def test_non_text_files_are_refused_before_anything_is_written(tmp_path, fiction, data, message):
    path = tmp_path / "source.txt"
    path.write_bytes(data)
    with pytest.raises(PremiseImportError) as error:
        import_premises([path], fiction)
    assert message in str(error.value) and "Nothing was imported" in str(error.value)
    assert not Premise.objects.exists() and not PremiseImport.objects.exists()
