"""The tagging pass writes Penn parses of written pairs, and snapshots export them in MultiNLI's columns."""

import json
import multiprocessing
from pathlib import Path

import pytest

from artifacts import tag_tally
from artifacts.models import PairTags
from artifacts.phenomena import PHENOMENON_NAMES
from artifacts.phenomenon_tagger import load_tagger
from artifacts.services import run_tagging_job, start_tagging
from artifacts.trees import binary_parse, parse_tree
from corpus import tallies
from corpus.models import Label, Pair, Premise
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


def test_parses_are_written_only_where_the_column_is_empty():
    from artifacts.services import _write_parses

    written = factories.dataset("written")
    premise = factories.premise(written, text="Dogs run.")
    empty = factories.pair(written, premise, [Label.ENTAILMENT], hypothesis="Dogs move.")
    parsed = factories.pair(written, premise, [Label.NEUTRAL], hypothesis="Dogs run fast.")
    Pair.objects.filter(pk=parsed.pk).update(parse=STANFORD_PARSE, binary_parse="( Dogs ( run . ) )")
    Premise.objects.filter(pk=premise.pk).update(parse=STANFORD_PARSE, binary_parse="( Dogs ( run . ) )")

    ours = ("(ROOT (S (NP (NNS Dogs)) (VP (VBP move)) (. .)))", "( Dogs ( move . ) )")
    _write_parses(Pair, {empty.pk: ours, parsed.pk: ours})
    _write_parses(Premise, {premise.pk: ours})

    assert Pair.objects.values_list("parse", "binary_parse").get(pk=empty.pk) == ours
    assert Pair.objects.values_list("parse", flat=True).get(pk=parsed.pk) == STANFORD_PARSE
    assert Premise.objects.values_list("parse", flat=True).get(pk=premise.pk) == STANFORD_PARSE


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


def _tagged_and_parsed(pairs):
    """{pk: (tag columns, parse, binary parse, premise parse)} of these pairs as stored."""
    rows = {}
    for pair in Pair.objects.filter(pk__in=[p.pk for p in pairs]).select_related("phenomenon_tags", "premise"):
        tags = pair.phenomenon_tags
        columns = {name: getattr(tags, name) for name in PHENOMENON_NAMES}
        rows[pair.pk] = (columns, pair.parse, pair.binary_parse, pair.premise.parse)
    return rows


def test_a_job_tagging_in_a_process_of_its_own_stores_what_tagging_here_stores(parsing_tagger, settings):
    # A large job tags in a spawned process while its own process reads and stores,
    # pipelined. Same tags and parses as tagging in the job's process, written and imported pairs
    # alike, in batches smaller than the job (several round trips to the tagging process).
    written = factories.dataset("written")
    imported = factories.dataset("imported", is_imported=True)
    pairs = []
    for dataset in (written, imported):
        for number in range(4):
            premise = factories.premise(dataset, text=f"Some {number} tall girls did not play in the park.")
            pairs += [
                factories.pair(dataset, premise, [Label.ENTAILMENT], hypothesis=f"Girls {number} were outside."),
                factories.pair(dataset, premise, [Label.CONTRADICTION], hypothesis="Nobody is sleeping."),
            ]
    run_tagging_job(start_tagging(None, queue=False).pk, tagger=parsing_tagger, batch_size=3, processes=0)
    here = _tagged_and_parsed(pairs)
    assert all(parse for pk, (_, parse, _, _) in here.items() if Pair.objects.get(pk=pk).dataset == written)
    PairTags.objects.all().delete()
    tallies.check_and_rebuild(None, tag_tally.TALLY)  # the tags went behind the tag tally's back
    Pair.objects.filter(dataset=written).update(parse="", binary_parse="")
    Premise.objects.filter(dataset=written).update(parse="", binary_parse="")

    # Left to choose, a job this size (the threshold lowered) tags in its child processes: one here.
    settings.ARTIFACTS_TAGGING_PROCESS_MIN_PAIRS = len(pairs)
    settings.ARTIFACTS_PARSING_PROCESSES = 1
    children = []
    job = run_tagging_job(
        start_tagging(None, queue=False).pk,
        tagger=parsing_tagger,
        batch_size=3,
        on_batch=lambda done: children.append(len(multiprocessing.active_children())),
    )
    assert job.done == len(pairs) and job.status == "done"
    # The tagging process was alive while the first batches were stored (it tags the next meanwhile).
    assert children[0] == 1 and max(children) == 1 and len(children) == 6
    assert multiprocessing.active_children() == []  # and is gone with the job
    assert _tagged_and_parsed(pairs) == here


def test_a_large_job_that_parses_gets_more_tagging_processes_than_one_that_only_tags(
    parsing_tagger, loaded_tagger, settings
):
    # Tag + parse costs ~1.6x the tagger per core: a parsing job needs two processes to keep the
    # tagger's speed; tags alone need one; a small job starts none.
    from artifacts.models import TaggingJob
    from artifacts.services import job_processes

    settings.ARTIFACTS_TAGGING_PROCESS_MIN_PAIRS = 1000
    settings.ARTIFACTS_PARSING_PROCESSES = 2
    written, imported = factories.dataset("written"), factories.dataset("imported", is_imported=True)

    def processes(dataset, total, tagger):
        return job_processes(TaggingJob(dataset=dataset, total=total), tagger)

    assert processes(written, 999, parsing_tagger) == 0
    assert processes(written, 1000, parsing_tagger) == 2
    assert processes(None, 1000, parsing_tagger) == 2  # every dataset: written pairs among them
    assert processes(imported, 1000, parsing_tagger) == 1  # imported pairs keep their files' parses
    assert processes(written, 1000, loaded_tagger) == 1  # a tagger without its parser only tags
