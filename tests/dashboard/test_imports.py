"""The collection page shows premise and corpus imports with their progress."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from collection.models import PremiseImport
from importers.models import CorpusImport


def import_rows(html):
    return re.findall(r'<tr data-kind="(\w+)" data-status="(\w+)">', html)


@pytest.mark.django_db
def test_imports_and_their_progress_are_on_the_collection_page(client, researcher, tmp_path):
    text = tmp_path / "story.txt"
    text.write_text("The lamplighter walked the length of the quay every evening.\n\nNo.\n")
    call_command("import_premises", str(text), "--genre", "fiction", "--no-progress", stdout=StringIO())
    corpus = tmp_path / "tiny_dev.jsonl"
    corpus.write_text(
        json.dumps(
            {
                "annotator_labels": ["neutral"],
                "captionID": "c1",
                "pairID": "c1n",
                "gold_label": "-",
                "sentence1": "A man rides a bicycle down a hill.",
                "sentence2": "The man is late for work.",
            }
        )
        + "\n"
    )
    call_command("import_pairs", str(corpus), "--dataset", "tiny", "--no-progress", stdout=StringIO())
    # One more premise import that is still under way, half read.
    PremiseImport.objects.create(
        dataset=PremiseImport.objects.get().dataset,
        genre=PremiseImport.objects.get().genre,
        source="big.txt",
        bytes_total=1000,
        bytes_read=500,
    )

    client.force_login(researcher)
    html = client.get("/dashboard/").content.decode()

    assert sorted(import_rows(html)) == [("pairs", "done"), ("premises", "done"), ("premises", "running")]
    progress = [float(v) for v in re.findall(r'data-stat="import-progress" data-value="([0-9.]+)"', html)]
    assert sorted(progress) == [0.5, 1.0, 1.0]
    assert "1 kept of 2 sentences, 1 dropped" in html
    assert f"{CorpusImport.objects.get().pairs_created} pairs" in html and "story.txt" in html
