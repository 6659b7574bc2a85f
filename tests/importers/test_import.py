"""import_pairs: SNLI/MultiNLI JSONL and TSV files become premises, pairs and labels."""

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset, Pair, Premise, ValidationLabel
from corpus.recompute import recompute_gold
from importers.formats import split_from_filename
from importers.services import CorpusImportError, import_pairs_file
from tests.importers.helpers import C, E, N, ensure_genres, snli_record, write_jsonl
from tests.present import present

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def genres(db):
    return ensure_genres("captions", "fiction", "government", "telephone", "slate")


def table_counts():
    return (Premise.objects.count(), Pair.objects.count(), ValidationLabel.objects.count())


def labels_of(pair_id):
    return list(
        ValidationLabel.objects.filter(pair__pair_id=pair_id)
        .order_by("position")
        .values_list("position", "label", "worker")
    )


@pytest.fixture
def snli_file(tmp_path):
    return write_jsonl(
        tmp_path / "snli_1.0_dev.jsonl",
        [
            snli_record("1.jpg#0r1e", [E, E, E, N, E]),  # line 1
            snli_record("1.jpg#0r1n", [N, "", E, N, N]),  # line 2: one empty label
            '{"annotator_labels": ["neutral"], "pairID": ',  # line 3: bad JSON
            "",  # line 4: blank, ignored
            {**snli_record("2.jpg#0r1c", [C, C, C, C, C], caption="2.jpg#0"), "sentence2": ""},  # line 5: no hypothesis
            snli_record("2.jpg#0r1x", ["maybe", E, E, E, E], caption="2.jpg#0"),  # line 6: unknown author label
            {**snli_record("3.jpg#0r1e", [E], caption="3.jpg#0"), "genre": "poetry"},  # line 7: unknown genre
            snli_record("1.jpg#0r1c", [C, C, N, E, N]),  # line 8: no gold
            snli_record("1.jpg#0r1e", [E, E, E, E, E]),  # line 9: repeated pairID
        ],
    )


def test_jsonl_rows_become_pairs_and_malformed_lines_are_reported_by_number(snli_file):
    report = import_pairs_file(snli_file, "snli")
    assert [line for line, _ in report.malformed] == [3, 5, 6, 7, 9]
    reasons = dict(report.malformed)
    assert "JSON" in reasons[3] and "sentence2" in reasons[5] and "'maybe'" in reasons[6]
    assert "'poetry'" in reasons[7] and "line 1" in reasons[9]
    assert (report.pairs_created, report.premises_created, report.labels_created) == (3, 1, 14)
    assert report.labels_skipped == 1 and report.split == "dev"

    dataset = Dataset.objects.get(slug="snli")
    assert dataset.is_imported
    premise = Premise.objects.get(dataset=dataset, prompt_id="1.jpg#0")
    assert (premise.genre.slug, premise.split, premise.text) == ("captions", "dev", "A man plays a guitar.")
    assert premise.parse.startswith("(ROOT") and premise.text_hash

    pair = Pair.objects.get(pair_id="1.jpg#0r1n")
    assert (pair.author_label, pair.label_count, pair.gold_label, pair.needs_validation) == (N, 4, N, True)
    assert (pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes) == (1, 3, 0)
    assert pair.binary_parse.startswith("( ( A man )")
    # The empty label is skipped; positions stay 1..n with the author's label first.
    assert labels_of("1.jpg#0r1n") == [(1, N, None), (2, E, None), (3, N, None), (4, N, None)]
    assert Pair.objects.get(pair_id="1.jpg#0r1c").gold_label == "-"
    # The importer's counters agree with a recompute from the label table.
    assert recompute_gold().disagreements == 0


def test_reimporting_a_file_changes_nothing(snli_file):
    first = import_pairs_file(snli_file, "snli")
    before = table_counts()
    again = import_pairs_file(snli_file, "snli")
    assert table_counts() == before
    assert (again.pairs_created, again.premises_created, again.labels_created) == (0, 0, 0)
    assert again.already_present == first.pairs_created == 3
    assert "already present, skipped: 3" in again.summary()


def test_small_chunks_share_premises_across_chunks(tmp_path):
    path = write_jsonl(
        tmp_path / "snli_1.0_test.jsonl",
        [snli_record(f"9.jpg#0r{i}", [E, E, E, E, E], caption="9.jpg#0") for i in range(7)],
    )
    report = import_pairs_file(path, "snli", chunk_size=2)
    assert (report.pairs_created, report.premises_created, report.split) == (7, 1, "test")
    assert Premise.objects.get(prompt_id="9.jpg#0").pairs.count() == 7


