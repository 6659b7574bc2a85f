"""A writing study on an imported corpus: the premises' imported hypotheses count as written, and a
worker's submit never takes a pairID the dataset already has (the benchmark's 500 on "101e")."""

import importlib
import json

import pytest
from django.apps import apps as django_apps
from django.urls import reverse

from collection.models import WritingClaim
from corpus.models import Dataset, Pair, Premise
from corpus.writings import count_writings_of_pairs, unused_pair_ids
from crowd.models import ClaimStatus
from importers.services import import_pairs_file
from tests.collection.writing_helpers import make_study
from tests.conftest import shared_file
from tests.importers.helpers import C, E, N, write_jsonl
from tests.present import present

pytestmark = pytest.mark.django_db

PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc33dd44ee55ff", "SESSION_ID": "s-1"}
WRITTEN = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


def multinli_record(prompt_id, label, premise):
    """One MultiNLI dev line, as bench/import_corpus.py writes them: pairID = promptID + label letter."""
    return {
        "annotator_labels": [label, label, label, label, label],
        "genre": "fiction",
        "gold_label": label,
        "pairID": f"{prompt_id}{label[0]}",
        "promptID": prompt_id,
        "sentence1": premise,
        "sentence2": f"The {label} sentence about premise {prompt_id} is here.",
    }


@pytest.fixture
def imported(tmp_path):
    """MultiNLI dev: premise 101 with its three hypotheses, 102 with two (no contradiction)."""
    records = [
        multinli_record("101", label, "The boat left the harbour at dawn with ten people.") for label in (E, N, C)
    ]
    records += [multinli_record("102", label, "A woman reads a long letter by the window.") for label in (E, N)]
    report = import_pairs_file(write_jsonl(tmp_path / "multinli_dev.jsonl", records), "mnli-bench", split="dev")
    assert report.ok and report.pairs_created == 5
    return Dataset.objects.get(slug="mnli-bench")


def study_on(dataset, slug="mnli-writing"):
    return make_study(dataset, slug=slug, tasks_per_batch=3)


def write_once(client):
    """The worker's next writing task through the pages: the premise served, then the submit's answer."""
    task = client.get(reverse("writing_next"))
    if task.status_code == 200:  # no task left: the friendly page
        return None, task
    assert task.status_code == 302, task.status_code
    claim = WritingClaim.objects.get(token=task["Location"].rstrip("/").split("/")[-1])
    assert client.get(task["Location"]).status_code == 200
    return claim.premise, client.post(task["Location"], WRITTEN)


def test_imported_hypotheses_count_as_written(imported):
    writings = dict(Premise.objects.filter(dataset=imported).values_list("prompt_id", "writings_done"))
    # 101 has one complete writing (a hypothesis of each label); 102 lacks its contradiction.
    assert writings == {"101": 1, "102": 0}


def test_a_premise_whose_imported_writing_is_complete_is_not_served(imported, client):
    client.get(reverse("study_entry", args=[study_on(imported).slug]), PROLIFIC)
    premise, answer = write_once(client)
    # Only 102 has room (one writing a premise); its submit saves beside the imported 102e and 102n.
    assert premise.prompt_id == "102"
    assert answer.status_code == 302
    assert WritingClaim.objects.get(premise=premise).status == ClaimStatus.SUBMITTED
    ids = list(Pair.objects.filter(premise=premise).values_list("pair_id", flat=True))
    assert len(ids) == 5 == len(set(ids)) and {"102e", "102n"} <= set(ids)
    premise.refresh_from_db()
    assert premise.writings_done == 1
    none_left, page = write_once(client)
    assert none_left is None and "No writing tasks right now" in page.content.decode()
    assert not WritingClaim.objects.filter(premise__prompt_id="101").exists()


def test_a_served_premise_with_imported_pairs_saves_with_fresh_pair_ids(imported, client):
    Dataset.objects.filter(pk=imported.pk).update(writings_per_premise=2)
    client.get(reverse("study_entry", args=[study_on(imported).slug]), PROLIFIC)
    served = []
    for _ in range(2):
        premise, answer = write_once(client)
        assert answer.status_code == 302  # saved, never a 500
        served.append(premise.prompt_id)
    assert sorted(served) == ["101", "102"]
    ids = list(Pair.objects.filter(dataset=imported).values_list("pair_id", flat=True))
    assert len(ids) == 11 == len(set(ids))
    # 101's imported pairs are its first writing: the worker's is its second.
    assert {"101e2", "101n2", "101c2"} <= set(ids)
    assert dict(Premise.objects.filter(dataset=imported).values_list("prompt_id", "writings_done")) == {
        "101": 2,
        "102": 1,
    }


def test_unused_pair_ids_keep_a_writing_together_under_one_free_suffix(imported):
    assert unused_pair_ids(imported.pk, ["103e", "103n", "103c"]) == ["103e", "103n", "103c"]
    # 102e and 102n are taken: all three move to the first suffix none of them has.
    assert unused_pair_ids(imported.pk, ["102e", "102n", "102c"]) == ["102e-2", "102n-2", "102c-2"]
    Pair.objects.filter(pair_id="102e").update(pair_id="102e-2")
    assert unused_pair_ids(imported.pk, ["102e", "102n", "102c"]) == ["102e-3", "102n-3", "102c-3"]
    # Another dataset's ids are no obstacle.
    other = Dataset.objects.create(slug="other", name="Other")
    assert unused_pair_ids(other.pk, ["101e"]) == ["101e"]


def test_snli_premises_count_each_labelled_round_as_a_writing(tmp_path):
    """The first lines of SNLI dev: each caption's writings are its fewest hypotheses of one label."""
    lines = shared_file("snli_1.0_dev.jsonl").read_text(encoding="utf-8").splitlines()[:60]
    path = tmp_path / "snli_1.0_dev.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert import_pairs_file(path, "snli-head").pairs_created == 60
    by_premise: dict[str, list[str]] = {}
    for record in map(json.loads, lines):
        by_premise.setdefault(record["captionID"], []).append(record["annotator_labels"][0])
    expected = {caption: min(labels.count(label) for label in (E, N, C)) for caption, labels in by_premise.items()}
    found = dict(Premise.objects.filter(dataset__slug="snli-head").values_list("prompt_id", "writings_done"))
    assert found == expected and any(found.values())


def test_the_migration_repairs_premises_imported_before_and_lowers_none(imported, make_worker):
    """Databases imported before the imports counted writings (importers' migration 0005)."""
    Premise.objects.filter(dataset=imported).update(writings_done=0)
    written = Premise.objects.create(
        dataset=imported, genre=present(Premise.objects.first()).genre, prompt_id="9", text="x."
    )
    Premise.objects.filter(pk=written.pk).update(writings_done=4)  # e.g. adversarial writings: one pair or none each
    migration = importlib.import_module("importers.migrations.0005_count_imported_writings")
    migration.count_imported_writings(django_apps, None)
    assert dict(Premise.objects.values_list("prompt_id", "writings_done")) == {"101": 1, "102": 0, "9": 4}
    assert count_writings_of_pairs() == 0  # the import's own rule agrees: nothing left to raise
