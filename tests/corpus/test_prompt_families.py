"""Genres and prompt families as migration 0002 installs them (MultiNLI §2.1, Figure 1, Table 3)."""

import importlib

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from corpus import prompt_content, prompt_install
from corpus.models import FaqEntry, Genre, Label, PromptExample, PromptFamily

pytestmark = pytest.mark.django_db

# MultiNLI Table 3: the first five genres are matched (in train), the other five held out.
MATCHED = {"fiction", "government", "slate", "telephone", "travel"}
MISMATCHED = {"nineeleven", "facetoface", "letters", "oup", "verbatim"}

# MultiNLI §2.1: "one for written non-fiction genres (SLATE, OUP, GOVERNMENT, VERBATIM, TRAVEL), one for
# spoken genres (TELEPHONE, FACE-TO-FACE), one for each of ... FICTION, LETTERS, and a specialized one for 9/11".
MULTINLI_FAMILIES = [
    {"slate", "oup", "government", "verbatim", "travel"},
    {"telephone", "facetoface"},
    {"fiction"},
    {"letters"},
    {"nineeleven"},
]

migration = importlib.import_module("collection.migrations.0002_genres_and_prompt_families")


def genres_by_family():
    grouping: dict[str, set[str]] = {}
    for genre in Genre.objects.select_related("family"):
        grouping.setdefault(genre.family.slug, set()).add(genre.slug)
    return grouping


def test_the_ten_multinli_genres_and_captions_are_installed():
    assert set(Genre.objects.values_list("slug", flat=True)) == MATCHED | MISMATCHED | {"captions"}
    assert Genre.objects.get(slug="nineeleven").name == "9/11"
    assert Genre.objects.get(slug="facetoface").name == "Face-to-face"
    assert Genre.objects.get(slug="oup").name == "OUP"
    assert not Genre.objects.filter(description="").exists()


def test_matched_and_mismatched_flags_follow_multinli_table_3():
    training = set(Genre.objects.filter(is_training=True).values_list("slug", flat=True))
    held_out = set(Genre.objects.filter(is_training=False).values_list("slug", flat=True))
    assert training == MATCHED | {"captions"}  # SNLI's captions are training data
    assert held_out == MISMATCHED


def test_genres_are_grouped_into_the_five_multinli_prompts_plus_captions():
    grouping = genres_by_family()
    assert PromptFamily.objects.count() == 6
    assert grouping.pop("captions") == {"captions"}
    assert sorted(map(sorted, grouping.values())) == sorted(map(sorted, MULTINLI_FAMILIES))
    assert Genre.objects.filter(family__isnull=True).count() == 0


def test_each_family_has_one_worked_example_per_label():
    for family in PromptFamily.objects.all():
        examples = list(family.examples.all())
        assert sorted(example.label for example in examples) == sorted(Label.values), family.slug
        for example in examples:
            assert example.premise.strip() and example.hypothesis.strip() and example.explanation.strip()
            assert example.premise != example.hypothesis


def test_each_family_has_a_faq_of_five_to_eight_entries_with_the_general_questions():
    general_questions = {entry["question"] for entry in prompt_content.GENERAL_FAQ}
    for family in PromptFamily.objects.all():
        entries = list(family.faq_entries.all())
        assert 5 <= len(entries) <= 8, family.slug
        assert all(entry.answer.strip() for entry in entries)
        questions = [entry.question for entry in entries]
        assert general_questions <= set(questions)
        assert len(set(questions)) == len(questions)
        # Shown in order: the family's own questions first.
        assert [entry.position for entry in entries] == sorted(entry.position for entry in entries)
        assert questions[0] not in general_questions


def test_genre_specific_faq_questions_from_the_pilot():
    spoken = " ".join(PromptFamily.objects.get(slug="spoken").faq_entries.values_list("question", flat=True))
    assert "um" in spoken  # no need to copy "um" into hypotheses (MultiNLI §2.1)
    nineeleven = PromptFamily.objects.get(slug="nineeleven")
    stop = nineeleven.faq_entries.get(question__icontains="go on")
    assert "stop at any time" in stop.answer
    assert "stop at any time" in nineeleven.instructions


