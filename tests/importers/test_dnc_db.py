"""DNC in the database (importers.dnc_import): every released file imports with the README's label
counts, keeps its provenance, and exports back byte for byte (data and metadata)."""

from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db.models import F

from corpus import labels as scheme_labels
from corpus.models import GOLD_MAJORITY, Dataset, LabelScheme, Pair, PairProvenance, ValidationLabel
from importers.dnc_import import DncImportError, dataset_slug_for, export_dnc, import_dnc_file
from tests.conftest import shared_file
from tests.importers.test_dnc_format import README_LABELS, WITHOUT_METADATA
from tests.present import present

pytestmark = pytest.mark.django_db

SCHEMES = {"function_words": LabelScheme.THREE_WAY, "dev/recast_kg_relations": LabelScheme.ORDINAL}


def _labels_in_db(dataset, split):
    """The author labels as the file wrote them, read back from the label table."""
    rows = ValidationLabel.objects.filter(pair__dataset=dataset, pair__premise__split=split, position=1)
    if dataset.label_scheme == LabelScheme.ORDINAL:
        return Counter(rows.values_list("ordinal", flat=True))
    return Counter(
        scheme_labels.to_scheme(dataset.label_scheme, label) for label in rows.values_list("label", flat=True)
    )


@pytest.mark.parametrize("name", sorted(README_LABELS))
def test_every_dnc_file_imports_with_the_readme_counts_and_round_trips_exactly(name, tmp_path):
    data_path = shared_file(f"dnc/{name}_data.json")
    report = import_dnc_file(data_path)
    dataset = Dataset.objects.get(slug=dataset_slug_for(data_path))
    scheme = next((s for prefix, s in SCHEMES.items() if name.startswith(prefix)), LabelScheme.TWO_WAY)
    assert dataset.label_scheme == scheme
    assert report.pairs_created == sum(README_LABELS[name].values())
    assert dict(_labels_in_db(dataset, report.split)) == README_LABELS[name]
    # One label each, DNC's: it is the pair's gold (imported, not validated), whatever the scheme.
    assert not Pair.objects.filter(dataset=dataset).exclude(gold_label=F("author_label")).exists()
    assert not Pair.objects.filter(dataset=dataset).exclude(imported_gold=F("author_label")).exists()

    out_data, out_meta = tmp_path / "data.json", tmp_path / "metadata.json"
    assert export_dnc(dataset, report.split, out_data, out_meta) == report.pairs_created
    assert out_data.read_bytes() == Path(data_path).read_bytes()
    if name in WITHOUT_METADATA:
        assert not out_meta.exists()
    else:
        original_meta = Path(str(data_path).replace("_data.json", "_metadata.json"))
        assert out_meta.read_bytes() == original_meta.read_bytes()


def test_provenance_is_kept_per_pair_and_reimport_changes_nothing():
    data_path = shared_file("dnc/dev/recast_sentiment_data.json")
    import_dnc_file(data_path)
    again = import_dnc_file(data_path)
    assert (again.pairs_created, again.already_present) == (0, 600)
    provenance = PairProvenance.objects.select_related("pair").get(pair__pair_id="509058")
    assert provenance.corpus == "Kotzias et. al. 2015"
    assert provenance.creation_approach == "automatic"
    assert provenance.type_of_inference == "Sentiment"
    assert provenance.corpus_sent_id  # e.g. "amazon_cells_labelled.txt 1"
    assert PairProvenance.objects.filter(pair__dataset__slug="dnc-sentiment").count() == 600


def test_two_way_gold_follows_three_of_five_under_the_scheme():
    from corpus.services import add_label

    import_dnc_file(shared_file("dnc/dev/recast_verbnet_data.json"))
    pair = present(Pair.objects.filter(dataset__slug="dnc-verbnet").order_by("pk").first())
    entailed, _ = scheme_labels.to_stored("two_way", "entailed")
    not_entailed, _ = scheme_labels.to_stored("two_way", "not-entailed")
    author = scheme_labels.to_scheme("two_way", pair.author_label)
    other = not_entailed if author == "entailed" else entailed
    for _ in range(GOLD_MAJORITY):
        add_label(pair, other)
    pair.refresh_from_db()
    assert scheme_labels.to_scheme("two_way", pair.gold_label) != author
    assert pair.contradiction_votes == 0  # two-way votes never land in the third column


