"""MPE in the database: import of the released files, the round trip, and building items from captions.

Expected figures are ../shared/data/README.md's.
"""

import pytest
from django.core.management import CommandError, call_command

from corpus import tallies
from corpus.agreement import mpe_statistics
from corpus.gold import ENTAILMENT_CONTRADICTION_3_2, TWO_TWO_ONE
from corpus.models import Adjudication, AdjudicationSource, Dataset, ItemKind, Pair, Premise, ValidationLabel
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from corpus.selectors import adjudication_queue
from importers import mpe
from importers.models import CorpusImport
from importers.mpe_items import (
    build_mpe_items,
    export_mpe,
    import_mpe_file,
    judgment_labels,
)
from importers.services import CorpusImportError
from tests.conftest import shared_file
from tests.importers.helpers import ensure_genres
from tests.present import present

pytestmark = pytest.mark.django_db

README_COUNTS = {
    "train": {"entailment": 2584, "contradiction": 3324, "neutral": 2092},
    "dev": {"entailment": 325, "contradiction": 402, "neutral": 273},
}


@pytest.fixture(autouse=True)
def genres(db):
    return ensure_genres("captions")


def mpe_path(split):
    return shared_file(f"mpe/mpe_{split}.txt")


def test_dev_imports_with_readme_counts_line_468_reported_and_gold_kept(tmp_path):
    report = import_mpe_file(mpe_path("dev"), "mpe")
    assert [(line, repaired) for line, _, repaired in report.problems] == [(468, True)]
    assert "3 spaces where a tab belongs" in report.problems[0][1]
    assert report.pairs_created == 1000 and report.labels_created == 5000
    record = CorpusImport.objects.get(pk=present(report.import_id))  # what the admin shows of the run
    assert (record.status, record.lines_read, record.pairs_created) == ("done", 1001, 1000)
    assert record.problems[0][0] == 468 and "repaired" in record.problems[0][1]
    dataset = Dataset.objects.get(slug="mpe")
    assert dataset.item_kind == ItemKind.MULTI_PREMISE
    assert tallies.check_and_rebuild(dataset, repair=False).keys == 0  # its premises are counted like any import's

    stats = mpe_statistics(Scope.of_dataset(dataset, "dev"))
    assert stats.label_counts == README_COUNTS["dev"]
    expected = mpe.mpe_statistics(mpe.read_mpe(mpe_path("dev"), repair=True).items)
    assert stats.unanimous == expected.unanimous
    assert round(stats.gold_equals_majority_share * 100, 1) == 85.4  # the README: 85.4 %

    # Every row's gold label survives the round trip, and well-formed lines come back byte for byte.
    out = tmp_path / "mpe_dev.txt"
    assert export_mpe(dataset, out, split="dev") == 1000
    original = mpe_path("dev").read_text(encoding="utf-8").split("\n")
    exported = out.read_text(encoding="utf-8").split("\n")
    assert len(exported) == len(original)
    differing = [number for number, (a, b) in enumerate(zip(original, exported, strict=False), start=1) if a != b]
    assert differing == [468]  # the repaired line comes back well formed
    gold = {item.item_id: item.gold_label for item in mpe.read_mpe(mpe_path("dev"), repair=True).items}
    assert {item.item_id: item.gold_label for item in mpe.read_mpe(out).items} == gold


@pytest.mark.slow
def test_train_imports_with_readme_counts_and_unanimous_share(tmp_path):
    report = import_mpe_file(mpe_path("train"), "mpe")
    assert report.problems == [] and report.pairs_created == 8000
    stats = mpe_statistics(Scope.named("mpe", "train"))
    assert stats.label_counts == README_COUNTS["train"]
    assert round(stats.unanimous_share * 100, 2) == 27.55
    # 6176 / 7087 = 87.145 %: the README's "87.2 %" (rounded twice), as in test_mpe_format.
    assert (stats.gold_equals_majority, stats.with_majority) == (6176, 7087)
    out = tmp_path / "mpe_train.txt"
    export_mpe("mpe", out, split="train")
    assert out.read_bytes() == mpe_path("train").read_bytes()


def test_adjudication_queue_holds_exactly_the_221_and_32_ec_items_of_dev():
    import_mpe_file(mpe_path("dev"), "mpe")
    items = mpe.read_mpe(mpe_path("dev"), repair=True).items
    expected = {item.item_id: reason for item, reason in mpe.adjudication_queue(items)}
    queue = adjudication_queue(Scope.of_dataset(Dataset.objects.get(slug="mpe")))
    assert {pair.pair_id: pair.adjudication_reason for pair in queue} == expected
    assert {pair.adjudication_reason for pair in queue} == {TWO_TWO_ONE, ENTAILMENT_CONTRADICTION_3_2}


