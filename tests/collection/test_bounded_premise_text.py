"""Plain text is read holding a bounded amount whatever its shape: before, text
was held paragraph by paragraph between blank lines, so a file without blank lines was held whole
(a 500 MB one: about 2.9x its size) and, past MAX_PARAGRAPH_FACTOR x the longest premise, dropped
whole as one too-long paragraph. The structural property asserted: the most lines and characters
the reader held at once (premise_text.HeldText); memory itself is bench/upload_memory.py's."""

from collection.premise_import import import_premises
from collection.premise_text import MAX_CHARS, MAX_PARAGRAPH_FACTOR, PARAGRAPH_LINES, DropReason
from corpus.models import Premise
from tests.collection.test_premise_import import make_genre

BOUND = MAX_PARAGRAPH_FACTOR * MAX_CHARS


def sentence(n):
    return f"The ferry number {n} left the harbour before the storm reached the northern coast."


def test_a_file_without_blank_lines_is_read_a_bounded_number_of_lines_at_a_time(db, tmp_path):
    make_genre("fiction", True)
    lines = [sentence(n) for n in range(4000)]  # ~340k characters, one sentence a line, no blank line
    path = tmp_path / "no_blank_lines.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert path.stat().st_size > BOUND  # held whole, it was past the paragraph bound

    report = import_premises([path], "fiction", "ferries")
    assert report.held.most_lines <= PARAGRAPH_LINES
    assert report.held.most_chars <= PARAGRAPH_LINES * len(sentence(9999))
    # Every sentence kept (before: none, the whole file dropped as one paragraph too long).
    assert (report.read, report.kept, report.dropped_total) == (4000, 4000, 0)
    assert Premise.objects.filter(dataset__slug="ferries").count() == 4000


def test_a_huge_line_is_dropped_whole_without_being_held_and_its_neighbours_stay(db, tmp_path):
    make_genre("fiction", True)
    huge = "word " * (3 * BOUND // 5)  # 3x the bound, no sentence end, no line break
    path = tmp_path / "one_huge_line.txt"
    path.write_text(f"{sentence(1)}\n{huge}\n{sentence(2)}\n", encoding="utf-8")

    report = import_premises([path], "fiction", "ferries")
    assert report.held.most_chars <= BOUND
    assert report.kept == 2 and report.dropped[DropReason.TOO_LONG] == 1  # before: one block, nothing kept
    assert report.examples[DropReason.TOO_LONG][0].startswith("word word")


def test_text_running_past_the_bound_without_a_sentence_end_is_dropped_without_being_held(db, tmp_path):
    make_genre("fiction", True)
    fragment = "and the rain kept falling on the empty town square while nobody came"  # no sentence end
    run_on = [fragment] * (2 * BOUND // len(fragment))
    path = tmp_path / "run_on.txt"
    path.write_text("\n".join([sentence(1), "", *run_on, "", sentence(2)]) + "\n", encoding="utf-8")

    report = import_premises([path], "fiction", "ferries")
    assert report.held.most_chars <= BOUND + len(fragment)
    assert report.kept == 2 and report.dropped[DropReason.TOO_LONG] == 1  # as before: one paragraph too long


def test_a_huge_jsonl_line_is_reported_by_its_number_and_not_held(db, tmp_path):
    make_genre("fiction", True)
    path = tmp_path / "premises.jsonl"
    path.write_text(
        f'{{"text": "{sentence(1)}"}}\n{{"text": "{"x" * (BOUND + 10)}"}}\n{{"text": "{sentence(2)}"}}\n',
        encoding="utf-8",
    )
    report = import_premises([path], "fiction", "ferries")
    assert report.kept == 2
    assert report.malformed == [("premises.jsonl", 2, f"over {BOUND} characters")]