def test_field_wordings_are_phrased_for_the_family():
    wording = {
        "nonfiction": "about the situation or event in the line",
        "spoken": "about the conversation",
        "fiction": "about the scene or story",
        "letters": "about the letter",
        "nineeleven": "about the events described in the line",
        "captions": "of the photo",
    }
    for slug, phrase in wording.items():
        family = PromptFamily.objects.get(slug=slug)
        prompts = [family.prompt_for(label) for label in Label]
        assert all(phrase in prompt for prompt in prompts), slug
        assert len(set(prompts)) == 3
    nonfiction = PromptFamily.objects.get(slug="nonfiction")
    assert "definitely correct" in nonfiction.entailment_prompt
    assert "might be correct" in nonfiction.neutral_prompt
    assert "definitely incorrect" in nonfiction.contradiction_prompt


def test_instructions_are_our_own_words_not_figure_1():
    figure_1_sentences = [
        "This task will involve reading a line from a non-fiction article and writing three sentences that relate to it",
        "Using only this description and what you know about the world",
        "The opinions expressed in these are not necessarily shared by the researchers",
    ]
    for family in PromptFamily.objects.all():
        for sentence in figure_1_sentences:
            assert sentence.lower() not in family.instructions.lower()


def test_installed_rows_match_prompt_content():
    """The migration's frozen copy and prompt_content.py agree; if this fails, add a data migration."""
    for spec in prompt_content.FAMILIES:
        family = PromptFamily.objects.get(slug=spec["slug"])
        for field in (
            "name",
            "instructions",
            "entailment_prompt",
            "neutral_prompt",
            "contradiction_prompt",
            "faq_intro",
        ):
            assert getattr(family, field) == spec[field], (spec["slug"], field)
        assert {(e.label, e.premise, e.hypothesis, e.explanation) for e in family.examples.all()} == {
            (e["label"], e["premise"], e["hypothesis"], e["explanation"]) for e in spec["examples"]
        }
        assert [(f.question, f.answer) for f in family.faq_entries.all()] == [
            (f["question"], f["answer"]) for f in [*spec["faq"], *prompt_content.GENERAL_FAQ]
        ]
    for spec in prompt_content.GENRES:
        genre = Genre.objects.get(slug=spec["slug"])
        assert (genre.name, genre.is_training, genre.family.slug, genre.description) == (
            spec["name"],
            spec["is_training"],
            spec["family"],
            spec["description"],
        )


def test_migration_reverses_and_reapplies():
    # A data migration runs with the models as they were when it was written (then in `collection`).
    historical_apps = MigrationLoader(connection).project_state(("collection", "0002_genres_and_prompt_families")).apps
    migration.uninstall(historical_apps, None)
    assert not Genre.objects.exists()
    assert not PromptFamily.objects.exists()
    assert not PromptExample.objects.exists() and not FaqEntry.objects.exists()

    migration.install(historical_apps, None)
    assert Genre.objects.count() == 11
    assert PromptFamily.objects.count() == 6
    assert PromptExample.objects.count() == 18


def test_install_prompt_content_fills_gaps_and_keeps_researcher_edits():
    fiction = PromptFamily.objects.get(slug="fiction")
    fiction.instructions = "Edited by a researcher in the admin."
    fiction.save()
    Genre.objects.filter(slug="letters").delete()
    PromptFamily.objects.filter(slug="letters").delete()

    created = prompt_install.install_prompt_content()

    letters = PromptFamily.objects.get(slug="letters")
    assert created == 1 + 3 + letters.faq_entries.count() + 1  # family, examples, FAQ, genre
    assert Genre.objects.get(slug="letters").family == letters
    assert PromptFamily.objects.get(slug="fiction").instructions == "Edited by a researcher in the admin."
    assert prompt_install.install_prompt_content() == 0