def test_a_two_way_dataset_refuses_a_label_outside_its_scheme():
    from corpus.services import LabelRefused, add_label

    import_dnc_file(shared_file("dnc/dev/recast_verbnet_data.json"))
    pair = present(Pair.objects.filter(dataset__slug="dnc-verbnet").first())
    with pytest.raises(LabelRefused, match="not a label of a two_way dataset"):
        add_label(pair, "contradiction")
    assert ValidationLabel.objects.filter(pair=pair).count() == 1


def test_a_file_of_another_scheme_is_refused_whole(tmp_path):
    import_dnc_file(shared_file("dnc/dev/recast_verbnet_data.json"))
    before = Pair.objects.count()
    with pytest.raises(DncImportError, match="holds two_way labels"):
        import_dnc_file(shared_file("dnc/function_words/NLI/nli-spatial_data.json"), dataset="dnc-verbnet")
    assert Pair.objects.count() == before


def test_a_broken_file_imports_nothing_and_says_where(tmp_path):
    bad = tmp_path / "recast_bad_data.json"
    bad.write_text(
        '[{"context": "a", "hypothesis": "b", "label": "maybe", "label-set": null, "binary-label": true,'
        ' "split": "dev", "type-of-inference": "x", "pair-id": 1}]'
    )
    with pytest.raises(DncImportError, match="record 0"):
        import_dnc_file(bad)
    assert not Pair.objects.exists()


def test_commands_import_a_folder_and_export(tmp_path, capsys):
    folder = shared_file("dnc/dev")
    call_command("import_dnc", str(folder / "recast_verbnet_data.json"), str(folder / "recast_sentiment_data.json"))
    call_command("export_dnc", "--dataset", "dnc-verbnet", "--split", "dev", "--out", str(tmp_path))
    assert (tmp_path / "recast_verbnet_data.json").read_bytes() == (folder / "recast_verbnet_data.json").read_bytes()
    assert (tmp_path / "recast_verbnet_metadata.json").read_bytes() == (
        folder / "recast_verbnet_metadata.json"
    ).read_bytes()


def test_the_admin_shows_a_pairs_provenance(client, researcher):
    from django.urls import reverse

    import_dnc_file(shared_file("dnc/dev/recast_verbnet_data.json"))
    pair = present(Pair.objects.filter(dataset__slug="dnc-verbnet").order_by("pk").first())
    client.force_login(researcher)
    page = client.get(reverse("admin:corpus_pair_change", args=[pair.pk])).content.decode()
    provenance = pair.provenance
    assert provenance.corpus and provenance.corpus in page
    assert provenance.creation_approach in page and "Thematic Roles" in page
    listing = client.get(
        reverse("admin:corpus_pairprovenance_changelist"), {"type_of_inference": "Thematic Roles", "q": pair.pair_id}
    )
    assert listing.status_code == 200
    assert f"{pair.pair_id}: " in listing.content.decode()


def test_kg_relations_exports_in_the_multinli_format_with_its_scheme_in_the_manifest():
    import json as json_module

    from modeling.snapshots.format import read_manifest
    from modeling.snapshots.services import create_snapshot, export_snapshot

    import_dnc_file(shared_file("dnc/dev/recast_kg_relations_data.json"))
    snapshot = export_snapshot(
        create_snapshot(None, datasets=["dnc-kg-relations"], filters={"unvalidated_gold": "author-all"})
    )
    manifest = read_manifest(snapshot.directory)
    assert manifest["label_scheme"] == "ordinal" and manifest["labels"] == ["entailed", "not-entailed"]
    rows = [json_module.loads(line) for line in (Path(snapshot.directory) / "dev.jsonl").read_text().splitlines()]
    # README: 5 -> 916 (entailed); 1-4 -> 870 + 449 + 160 + 71 = 1550 (not-entailed).
    assert Counter(row["gold_label"] for row in rows) == {"entailed": 916, "not-entailed": 1550}
    assert Counter(row["annotator_labels"][0] for row in rows) == {"5": 916, "3": 870, "4": 449, "1": 160, "2": 71}