def test_five_judgments_become_five_label_rows_in_fixed_order_and_file_gold_is_an_adjudication(tmp_path):
    path = tmp_path / "mpe_dev.txt"
    premises = [mpe.MpePremise("9.jpg", n, f"Caption {n} of a dog on grass.") for n in range(4)]
    items = [
        mpe.MpeItem(0, "1", tuple(premises), "A dog sleeps.", mpe.Judgments(1, 2, 2), "neutral"),  # 2-2-1
        mpe.MpeItem(0, "2", tuple(premises), "An animal outside.", mpe.Judgments(4, 1, 0), "entailment"),
        mpe.MpeItem(0, "3", tuple(premises), "A cat indoors.", mpe.Judgments(3, 0, 2), "contradiction"),  # 3-2 E/C
    ]
    mpe.write_mpe(path, items)
    import_mpe_file(path, "mpe")
    pair = Pair.objects.get(pair_id="1")
    assert list(pair.labels.values_list("position", "label")) == list(
        enumerate(["entailment", "neutral", "neutral", "contradiction", "contradiction"], start=1)
    )
    assert judgment_labels(mpe.Judgments(1, 2, 2)) == [
        "entailment",
        "neutral",
        "neutral",
        "contradiction",
        "contradiction",
    ]
    assert (pair.gold_label, pair.adjudicated_label, pair.author_label) == ("neutral", "neutral", "entailment")
    decision = Adjudication.objects.get(pair=pair)
    assert (decision.source, decision.previous_gold, decision.reason) == (AdjudicationSource.FILE, "-", TWO_TWO_ONE)
    assert not Adjudication.objects.filter(pair__pair_id="2").exists()
    third = Pair.objects.get(pair_id="3")
    assert (third.gold_label, Adjudication.objects.get(pair=third).previous_gold) == ("contradiction", "entailment")
    # The one premise set is stored once, with its provenance and its fixed order.
    premise = Premise.objects.get()
    assert premise.prompt_id.startswith("9.jpg#0-1-2-3/")
    assert [s["source"] for s in premise.sentences] == [f"9.jpg#{n}" for n in range(4)]
    assert premise.text == " ".join(p.text for p in premises)
    assert premise.premise_sentences == [p.text for p in premises]
    # A recompute from the label table keeps the adjudicated gold labels.
    assert recompute_gold(Dataset.objects.get(slug="mpe")).disagreements == 0
    assert Pair.objects.get(pair_id="1").gold_label == "neutral"
    # Importing twice adds nothing.
    again = import_mpe_file(path, "mpe")
    assert (again.pairs_created, again.already_present) == (0, 3)
    assert ValidationLabel.objects.count() == 15


