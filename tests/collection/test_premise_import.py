"""import_premises: sentence splitting, the drop rules, uniqueness, JSONL, the report."""

import json

import pytest
from django.core.management import CommandError, call_command

from collection.premise_import import import_premises
from collection.premise_text import DropReason
from corpus.models import Dataset, Genre, Premise, PromptFamily
from tests.conftest import shared_file
from tests.present import present

pytestmark = pytest.mark.django_db


def make_genre(slug, is_training):
    family, _ = PromptFamily.objects.get_or_create(
        slug=slug,
        defaults={
            "name": slug.title(),
            "instructions": "Write three sentences.",
            "entailment_prompt": "definitely correct",
            "neutral_prompt": "might be correct",
            "contradiction_prompt": "definitely incorrect",
        },
    )
    genre, _ = Genre.objects.get_or_create(
        slug=slug, defaults={"name": slug.title(), "is_training": is_training, "family": family}
    )
    return genre


@pytest.fixture
def fiction():
    return make_genre("fiction", True)


@pytest.fixture
def letters():
    return make_genre("letters", False)


def write(tmp_path, text, name="source.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def texts(genre, dataset="collected"):
    return set(Premise.objects.filter(genre=genre, dataset__slug=dataset).values_list("text", flat=True))


def assert_adds_up(report):
    assert report.read == report.kept + report.dropped_total
    assert report.kept == sum(counts["kept"] for counts in report.per_file.values())
    assert report.read == sum(counts["read"] for counts in report.per_file.values())


NARRATIVE = "The old house stood at the end of the lane."


@pytest.mark.parametrize(
    "noise, reason, count",
    [
        ("Go now.", DropReason.TOO_SHORT, 1),
        ("x = 3y + 2", DropReason.FORMULA, 1),
        ("f(x) = x^2 + 2x + 1", DropReason.FORMULA, 1),
        ("We know that a ≤ b holds.", DropReason.FORMULA, 1),
        ("Smith, J. (1999). Title of a paper. Journal 12(3): 45–67.", DropReason.REFERENCE, 1),
        ("[12] Jones, K. The book about everything. Oxford University Press, 2001.", DropReason.REFERENCE, 1),
        ("Available at doi:10.1000/xyz123 for all readers.", DropReason.REFERENCE, 1),
        ("Brown et al., 1998, describe the same effect in detail.", DropReason.REFERENCE, 1),
        ("- apples and pears from the garden\n* flour and sugar\n• a little salt", DropReason.LIST_ITEM, 3),
        (
            "1. Mix everything in a large bowl.\n2. Bake it for an hour.\na) then let it cool down",
            DropReason.LIST_ITEM,
            3,
        ),
        ("12  345  678  91011\n-----------------------\n$ 4,500.00 / 17 %", DropReason.SYMBOLS, 3),
        ("CHAPTER ONE", DropReason.HEADING, 1),
        ("The Lost City Of Gold", DropReason.HEADING, 1),
        ("We found the following:", DropReason.HEADING, 1),
    ],
)
def test_each_drop_rule(tmp_path, fiction, noise, reason, count):
    path = write(tmp_path, f"{NARRATIVE}\n\n{noise}\n\nShe closed the door behind her and walked away.\n")
    report = import_premises([path], genre="fiction")
    assert dict(report.dropped) == {reason: count}
    assert texts(fiction) == {NARRATIVE, "She closed the door behind her and walked away."}
    assert report.kept == 2
    assert_adds_up(report)


def test_wrapped_lines_are_joined_and_paragraphs_split_into_sentences(tmp_path, fiction):
    path = write(
        tmp_path,
        "The old house stood at the end of the lane, and nobody had lived\n"
        "in it for years. It was well-\n"
        "known in the village. He moved to\n"
        "New York City. Then the score was 3 to\n"
        "2. Mr. Brown arrived at 3 p.m. with the U.S. delegation and\n"
        "- to everyone's surprise - his dog.\n",
    )
    report = import_premises([path], genre="fiction")
    assert texts(fiction) == {
        "The old house stood at the end of the lane, and nobody had lived in it for years.",
        "It was well-known in the village.",
        "He moved to New York City.",
        "Then the score was 3 to 2.",
        "Mr. Brown arrived at 3 p.m. with the U.S. delegation and - to everyone's surprise - his dog.",
    }
    assert report.dropped_total == 0
    assert_adds_up(report)


def test_heading_glued_to_a_paragraph_and_a_reference_list_are_cut_out(tmp_path, fiction):
    path = write(
        tmp_path,
        "CHAPTER ONE\n"
        "It was a dark and stormy night in the city.\n\n"
        "References\n"
        "Smith, J. (1999). A study of things that happen in the\n"
        "    world. Journal of Studies 12(3): 45–67.\n"
        "Jones, K. (2001). Another long title about the same thing.\n"
        "    Oxford University Press.\n",
    )
    report = import_premises([path], genre="fiction")
    assert texts(fiction) == {"It was a dark and stormy night in the city."}
    assert report.dropped == {DropReason.HEADING: 2, DropReason.REFERENCE: 2}
    assert_adds_up(report)


def test_dialogue_after_a_dash_and_words_among_symbols_stay(tmp_path, fiction):
    path = write(
        tmp_path,
        "He put the menu down. - How did you find your luncheon, sir?\n\n"
        "! ! ! ! ! ! ! so go and get dancing tonight ! ! ! ! !\n",
    )
    report = import_premises([path], genre="fiction")
    kept = texts(fiction)
    assert {"He put the menu down.", "- How did you find your luncheon, sir?"} <= kept
    # The line is not dropped whole as symbols: its words reach the sentence rules.
    assert any("so go and get dancing tonight" in text for text in kept)
    assert DropReason.LIST_ITEM not in report.dropped
    assert_adds_up(report)


def test_list_item_continuation_lines_go_with_the_item(tmp_path, fiction):
    path = write(
        tmp_path,
        "Bring these things along:\n"
        "- a tent that sleeps four people\n"
        "  and its poles and pegs\n"
        "- a stove\n"
        "Then we walked for hours along the river bank.\n",
    )
    report = import_premises([path], genre="fiction")
    assert texts(fiction) == {"Then we walked for hours along the river bank."}
    assert report.dropped == {DropReason.HEADING: 1, DropReason.LIST_ITEM: 2}
    assert_adds_up(report)


def test_duplicates_within_a_file_and_whitespace_normalised(tmp_path, fiction):
    path = write(tmp_path, f"{NARRATIVE}\n\nThe  old house stood at the end\nof the lane.\n\n{NARRATIVE}\n")
    report = import_premises([path], genre="fiction")
    assert report.kept == 1
    assert report.dropped == {DropReason.DUPLICATE_IN_IMPORT: 2}
    assert_adds_up(report)


def test_unique_within_a_genre_across_imports_but_not_across_genres(tmp_path, fiction, letters):
    path = write(tmp_path, f"{NARRATIVE} She closed the door behind her.\n")
    first = import_premises([path], genre="fiction")
    again = import_premises([path], genre="fiction")
    other_genre = import_premises([path], genre="letters")
    assert first.kept == 2
    assert again.kept == 0 and again.dropped == {DropReason.DUPLICATE_EARLIER: 2}
    assert other_genre.kept == 2
    assert Premise.objects.filter(genre=fiction).count() == 2
    assert Premise.objects.filter(genre=letters).count() == 2
    # promptIDs stay unique within the dataset although the texts repeat across genres.
    assert Premise.objects.values("prompt_id").distinct().count() == 4
    for report in (first, again, other_genre):
        assert_adds_up(report)


def test_reimport_in_small_batches_adds_nothing(tmp_path, fiction):
    sentences = [
        f"Sentence number {word} tells a little more of the story."
        for word in ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"]
    ]
    path = write(tmp_path, " ".join(sentences[:7]) + "\n\n" + " ".join(sentences) + "\n")
    first = import_premises([path], genre="fiction", batch_size=3)
    assert first.kept == 11 and first.dropped == {DropReason.DUPLICATE_IN_IMPORT: 7}
    second = import_premises([path], genre="fiction", batch_size=3)
    assert second.kept == 0 and second.dropped == {DropReason.DUPLICATE_EARLIER: 11, DropReason.DUPLICATE_IN_IMPORT: 7}
    assert Premise.objects.count() == 11
    premise = Premise.objects.get(text=sentences[0])
    assert premise.source == "source.txt"
    assert premise.prompt_id.startswith("fiction-")
    assert premise.split == ""


def test_separate_datasets_each_get_their_own_copy(tmp_path, fiction):
    path = write(tmp_path, NARRATIVE)
    import_premises([path], genre="fiction")
    report = import_premises([path], genre="fiction", dataset="pilot")
    assert report.kept == 1
    assert Dataset.objects.filter(slug="pilot").exists()
    assert texts(fiction, "pilot") == texts(fiction, "collected") == {NARRATIVE}


def test_jsonl_one_premise_a_line_with_a_malformed_line(tmp_path, fiction):
    lines = [
        json.dumps({"text": "The first premise has two sentences. It is not split.", "promptID": "p1"}),
        json.dumps({"sentence1": "The second premise comes from sentence1.", "promptID": 2}),
        "{not json at all",
        json.dumps({"premise": "The third premise comes from the premise key."}),
        json.dumps(["a list is not an object"]),
        json.dumps({"hypothesis": "no premise key here"}),
        "",
        json.dumps({"sentence1": "The second premise comes from sentence1.", "promptID": 2}),
        json.dumps({"text": "Too short"[:6]}),
        json.dumps({"text": "An entirely different sentence takes a used id.", "promptID": "p1"}),
    ]
    path = write(tmp_path, "\n".join(lines) + "\n", name="premises.jsonl")
    report = import_premises([path], genre="fiction")
    assert [(line, why.split(" (")[0]) for _, line, why in report.malformed] == [
        (3, "not JSON"),
        (5, "not a JSON object"),
        (6, "no text under any of text, sentence1, premise"),
    ]
    assert report.kept == 3
    assert report.dropped == {
        DropReason.DUPLICATE_IN_IMPORT: 1,
        DropReason.TOO_SHORT: 1,
        DropReason.PROMPT_ID_TAKEN: 1,
    }
    assert_adds_up(report)
    by_id = dict(Premise.objects.values_list("prompt_id", "text"))
    assert by_id["p1"] == "The first premise has two sentences. It is not split."
    assert by_id["2"] == "The second premise comes from sentence1."
    assert "The third premise comes from the premise key." in by_id.values()
    assert any("line 3" in line for line in report.lines())


def test_jsonl_promptid_already_held_by_an_earlier_premise(tmp_path, fiction):
    write(tmp_path, json.dumps({"text": NARRATIVE, "promptID": "42"}) + "\n", name="a.jsonl")
    write(
        tmp_path,
        json.dumps({"text": "A different sentence with the same id.", "promptID": "42"}) + "\n",
        name="b.jsonl",
    )
    import_premises([tmp_path / "a.jsonl"], genre="fiction")
    report = import_premises([tmp_path / "b.jsonl"], genre="fiction")
    assert report.kept == 0 and report.dropped == {DropReason.PROMPT_ID_TAKEN: 1}
    assert Premise.objects.get(prompt_id="42").text == NARRATIVE


def test_command_prints_the_report(tmp_path, fiction, capsys):
    path = write(tmp_path, f"{NARRATIVE}\n\nx = 3y + 2\n")
    call_command("import_premises", str(path), "--genre", "fiction", "--no-progress")
    out = capsys.readouterr().out
    assert "sentences read: 2" in out and "kept:           1" in out and "formula: 1" in out
    call_command("import_premises", str(path), "--genre", "fiction", "--dataset", "other", "--progress")
    assert Premise.objects.filter(dataset__slug="other").count() == 1


def test_unknown_genre_lists_the_known_ones(tmp_path, fiction, letters):
    path = write(tmp_path, NARRATIVE)
    with pytest.raises(CommandError) as error:
        call_command("import_premises", str(path), "--genre", "poetry")
    assert "poetry" in str(error.value) and "fiction" in str(error.value) and "letters" in str(error.value)
    assert not Premise.objects.exists()


def test_a_bad_file_stops_the_import_before_anything_is_written(tmp_path, fiction):
    good = write(tmp_path, NARRATIVE, name="good.txt")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Caf\xe9 au lait is served on the terrace.".encode("latin-1"))
    with pytest.raises(CommandError) as error:
        call_command("import_premises", str(good), str(latin1), str(tmp_path / "missing.txt"), "--genre", "fiction")
    message = str(error.value)
    assert "latin1.txt: not UTF-8" in message and "missing.txt: no such file" in message
    assert not Premise.objects.exists()


def test_dnc_contexts_as_running_text(tmp_path, fiction):
    rows = json.loads(shared_file("dnc/dev/recast_sentiment_data.json").read_text())
    contexts = list(dict.fromkeys(row["context"] for row in rows))
    paragraphs = [" ".join(contexts[i : i + 4]) for i in range(0, len(contexts), 4)]
    path = write(tmp_path, "\n\n".join(paragraphs) + "\n", name="dnc_sentiment.txt")
    report = import_premises([path], genre="fiction", batch_size=250)
    assert_adds_up(report)
    stored = list(Premise.objects.values_list("text", flat=True))
    assert report.kept == len(stored) == len(set(stored))
    assert all(len(text) >= 8 for text in stored)
    # Every context is a sentence or two of ordinary prose, so nearly all of them survive.
    assert report.read >= len(contexts)
    assert report.kept >= 0.9 * len(contexts)
    again = import_premises([path], genre="fiction")
    assert again.kept == 0 and again.dropped[DropReason.DUPLICATE_EARLIER] == report.kept


def test_sentence_splitting_in_worker_processes_gives_the_same_result(tmp_path, fiction):
    paragraph = (
        "Chapter {n}\n\nThe old house number {n} stood at the end of the lane. Nobody had lived\n"
        "in it for years. Mr. Brown arrived at 3 p.m. with the U.S. delegation.\n\n"
        "- item {n} of a list\nx = {n}y + 2\n\n"
    )
    path = write(tmp_path, "".join(paragraph.format(n=n) for n in range(300)))
    alone = import_premises([path], genre="fiction", dataset="alone")
    pooled = import_premises([path], genre="fiction", dataset="pooled", jobs=2, batch_size=100)
    assert (alone.read, alone.kept, alone.dropped) == (pooled.read, pooled.kept, pooled.dropped)
    assert alone.kept == 300 + 2  # the numbered sentences, and the two repeated ones once each
    assert list(Premise.objects.filter(dataset__slug="alone").order_by("id").values_list("text", "prompt_id")) == list(
        Premise.objects.filter(dataset__slug="pooled").order_by("id").values_list("text", "prompt_id")
    )


@pytest.mark.django_db(transaction=True)
def test_two_imports_of_one_file_at_once_insert_each_sentence_once(tmp_path):
    import threading

    from django.db import connection

    make_genre("fiction", True)
    Dataset.objects.get_or_create(slug="collected", defaults={"name": "collected"})
    sentences = [f"Sentence {n} of the shared file tells the story on." for n in range(400)]
    path = write(tmp_path, " ".join(sentences) + "\n")
    reports, errors = [], []

    def run():
        try:
            reports.append(import_premises([path], genre="fiction", batch_size=50))
        except Exception as error:  # surfaced below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert Premise.objects.count() == 400
    assert sum(report.kept for report in reports) == 400
    assert sum(report.dropped[DropReason.DUPLICATE_EARLIER] for report in reports) == 400


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_is_reported_after_each_batch(tmp_path, fiction, jobs):
    text = "".join(f"Paragraph {n} has one sentence about the weather today.\n\n" for n in range(200))
    jsonl = "".join(json.dumps({"text": f"Record {n} is a premise from a JSONL file."}) + "\n" for n in range(50))
    paths = [write(tmp_path, text), write(tmp_path, jsonl, name="more.jsonl")]
    seen = []
    report = import_premises(
        paths, genre="fiction", batch_size=40, jobs=jobs, on_batch=lambda r: seen.append((r.bytes_read, r.kept))
    )
    assert report.bytes_total == sum(path.stat().st_size for path in paths)
    assert len(seen) >= 250 // 40
    assert seen == sorted(seen)  # never goes back
    assert seen[-1] == (report.bytes_total, 250)
    assert 0 < seen[0][0] < report.bytes_total


def test_an_import_records_its_progress_batch_by_batch_and_its_report(tmp_path, fiction):
    from collection.models import PremiseImport
    from corpus.models import ImportStatus

    sentences = [f"The courier number {n} crossed the bridge before the bells rang at noon." for n in range(60)]
    path = write(tmp_path, "\n\n".join(sentences) + "\n\nShort.\n")
    seen = []

    def watch(report):
        row = PremiseImport.objects.get()
        seen.append((row.status, row.bytes_read, row.kept))

    report = import_premises([path], "fiction", batch_size=10, on_batch=watch)

    row = PremiseImport.objects.get(pk=present(report.import_id))
    assert (row.status, row.progress, row.bytes_read) == (ImportStatus.DONE, 1.0, path.stat().st_size)
    assert (row.sentences_read, row.kept, row.dropped) == (report.read, report.kept, report.dropped_total)
    assert row.drop_counts == dict(report.dropped.items())
    assert row.kept == 60 and row.drop_counts == {DropReason.TOO_SHORT: 1}
    # While it ran, the row moved forward with every committed batch of ten.
    running = [kept for status, _, kept in seen if status == ImportStatus.RUNNING]
    assert running[:6] == [10, 20, 30, 40, 50, 60]
    assert [read for _, read, _ in seen] == sorted(read for _, read, _ in seen)


def test_an_import_that_stops_is_recorded_as_failed_with_its_error(tmp_path, fiction):
    from collection.models import PremiseImport
    from corpus.models import ImportStatus

    path = write(tmp_path, "\n\n".join(f"A long enough sentence about the harbour, number {n}." for n in range(30)))

    def disk_full(report):
        raise OSError("no space left on device")

    with pytest.raises(OSError):
        import_premises([path], "fiction", batch_size=10, on_batch=disk_full)
    row = PremiseImport.objects.get()
    assert row.status == ImportStatus.FAILED
    assert "no space left on device" in row.error and row.finished_at is not None
