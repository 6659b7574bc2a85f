"""MPE's TSV (importers.mpe) on the released train and dev files, and its rules on worked examples.

Expected figures are those of ../shared/data/README.md and of the MPE paper (Lai et al. 2017).
No database: these tests exercise a pure module.
"""

from statistics import mean

import pytest

from corpus.gold import ENTAILMENT_CONTRADICTION_3_2, TWO_TWO_ONE
from importers import mpe
from tests.conftest import shared_file

README_COUNTS = {
    "train": {"entailment": 2584, "contradiction": 3324, "neutral": 2092},
    "dev": {"entailment": 325, "contradiction": 402, "neutral": 273},
}
MALFORMED_DEV_LINE = 468  # ID 467: "...\t1\t1\t3   contradiction"


def mpe_path(split):
    return shared_file(f"mpe/mpe_{split}.txt")


def raw_lines(path):
    """The file's lines by 1-based number, read without the module under test."""
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return dict(enumerate(text[:-1].split("\n"), start=1))


@pytest.fixture(scope="module")
def dev():
    return mpe.read_mpe(mpe_path("dev"))


@pytest.fixture(scope="module")
def train():
    return mpe.read_mpe(mpe_path("train"))


# --- counts against the README ---------------------------------------------------------------


def test_train_counts_and_unanimous_share_equal_the_readme(train):
    assert train.problems == []
    stats = mpe.mpe_statistics(train.items)
    assert stats.items == 8000
    assert stats.label_counts == README_COUNTS["train"]
    assert round(100 * stats.unanimous_share, 2) == 27.55
    # 6176 / 7087 = 87.145%: the README's "87.2%" rounds it twice (87.145 -> 87.15 -> 87.2).
    assert (stats.gold_equals_majority, stats.with_majority) == (6176, 7087)
    assert 100 * stats.gold_equals_majority_share == pytest.approx(87.2, abs=0.06)


def test_dev_counts_equal_the_readme_once_the_malformed_line_is_counted(dev):
    # The reader skips line 468; the README counted it (its label, read by eye, is contradiction).
    stats = mpe.mpe_statistics(dev.items)
    assert stats.items == 999
    skipped_label = dev.problems[0].text.split()[-1]
    assert skipped_label == "contradiction"
    expected = dict(README_COUNTS["dev"], contradiction=README_COUNTS["dev"]["contradiction"] - 1)
    assert stats.label_counts == expected
    assert round(100 * stats.gold_equals_majority_share, 1) == 85.4


def test_dev_counts_equal_the_readme_with_repair():
    repaired = mpe.read_mpe(mpe_path("dev"), repair=True)
    stats = mpe.mpe_statistics(repaired.items)
    assert stats.items == 1000
    assert stats.label_counts == README_COUNTS["dev"]
    assert round(100 * stats.gold_equals_majority_share, 1) == 85.4
    assert [(problem.line, problem.repaired) for problem in repaired.problems] == [(MALFORMED_DEV_LINE, True)]
    item = next(item for item in repaired.items if item.line == MALFORMED_DEV_LINE)
    assert (item.item_id, item.judgments, item.gold_label) == ("467", mpe.Judgments(1, 1, 3), "contradiction")


def test_unanimous_share_counts_five_of_five(dev):
    lines = raw_lines(mpe_path("dev"))
    five_of_five = sum(
        1
        for number, line in lines.items()
        if number > 1 and number != MALFORMED_DEV_LINE and "5" in line.split("\t")[6:9]
    )
    assert mpe.mpe_statistics(dev.items).unanimous == five_of_five


# --- malformed lines -------------------------------------------------------------------------


def test_dev_line_468_is_reported_by_number_with_the_reason_and_skipped(dev):
    assert len(dev.problems) == 1
    problem = dev.problems[0]
    assert problem.line == MALFORMED_DEV_LINE
    assert not problem.repaired
    assert "9 tab-separated fields, expected 10" in problem.reason
    assert "3 spaces where a tab belongs" in problem.reason
    assert problem.text == raw_lines(mpe_path("dev"))[MALFORMED_DEV_LINE]
    assert "467" not in {item.item_id for item in dev.items}


GOOD_FIELDS = "1\ta.jpg#0/A.\tb.jpg#1/B.\tc.jpg#2/C.\td.jpg#3/D.\tH."  # ID, four premises, hypothesis


@pytest.mark.parametrize(
    "line, reason",
    [
        (GOOD_FIELDS + "\t3\t2\t0", "9 tab-separated fields"),
        (GOOD_FIELDS.replace("a.jpg#0/", "") + "\t3\t2\t0\tentailment", "premise1 lacks the 'imageid#n/' prefix"),
        (GOOD_FIELDS + "\tthree\t2\t0\tentailment", "entailment_judgments is not a count"),
        (GOOD_FIELDS + "\t3\t2\t1\tentailment", "add up to 6, expected 5"),
        (GOOD_FIELDS + "\t3\t2\t0\tyes", "unknown gold_label 'yes'"),
    ],
)
def test_malformed_lines_say_why(tmp_path, line, reason):
    path = tmp_path / "mpe_bad.txt"
    good = "2\ta.jpg#0/A.\tb.jpg#1/B.\tc.jpg#2/C.\td.jpg#3/D.\tH.\t5\t0\t0\tentailment"
    path.write_text(f"{mpe.HEADER}\n{line}\n{good}\n", encoding="utf-8")
    result = mpe.read_mpe(path)
    assert [item.item_id for item in result.items] == ["2"]
    assert [problem.line for problem in result.problems] == [2]
    assert reason in result.problems[0].reason


def test_a_file_without_mpe_header_is_refused(tmp_path):
    path = tmp_path / "not_mpe.txt"
    path.write_text("gold_label\tsentence1\tsentence2\n", encoding="utf-8")
    with pytest.raises(mpe.MpeFormatError, match="not MPE's header"):
        mpe.read_mpe(path)