def test_malformed_lines_are_skipped_with_their_numbers_without_repair(tmp_path):
    path = tmp_path / "broken_dev.txt"
    good = "\t".join(["1", *(f"7.jpg#{n}/Caption {n}." for n in range(4)), "A thing.", "5", "0", "0", "entailment"])
    path.write_text(
        "\n".join(
            [
                mpe.HEADER,
                good,
                good.replace("\t5\t0\t0\t", "\t5\t0\t1\t").replace("1\t", "2\t", 1),
                good.replace("entailment", "3   entailment").replace("\t0\t0\t3", "\t0\t0 3").replace("1\t", "3\t", 1),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    report = import_mpe_file(path, "mpe", repair=False)
    assert [line for line, _, _ in report.skipped] == [3, 4]
    assert "add up to 6" in report.skipped[0][1]
    assert Pair.objects.count() == 1


def test_a_single_premise_dataset_is_refused(tmp_path):
    from tests.importers.helpers import make_dataset, make_labelled_pairs

    dataset = make_dataset("snli")
    make_labelled_pairs(dataset, [["entailment"]])
    with pytest.raises(CorpusImportError, match="single-premise"):
        import_mpe_file(mpe_path("dev"), dataset)
    with pytest.raises(CommandError, match="single-premise"):
        call_command("export_mpe", "--dataset", "snli", str(tmp_path / "never-written.txt"))


def test_command_imports_and_exports(tmp_path, capsys):
    call_command("import_mpe", str(mpe_path("dev")), "--dataset", "mpe")
    assert "line 468" in capsys.readouterr().out
    out = tmp_path / "out.txt"
    call_command("export_mpe", "--dataset", "mpe", "--split", "dev", str(out))
    assert len(out.read_text().splitlines()) == 1001


def test_building_items_keeps_only_candidates_with_overlap_at_most_half():
    from corpus.models import Genre

    source = Dataset.objects.create(slug="snli", name="snli")
    genre = Genre.objects.get(slug="captions")
    captions = [
        "A brown dog runs on the grass.",
        "A dog is running outside.",
        "A puppy plays in a park.",
        "An animal sprints across a lawn.",
        "A dog chases a ball.",
    ]
    premises = [
        Premise.objects.create(dataset=source, genre=genre, prompt_id=f"55.jpg#{n}", text=text, split="dev")
        for n, text in enumerate(captions)
    ]
    for i, hypothesis in enumerate(["A dog runs.", "A cat sleeps indoors.", "The pet is happy.", "A dog sleeps."]):
        Pair.objects.create(
            dataset=source,
            premise=premises[4],
            pair_id=f"55.jpg#4r{i}",
            hypothesis=hypothesis,
            author_label="entailment",
        )
    # Captions of a scene with four captions or fewer offer no candidates.
    Premise.objects.create(dataset=source, genre=genre, prompt_id="66.jpg#0", text="A man.", split="dev")

    report = build_mpe_items(source, "mpe-built")
    assert (report.scenes, report.candidates, report.kept, report.rejected_overlap) == (1, 4, 3, 1)
    built = {pair.hypothesis: pair for pair in Pair.objects.filter(dataset__slug="mpe-built")}
    # "A dog runs.": overlap 1.0, rejected; "A dog sleeps.": exactly 0.5, kept (the rule is <= 0.5).
    assert set(built) == {"A cat sleeps indoors.", "The pet is happy.", "A dog sleeps."}
    assert built["A dog sleeps."].word_overlap == 0.5
    assert built["A cat sleeps indoors."].word_overlap == 0.0
    assert built["The pet is happy."].word_overlap == mpe.word_overlap(captions[:4], "The pet is happy.")
    pair = built["The pet is happy."]
    assert (pair.label_count, pair.needs_validation, pair.gold_label, pair.author_id) == (0, True, "-", None)
    assert pair.premise.premise_sentences == captions[:4]
    assert [s["source"] for s in pair.premise.sentences] == [f"55.jpg#{n}" for n in range(4)]
    assert build_mpe_items(source, "mpe-built").already_present == 3


def test_admin_shows_the_captions_overlap_and_the_file_adjudication(admin_client, tmp_path):
    path = tmp_path / "mpe_dev.txt"
    premises = tuple(mpe.MpePremise("9.jpg", n, f"Caption {n} of a dog on grass.") for n in range(4))
    mpe.write_mpe(path, [mpe.MpeItem(0, "1", premises, "A dog sleeps on grass.", mpe.Judgments(1, 2, 2), "neutral")])
    import_mpe_file(path, "mpe")
    pair = Pair.objects.get()
    assert pair.word_overlap == pytest.approx(2 / 3)  # dog, grass of dog, sleeps, grass
    html = admin_client.get(f"/admin/corpus/pair/{pair.pk}/change/").content.decode()
    assert "[9.jpg#2] Caption 2 of a dog on grass." in html and "0.666" in html
    assert "the imported file" in html  # the Adjudication inline
    listing = admin_client.get("/admin/corpus/adjudication/").content.decode()
    assert "2-2-1 split" in listing


def test_building_from_a_captions_file_joins_the_sources_hypotheses_by_scene(tmp_path, capsys):
    from corpus.models import Genre

    source = Dataset.objects.create(slug="snli", name="snli")
    genre = Genre.objects.get(slug="captions")
    # The source has one caption of the scene (#2) with its hypotheses; the file has the four others.
    premise = Premise.objects.create(
        dataset=source, genre=genre, prompt_id="77.jpg#2", text="A girl swims.", split="dev"
    )
    for i, hypothesis in enumerate(["A child is in the water.", "A girl swims."]):
        Pair.objects.create(
            dataset=source, premise=premise, pair_id=f"77.jpg#2r{i}", hypothesis=hypothesis, author_label="entailment"
        )
    token = tmp_path / "results.token"
    token.write_text(
        "77.jpg#0\tA kid in a pool.\n77.jpg#1\tSomeone swimming.\nbroken line\n"
        "77.jpg#3\tA young swimmer.\n77.jpg#4\tA girl in goggles swims laps.\n",
        encoding="utf-8",
    )
    call_command("build_mpe_items", "--source", "snli", "--target", "mpe-built", "--captions", str(token))
    out = capsys.readouterr().out
    assert "line 3: expected" in out and "hypothesis candidates: 2" in out
    built = Pair.objects.get(dataset__slug="mpe-built")  # "A girl swims." overlaps 1.0: rejected
    assert built.hypothesis == "A child is in the water."
    assert [s["source"] for s in built.premise.sentences] == ["77.jpg#0", "77.jpg#1", "77.jpg#3", "77.jpg#4"]


def test_the_mpe_page_shows_the_readme_figures_beside_ours_in_every_row(client, researcher):
    import_mpe_file(mpe_path("dev"), "mpe")
    client.force_login(researcher)
    page = client.get("/dashboard/mpe/?dataset=mpe&split=dev").content.decode()
    for label, count in README_COUNTS["dev"].items():
        assert f'data-paper="gold-{label}">{count:,}</td>' in page
    table = page.split('class="mpe-stats"')[1].split("</table>")[0]
    assert "<td></td>" not in table  # no empty comparison cell: a figure, or a dash where MPE gives none
