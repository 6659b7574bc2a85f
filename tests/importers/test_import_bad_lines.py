"""A bad line deep in a corpus file is reported by its line number and skipped; everything else
is imported and the run ends DONE: never a partial import marked failed."""

import pytest

from corpus.models import ImportStatus, Pair, Premise, ValidationLabel
from importers.formats import MAX_ID_CHARS, MAX_SENTENCE_CHARS
from importers.models import CorpusImport
from importers.services import import_pairs_file
from tests.importers.helpers import C, E, N, ensure_genres, snli_record, write_jsonl

GOOD_LINES = 260
BAD = [
    # (line within the file, the raw line, the reason reported)
    (
        231,
        snli_record("bad-nul", [E, E, N, E, E], caption="nul.jpg#0", premise="A man\u0000 plays."),
        "sentence1 contains a NUL character",
    ),
    (232, snli_record("x" * (MAX_ID_CHARS + 1), [E], caption="long.jpg#0"), f"pairID is {MAX_ID_CHARS + 1} characters"),
    (233, {**snli_record("bad-obj", [E], caption="obj.jpg#0"), "sentence2": {"text": "hi"}}, "sentence2 is not text"),
    (
        234,
        snli_record("bad-huge", [E], caption="huge.jpg#0", hypothesis="word " * (MAX_SENTENCE_CHARS // 4)),
        "sentence2 is",
    ),
    (
        235,
        {**snli_record("bad-labels", [E], caption="lab.jpg#0"), "annotator_labels": [{"a": 1}]},
        "annotator_labels holds something other than labels",
    ),
    (236, {**snli_record("bad-id", [E], caption="id\u0000.jpg#0")}, "captionID contains a NUL character"),
]


@pytest.fixture
def corpus_file(tmp_path, db):
    ensure_genres("captions")
    records = [snli_record(f"p{i}", [E, N, C, E, E] if i % 2 else [N], caption=f"{i}.jpg#0") for i in range(GOOD_LINES)]
    for line, record, _ in BAD:
        records.insert(line - 1, record)
    return write_jsonl(tmp_path / "bad_lines_dev.jsonl", records)


def test_bad_lines_are_skipped_by_line_number_and_the_rest_is_imported(corpus_file):
    # Chunks of 50: the bad lines come long after the first chunks were committed.
    report = import_pairs_file(corpus_file, "snli-bad", chunk_size=50)
    reasons = dict(report.malformed)
    assert sorted(reasons) == [line for line, _, _ in BAD]
    for line, _, reason in BAD:
        assert reason in reasons[line], (line, reasons[line])
    assert Pair.objects.count() == report.pairs_created == GOOD_LINES
    assert Premise.objects.count() == GOOD_LINES
    assert ValidationLabel.objects.count() == report.labels_created == (GOOD_LINES // 2) * 5 + GOOD_LINES // 2
    run = CorpusImport.objects.get()
    assert run.status == ImportStatus.DONE and run.malformed_count == len(BAD)
    assert [line for line, _ in run.problems] == [line for line, _, _ in BAD]
    assert not Pair.objects.filter(pair_id__startswith="bad").exists()
    assert not any("\x00" in text for text in Premise.objects.values_list("text", flat=True))


def test_a_non_utf8_line_is_reported_and_skipped(tmp_path, db):
    ensure_genres("captions")
    path = write_jsonl(tmp_path / "latin_dev.jsonl", [snli_record("ok1", [E])])
    with open(path, "ab") as handle:
        handle.write(b'{"pairID": "caf\xe9"}\n')
    report = import_pairs_file(path, "snli-latin")
    assert report.pairs_created == 1 and report.malformed[0][0] == 2 and "not UTF-8" in report.malformed[0][1]