# --- round trip ------------------------------------------------------------------------------


@pytest.mark.parametrize("split", ["train", "dev"])
def test_every_well_formed_line_round_trips_byte_for_byte(split, tmp_path):
    path = mpe_path(split)
    result = mpe.read_mpe(path)
    lines = raw_lines(path)
    bad = {problem.line for problem in result.problems}
    assert [item.line for item in result.items] == [number for number in lines if number > 1 and number not in bad]
    for item in result.items:
        assert mpe.format_line(item) == lines[item.line], f"line {item.line}"

    written = tmp_path / path.name
    mpe.write_mpe(written, result.items)
    expected = "".join(f"{line}\n" for number, line in lines.items() if number not in bad)
    assert written.read_bytes() == expected.encode("utf-8")


def test_premise_prefixes_are_split_out_and_kept(dev):
    first = dev.items[0]
    assert first.item_id == "1"
    assert first.premises[0] == mpe.MpePremise(
        "4818829454.jpg", 0, "A woman in summer attire is walking with her bike along what may be a boardwalk."
    )
    assert [premise.caption_number for premise in first.premises] == [0, 1, 3, 4]
    assert first.premises[3].prefix == "4818829454.jpg#4/"
    assert first.judgments == mpe.Judgments(entailment=3, neutral=0, contradiction=2)


# --- adjudication ----------------------------------------------------------------------------


def expected_adjudication_ids(path):
    """Items with no 3-of-5 label, or 3-2 between entailment and contradiction, from the raw counts."""
    expected = {}
    for number, line in raw_lines(path).items():
        fields = line.split("\t")
        if number == 1 or len(fields) != 10:
            continue
        e, n, c = (int(value) for value in fields[6:9])
        if max(e, n, c) < 3:
            expected[fields[0]] = TWO_TWO_ONE
        elif sorted((e, c)) == [2, 3]:
            expected[fields[0]] = ENTAILMENT_CONTRADICTION_3_2
    return expected


def test_dev_adjudication_queue_holds_exactly_the_2_2_1_and_3_2_ec_items(dev):
    queue = mpe.adjudication_queue(dev.items)
    assert {item.item_id: reason for item, reason in queue} == expected_adjudication_ids(mpe_path("dev"))
    assert len(queue) == 129 + 88
    assert all(item.judgments.split in {(2, 2, 1), (3, 2, 0)} for item, _ in queue)


@pytest.mark.parametrize(
    "counts, majority, reason",
    [
        ((5, 0, 0), "entailment", None),
        ((1, 4, 0), "neutral", None),
        ((1, 1, 3), "contradiction", None),
        ((3, 0, 2), "entailment", ENTAILMENT_CONTRADICTION_3_2),
        ((2, 0, 3), "contradiction", ENTAILMENT_CONTRADICTION_3_2),
        ((3, 2, 0), "entailment", None),  # 3-2 against neutral: the majority stands
        ((0, 3, 2), "neutral", None),
        ((2, 2, 1), None, TWO_TWO_ONE),
        ((1, 2, 2), None, TWO_TWO_ONE),
    ],
)
def test_majority_of_five_and_adjudication_rule(counts, majority, reason):
    judgments = mpe.Judgments(*counts)
    assert mpe.majority_label(judgments) == majority
    assert mpe.adjudication_reason(judgments) == reason


# --- word overlap ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "premises, hypothesis, overlap",
    [
        # content words dog, running; "dog" is in a premise, "running" is not ("runs" is another form)
        (["A dog runs on the beach.", "Two dogs play."], "The dog is running.", 0.5),
        (["A dog runs on the beach."], "A dog on a beach.", 1.0),
        (["A dog runs on the beach."], "Cats sleep.", 0.0),
        # tokens count with repetition: girl, hugs, girl
        (["A girl smiles."], "A girl hugs a girl.", 2 / 3),
        # lower-cased, punctuation splits: red, haired, woman
        (["A RED car."], "Red-haired woman.", 1 / 3),
        # only stop words: nothing can overlap
        (["It is here."], "It is.", 0.0),
        # MPE dev item 1: woman, pushing, bicycle; only "woman" is in the premises
        (
            [
                "A woman in summer attire is walking with her bike along what may be a boardwalk.",
                "A girl in a white shirt, walking beside her bike.",
                "A woman walking a bike down a busy sidewalk.",
                "A woman carrying her bike through a crowd.",
            ],
            "Woman pushing a bicycle.",
            1 / 3,
        ),
    ],
)
def test_word_overlap_on_hand_worked_examples(premises, hypothesis, overlap):
    assert mpe.word_overlap(premises, hypothesis) == pytest.approx(overlap)


def test_overlap_accepts_parsed_premises_and_a_custom_stop_list(dev):
    item = dev.items[0]
    assert mpe.word_overlap(item.premises, item.hypothesis) == pytest.approx(1 / 3)
    # without stop-word removal "a" counts too: woman, pushing, a, bicycle -> woman and a
    assert mpe.word_overlap(item.premises, item.hypothesis, stop_words=frozenset()) == pytest.approx(2 / 4)


def test_overlap_of_train_reproduces_the_papers_table_1(train):
    by_label: dict[str, list[float]] = {label: [] for label in mpe.LABELS}
    for item in train.items:
        by_label[item.gold_label].append(mpe.word_overlap(item.premises, item.hypothesis))
    everything = [value for values in by_label.values() for value in values]
    assert round(mean(everything), 2) == 0.28
    assert {label: round(mean(values), 2) for label, values in by_label.items()} == {
        "entailment": 0.34,
        "neutral": 0.28,
        "contradiction": 0.23,
    }