MULTINLI_HEADER = [
    "gold_label",
    "sentence1_binary_parse",
    "sentence2_binary_parse",
    "sentence1_parse",
    "sentence2_parse",
    "sentence1",
    "sentence2",
    "promptID",
    "pairID",
    "genre",
    "label1",
    "label2",
    "label3",
    "label4",
    "label5",
]


def tsv_line(fields):
    return "\t".join(fields) + "\n"


def test_multinli_tsv_keeps_quotes_and_rejects_stray_tabs(tmp_path):
    quoted = '"Yes," he said, "it\'s a ""fine"" day.'
    rows = [
        MULTINLI_HEADER,
        [
            "neutral",
            "( a b )",
            "( c d )",
            "(ROOT a)",
            "(ROOT c)",
            quoted,
            'He said "no".',
            "31193",
            "31193n",
            "government",
            "neutral",
            "neutral",
            "entailment",
            "neutral",
            "contradiction",
        ],
        [
            "entailment",
            "( x )",
            "( y )",
            "(ROOT x)",
            "(ROOT y)",
            "A line with a\ttab.",
            "Hyp.",
            "100",
            "100e",
            "fiction",
            "entailment",
            "",
            "",
            "",
            "",
        ],
        [
            "entailment",
            "( x )",
            "( y )",
            "(ROOT x)",
            "(ROOT y)",
            "Premise two.",
            "Hyp two.",
            "200",
            "200e",
            "telephone",
            "entailment",
            "",
            "",
            "",
            "",
        ],
        [
            "-",
            "( x )",
            "( y )",
            "(ROOT x)",
            "(ROOT y)",
            "Premise two.",
            "Hyp three.",
            "200",
            "200c",
            "telephone",
            "",
            "",
            "",
            "",
            "",
        ],
    ]
    path = tmp_path / "multinli_1.0_dev_matched.txt"
    path.write_text("".join(tsv_line(row) for row in rows), encoding="utf-8")
    report = import_pairs_file(path, "mnli", split="train")  # --split wins over the file name
    assert [line for line, _ in report.malformed] == [3, 5]
    assert "16 tab-separated fields" in dict(report.malformed)[3]
    assert "no labels" in dict(report.malformed)[5]
    pair = Pair.objects.get(pair_id="31193n")
    assert pair.premise.text == quoted and pair.hypothesis == 'He said "no".'
    assert (pair.premise.genre.slug, pair.premise.split, pair.needs_validation) == ("government", "train", False)
    assert [label for _, label, _ in labels_of("31193n")] == [N, N, E, N, C]
    train_pair = Pair.objects.get(pair_id="200e")
    # One label: the file's gold is the pair's (imported, not validated) until validation decides.
    assert (train_pair.label_count, train_pair.gold_label, train_pair.gold_source) == (1, E, "imported")
    # Its file gold (the author's label, by convention for unvalidated pairs) is not a disagreement;
    # the validated 31193n's file gold "neutral" agrees with the rule.
    assert report.gold_differs_from_file == 0
    assert report.labels_skipped == 0  # empty label2..5 cells of train pairs are not labels


def test_glue_mnli_tsv(tmp_path):
    header = [
        "index",
        "promptID",
        "pairID",
        "genre",
        "sentence1_binary_parse",
        "sentence2_binary_parse",
        "sentence1_parse",
        "sentence2_parse",
        "sentence1",
        "sentence2",
        "label1",
        "label2",
        "label3",
        "label4",
        "label5",
        "gold_label",
    ]
    row = [
        "0",
        "63735",
        "63735n",
        "slate",
        "( b )",
        "( c )",
        "(ROOT b)",
        "(ROOT c)",
        "The new rights are nice enough",
        "Everyone really likes the newest benefits ",
        "neutral",
        "entailment",
        "neutral",
        "neutral",
        "neutral",
        "neutral",
    ]
    path = tmp_path / "dev_matched.tsv"
    path.write_text(tsv_line(header) + tsv_line(row), encoding="utf-8")
    report = import_pairs_file(path, "glue-mnli")
    assert report.ok and report.split == "dev" and report.gold_differs_from_file == 0
    path.write_text(
        tsv_line(header) + tsv_line([*row[:-1], "entailment"]).replace("63735n", "63735x"), encoding="utf-8"
    )
    assert import_pairs_file(path, "glue-mnli").gold_differs_from_file == 1
    pair = Pair.objects.get(pair_id="63735n")
    assert (pair.gold_label, pair.label_count, pair.premise.prompt_id) == (N, 5, "63735")
    assert pair.hypothesis == "Everyone really likes the newest benefits "  # verbatim


