"""The tagging pass writes Penn parses of written pairs, and snapshots export them in MultiNLI's columns."""

import json
from pathlib import Path

import pytest

from artifacts.phenomena import load_tagger
from artifacts.services import run_tagging_job, start_tagging
from artifacts.trees import binary_parse, parse_tree
from corpus.models import Label, Pair
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests import factories

pytestmark = pytest.mark.django_db

STANFORD_PARSE = "(ROOT (S (NP (NNS Dogs)) (VP (VBP run)) (. .)))"


def exported_rows(snapshot):
    rows = []
    for path in sorted(Path(snapshot.directory).glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {row["pairID"]: row for row in rows}


def test_written_pairs_export_the_taggers_parses_and_imported_ones_keep_theirs(parsing_tagger):
    written = factories.dataset("written")
    premise = factories.premise(written, text="Two girls play in the park.")
    pairs = [
        factories.pair(written, premise, [Label.ENTAILMENT], hypothesis="There are children outside."),
        factories.pair(written, premise, [Label.CONTRADICTION], hypothesis="Nobody is playing."),
    ]
    imported = factories.dataset("imported", is_imported=True)
    imported_premise = factories.premise(imported, text="Dogs run.")
    with_parse = factories.pair(imported, imported_premise, [Label.ENTAILMENT], hypothesis="Dogs run.")
    without_parse = factories.pair(imported, imported_premise, [Label.NEUTRAL], hypothesis="Dogs run fast.")
    Pair.objects.filter(pk=with_parse.pk).update(parse=STANFORD_PARSE, binary_parse="( Dogs ( run . ) )")

    job = run_tagging_job(start_tagging(None, queue=False).pk, tagger=parsing_tagger)
    assert job.done == 4

    rows = exported_rows(export_snapshot(create_snapshot(None)))
    for pair in pairs:
        row = rows[pair.pair_id]
        for sentence in ("sentence1", "sentence2"):
            tree = parse_tree(row[f"{sentence}_parse"])
            assert tree.label == "ROOT" and tree.children, row
            assert row[f"{sentence}_binary_parse"] == binary_parse(tree)
            assert "".join(tree.leaves()) == "".join(row[sentence].split())
    assert rows[pairs[1].pair_id]["sentence2_parse"].startswith("(ROOT (S (NP (NN Nobody)) (VP (VBZ is)")
    # Imported pairs keep what their file gave, a Stanford parse or none.
    assert rows[with_parse.pair_id]["sentence2_parse"] == STANFORD_PARSE
    assert rows[without_parse.pair_id]["sentence2_parse"] == ""
    assert rows[without_parse.pair_id]["sentence1_parse"] == ""


def test_a_tagger_without_parser_still_tags_and_writes_no_parse(loaded_tagger):
    written = factories.dataset("written")
    pair = factories.pair(written, factories.premise(written), [Label.ENTAILMENT], hypothesis="A dog walks.")
    run_tagging_job(start_tagging(written, queue=False).pk, tagger=loaded_tagger)
    pair.refresh_from_db()
    assert hasattr(pair, "phenomenon_tags") and pair.parse == "" and pair.premise.parse == ""


RECORDED: list = []  # (text, whether spaCy's parser had run) of each Doc the recording pipeline made


def recording_tagger():
    """A pipeline of its own with the parser on and a last component that records, for each Doc,
    whether the dependency parser ran on it."""
    from spacy.language import Language

    if not Language.has_factory("test_record_parsed"):

        @Language.component("test_record_parsed")
        def record(doc):
            RECORDED.append((doc.text, doc.has_annotation("DEP")))
            return doc

    tagger = load_tagger(parse=True)
    tagger.nlp.add_pipe("test_record_parsed", last=True)
    return tagger


def test_only_pairs_that_get_a_parse_run_the_parser(parsing_tagger):
    """Imported pairs, and written ones parsed already, are tagged with the parser off."""
    written = factories.dataset("written")
    to_parse = factories.pair(
        written, factories.premise(written, text="A cat sleeps."), [Label.ENTAILMENT], "A cat rests."
    )
    parsed_premise = factories.premise(written, text="A bird sings.")
    parsed = factories.pair(written, parsed_premise, [Label.ENTAILMENT], hypothesis="A bird makes noise.")
    Pair.objects.filter(pk=parsed.pk).update(parse=STANFORD_PARSE, binary_parse="( Dogs ( run . ) )")
    type(parsed_premise).objects.filter(pk=parsed_premise.pk).update(parse=STANFORD_PARSE, binary_parse="x")
    imported = factories.dataset("imported", is_imported=True)
    kept = factories.pair(imported, factories.premise(imported, text="Dogs run."), [Label.NEUTRAL], "Dogs run fast.")

    RECORDED.clear()
    job = run_tagging_job(start_tagging(None, queue=False).pk, tagger=recording_tagger())
    assert job.done == 3
    assert dict(RECORDED) == {
        "A cat sleeps.": True,
        "A cat rests.": True,
        "A bird sings.": False,
        "A bird makes noise.": False,
        "Dogs run.": False,
        "Dogs run fast.": False,
    }
    to_parse.refresh_from_db()
    kept.refresh_from_db()
    assert to_parse.parse.startswith("(ROOT") and to_parse.premise.parse.startswith("(ROOT")
    assert kept.parse == "" and hasattr(kept, "phenomenon_tags")
