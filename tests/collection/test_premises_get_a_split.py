"""Premises imported on the dashboard get a split (a writing study on a dashboard
import served nothing, because a writing claim serves only premises with a split and only the shell
gave them one), the imports page assigns splits, and the no-task page never says "every line has
been taken" while the study's lines merely lack a split. Defect 14: the premise form keeps its
choices and asks for a dataset instead of sending premises into the demo's."""

import pytest
from django.urls import reverse

from collection.models import PremiseImport
from collection.premise_import import PremiseImportError, import_premises
from collection.writing_claims import claim_next_premise
from corpus.models import Premise
from crowd.models import Study, StudySession, TaskKind
from tests import factories
from tests.present import present

pytestmark = pytest.mark.django_db

TEXT = (
    "The old man walked slowly down the long road to town. He carried a heavy bag of apples.\n\n"
    "A young woman opened the red door of the bakery. She smiled at the first customer.\n"
)


def writing_study(dataset):
    return Study.objects.create(
        slug="ours", name="Ours", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="C"
    )


def test_premises_imported_into_a_split_are_served_to_a_writer(tmp_path, make_worker):
    factories.genre("fiction")
    path = tmp_path / "ours.txt"
    path.write_text(TEXT)
    dataset = factories.dataset("ours", writings_per_premise=1)
    import_premises([path], "fiction", dataset, split="train")
    assert set(Premise.objects.values_list("split", flat=True)) == {"train"}
    worker = make_worker()
    session = StudySession.objects.create(study=writing_study(dataset), worker=worker, external_session_id="s")
    assert claim_next_premise(worker, study_session=session) is not None


def test_an_unknown_split_is_refused_before_anything_is_imported(tmp_path):
    factories.genre("fiction")
    path = tmp_path / "ours.txt"
    path.write_text(TEXT)
    with pytest.raises(PremiseImportError, match="Unknown split"):
        import_premises([path], "fiction", "ours", split="holdout")
    assert not Premise.objects.exists()


def test_a_preview_of_a_study_whose_lines_have_no_split_says_so_not_that_they_were_taken(client, researcher):
    dataset = factories.dataset("ours", writings_per_premise=1)
    fiction = factories.genre("fiction")
    for _ in range(3):
        factories.premise(dataset, fiction, split="")
    study = writing_study(dataset)
    client.force_login(researcher)
    response = client.post(reverse("study_preview_start", args=[study.slug]), follow=True)
    page = response.content.decode()
    assert "Every line has been taken" not in page
    assert 'id="no-split"' in page and "3 lines without a split" in page


def test_assign_splits_on_the_imports_page_makes_the_lines_servable(client, researcher, make_worker):
    dataset = factories.dataset("ours", writings_per_premise=1)
    fiction = factories.genre("fiction")
    for _ in range(4):
        factories.premise(dataset, fiction, split="")
    client.force_login(researcher)
    page = client.get(reverse("dashboard:imports")).content.decode()
    assert "ours (4 without a split)" in page
    response = client.post(
        reverse("dashboard:assign_splits"), {"dataset": "ours", "dev": "3", "test": "3"}, follow=True
    )
    assert "1 in dev, 1 in test" in response.content.decode()
    assert not Premise.objects.filter(split="").exists()
    worker = make_worker()
    session = StudySession.objects.create(study=writing_study(dataset), worker=worker, external_session_id="s")
    assert claim_next_premise(worker, study_session=session) is not None


def test_the_premise_form_keeps_its_choices_and_asks_for_a_dataset(client, researcher, settings):
    factories.genre("fiction")
    factories.genre("travel")
    client.force_login(researcher)
    page = client.get(reverse("dashboard:imports")).content.decode()
    assert 'placeholder="collected"' not in page  # a placeholder that read as a value (defect 14)
    assert 'name="dataset" list="known-datasets" required' in page
    assert '<option value="train" selected>' in page  # new premises go into train unless told
    upload = pytest.importorskip("django.core.files.uploadedfile").SimpleUploadedFile("ours.txt", TEXT.encode())
    response = client.post(
        reverse("dashboard:imports"),
        {"kind": "premises", "file": upload, "genre": "travel", "dataset": "ours", "split": "dev", "format": "text"},
        follow=True,
    )
    page = response.content.decode()
    assert (
        "is queued for import as #" in page and " into ours (its row is below)" in page
    )  # the message names where the premises go
    assert '<option value="travel" selected>' in page and '<option value="dev" selected>' in page
    assert 'value="ours"' in page


def test_defect_4_malformed_jsonl_lines_and_dropped_sentences_are_named_on_the_row(tmp_path, client, researcher):
    factories.genre("fiction")
    path = tmp_path / "ours.jsonl"
    path.write_text(
        '{"text": "The old man walked slowly down the long road to town."}\n'
        '{"text": "A young woman opened the red door of the bakery."}\n'
        '{"text": "Hi"}\n'
        '{"text": "broken\n'
    )
    report = import_premises([path], "fiction", "ours", split="train")
    assert report.import_id is not None
    run = PremiseImport.objects.get(pk=report.import_id)
    assert len(run.malformed) == 1 and run.malformed[0].startswith("ours.jsonl line 4: not JSON")
    assert any("Hi" in texts for texts in run.drop_examples.values())
    client.force_login(researcher)
    page = client.get(reverse("dashboard:imports")).content.decode()
    assert "1 malformed line skipped" in page and "ours.jsonl line 4" in page and "“Hi”" in page


def test_defect_4_plain_text_is_judged_by_lines_and_its_dropped_lines_are_named(tmp_path, client, researcher):
    """A plain-text import judges each line that may start a sentence on its own: a Markdown
    heading is not glued to the next line, "Hi" is too short (not a heading), and the dashboard's
    row names what was dropped and why."""
    factories.genre("fiction")
    path = tmp_path / "guide.txt"
    path.write_text(
        "## Getting there\n"
        "Take the bus from the station to the old harbour.\n"
        "Hi\n"
        "The market opens early on Saturday mornings.\n"
        "It closes at noon on most days of the year.\n"
    )
    report = import_premises([path], "fiction", "guide", split="train")
    assert set(Premise.objects.filter(dataset__slug="guide").values_list("text", flat=True)) == {
        "Take the bus from the station to the old harbour.",
        "The market opens early on Saturday mornings.",
        "It closes at noon on most days of the year.",
    }
    assert (report.read, report.kept) == (5, 3)
    run = PremiseImport.objects.get(pk=present(report.import_id))
    assert run.drop_examples == {"heading": ["## Getting there"], "too_short": ["Hi"]}
    client.force_login(researcher)
    page = client.get(reverse("dashboard:imports")).content.decode()
    assert "heading: “## Getting there”" in page and "too_short: “Hi”" in page