def test_genre_option_is_used_for_rows_without_a_genre(tmp_path):
    path = write_jsonl(
        tmp_path / "snli_1.0_train.jsonl",
        [
            snli_record("a", [E]),
            {**snli_record("b", [C], caption="5.jpg#1"), "genre": "slate"},
        ],
    )
    report = import_pairs_file(path, "mixed", genre="fiction")
    assert report.ok and report.split == "train"
    assert Pair.objects.get(pair_id="a").premise.genre.slug == "fiction"
    assert Pair.objects.get(pair_id="b").premise.genre.slug == "slate"
    with pytest.raises(CorpusImportError, match="unknown genre 'poems'"):
        import_pairs_file(path, "mixed", genre="poems")


def test_a_premise_never_crosses_splits(tmp_path):
    import_pairs_file(write_jsonl(tmp_path / "a_train.jsonl", [snli_record("t1", [E])]), "snli")
    report = import_pairs_file(write_jsonl(tmp_path / "a_dev.jsonl", [snli_record("d1", [E, E, E, E, E])]), "snli")
    assert report.pairs_created == 0
    assert report.malformed == [(1, "premise 1.jpg#0 is already in split train; a premise stays in one split")]


@pytest.mark.parametrize(
    "name, split",
    [
        ("snli_1.0_dev.jsonl", "dev"),
        ("snli_1.0_test.jsonl", "test"),
        ("multinli_1.0_train.txt", "train"),
        ("multinli_1.0_dev_matched.jsonl", "dev"),
        ("dev_mismatched.tsv", "dev"),
        ("train.tsv", "train"),
        ("test_matched_unlabeled.txt", "test"),
        ("pairs.jsonl", None),
        ("contest.jsonl", None),
    ],
)
def test_split_from_filename(name, split):
    assert split_from_filename(name) == split


def test_command_needs_a_split_it_can_tell_and_prints_a_summary(tmp_path, capsys, snli_file):
    path = write_jsonl(tmp_path / "pairs.jsonl", [snli_record("a", [E])])
    with pytest.raises(CommandError, match="pass --split"):
        call_command("import_pairs", str(path), "--dataset", "snli")
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_pairs", str(tmp_path / "missing.jsonl"), "--dataset", "snli")
    call_command("import_pairs", str(snli_file), "--dataset", "snli", "--no-progress")
    out = capsys.readouterr().out
    assert "pairs created: 3" in out and "line 3: not valid JSON" in out and "malformed lines, skipped: 5" in out


def test_each_run_is_recorded_with_its_progress_and_report(snli_file):
    from corpus.models import ImportStatus
    from importers.models import CorpusImport

    report = import_pairs_file(snli_file, "snli", chunk_size=2)
    record = CorpusImport.objects.get(pk=present(report.import_id))
    assert (record.status, record.source, record.split, record.dataset.slug) == (
        ImportStatus.DONE,
        "snli_1.0_dev.jsonl",
        "dev",
        "snli",
    )
    assert record.bytes_read == record.bytes_total == snli_file.stat().st_size and record.progress == 1.0
    assert (record.pairs_created, record.labels_created, record.labels_skipped, record.malformed_count) == (3, 14, 1, 5)
    assert record.problems[0] == [3, dict(report.malformed)[3]]
    assert record.finished_at is not None


def test_a_failed_run_is_recorded_as_failed(tmp_path):
    from corpus.models import ImportStatus
    from importers.models import CorpusImport

    path = tmp_path / "train.tsv"
    path.write_text("gold_label\tsentence1\n", encoding="utf-8")
    with pytest.raises(CorpusImportError, match="header lacks column"):
        import_pairs_file(path, "broken")
    record = CorpusImport.objects.get(dataset__slug="broken")
    assert record.status == ImportStatus.FAILED and "header lacks column" in record.error
    assert Pair.objects.count() == 0
