"""The recasting engine (importers.recasting) and its shipped templates against DNC's own dev files.

For each shipped template the source rows are rebuilt from DNC's released pairs (the review or
pun sentence from the context, its polarity from a hypothesis and its label, its id from the
metadata), recast again, and compared with DNC's pairs. No database.
"""

import copy
import json
import random
import re
from itertools import islice
from pathlib import Path

import pytest

from importers import dnc, recast_rows, recast_templates, recasting
from tests.conftest import shared_file
from tests.present import present

SENTIMENT_CONTEXT = re.compile(
    r"When asked about the (?:product|movie), (?P<name>\S+) said, '(?P<sentence>.*)'\.|"
    r"When asked about the restaurant , (?P<tokenized_name>\S+) said , '(?P<tokenized_sentence>.*)' \.",
    re.DOTALL,
)
PUN_CONTEXT = re.compile(r"(?P<name>\S+) heard that (?P<sentence>.*)", re.DOTALL)
PUN_DATASETS = {"Yang et. al. 2015": "yang2015", "SemEval17-Task7": "semeval2017"}


def first_pairs(template, rows, n=10, seed=0):
    """The first n pairs a recast makes (what the dashboard's dry run shows)."""
    return list(islice(recasting.recast(template, rows, split="dev", seed=seed), n))


def dnc_dev(name):
    return dnc.read_dnc(shared_file(f"dnc/dev/recast_{name}_data.json"))


def rows_by_source_sentence(pairs):
    """DNC's pairs two by two: both recasts write a sentence's two pairs one after the other.

    (corpus-sent-id alone cannot group them: DNC wrote "id" for every Yang et al. pun.)
    """
    groups = [pairs[index : index + 2] for index in range(0, len(pairs), 2)]
    for first, second in groups:
        assert first.provenance == second.provenance, first.pair_id
    return groups


def sentiment_row(group):
    match = present(SENTIMENT_CONTEXT.fullmatch(group[0].context))
    sentence = match["sentence"] if match["sentence"] is not None else match["tokenized_sentence"]
    liked = next(pair for pair in group if " liked " in pair.hypothesis)
    source, line = group[0].provenance.corpus_sent_id.split(" ")
    return {"sentence": sentence, "score": "1" if liked.label == dnc.ENTAILED else "0", "source": source, "line": line}


def pun_row(group):
    heard = next(pair for pair in group if " heard a pun" in pair.hypothesis)
    provenance = group[0].provenance
    return {
        "sentence": present(PUN_CONTEXT.fullmatch(group[0].context))["sentence"],
        "is_pun": "1" if heard.label == dnc.ENTAILED else "0",
        "dataset": PUN_DATASETS[provenance.corpus],
        "sent_id": provenance.corpus_sent_id,
    }


CASES = {"sentiment": sentiment_row, "puns": pun_row}


def name_of(pair):
    return pair.hypothesis.split(" ", 1)[0]  # both recasts begin the hypothesis with the name


def without_name(text, name):
    return re.sub(rf"(?<!\S){re.escape(name)}(?!\S)", "NAME", text, count=1)


def rebuilt(name):
    """DNC's dev pairs for a template, and the source rows rebuilt from them."""
    release = dnc_dev(name)
    groups = rows_by_source_sentence(release.pairs)
    return release, [CASES[name](group) for group in groups]


# --- the shipped templates reproduce DNC ----------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_shipped_template_reproduces_dncs_hypotheses_and_labels_names_aside(name):
    release, rows = rebuilt(name)
    template = recast_templates.load_template(recast_templates.TEMPLATES_DIR / f"{name}.json")
    ours = list(recasting.recast(template, rows, split="dev", seed=7, first_pair_id=release.pairs[0].pair_id))
    assert len(ours) == len(release.pairs)
    for mine, theirs in zip(ours, release.pairs, strict=False):
        assert without_name(mine.hypothesis, name_of(mine)) == without_name(theirs.hypothesis, name_of(theirs))
        assert without_name(mine.context, name_of(mine)) == without_name(theirs.context, name_of(theirs))
        assert (mine.pair_id, mine.label, mine.binary_label, mine.label_set, mine.split, mine.type_of_inference) == (
            theirs.pair_id,
            theirs.label,
            theirs.binary_label,
            theirs.label_set,
            theirs.split,
            theirs.type_of_inference,
        )
        assert dnc.metadata_record(mine) == dnc.metadata_record(theirs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_with_dncs_own_names_the_recast_is_dncs_files_byte_for_byte(name, tmp_path):
    release, rows = rebuilt(name)
    template = recast_templates.load_template(recast_templates.TEMPLATES_DIR / f"{name}.json")
    pairs = recasting.recast(
        template,
        rows,
        split="dev",
        first_pair_id=release.pairs[0].pair_id,
        names=[name_of(pair) for pair in release.pairs],
    )
    dnc.write_dnc(pairs, tmp_path / "data.json", tmp_path / "metadata.json", dnc.PYTHON2_STYLE)
    assert (tmp_path / "data.json").read_bytes() == Path(release.data_path).read_bytes()
    assert (tmp_path / "metadata.json").read_bytes() == Path(release.metadata_path).read_bytes()


def test_shipped_templates_are_listed_and_load_by_name():
    assert set(recast_templates.shipped_templates()) == {"sentiment", "puns"}
    assert recast_templates.load_template("sentiment").name == "dnc-sentiment"


# --- names -----------------------------------------------------------------------------------

SENTENCES = [
    {"sentence": f"sentence {number}", "is_pun": str(number % 2), "dataset": "yang2015", "sent_id": "id"}
    for number in range(20)
]


def test_names_are_seeded_and_drawn_per_pair():
    template = recast_templates.load_template("puns")
    first = [name_of(pair) for pair in recasting.recast(template, SENTENCES, split="dev", seed=1)]
    again = [name_of(pair) for pair in recasting.recast(template, SENTENCES, split="dev", seed=1)]
    other = [name_of(pair) for pair in recasting.recast(template, SENTENCES, split="dev", seed=2)]
    assert first == again != other
    assert set(first) <= set(recast_templates.DEFAULT_NAMES)
    assert len(set(first)) > 5  # a fresh draw for every pair, not one name per row or per run
    for pair in recasting.recast(template, SENTENCES, split="dev", seed=1):
        assert pair.context.startswith(name_of(pair) + " heard that ")


def test_a_template_may_bring_its_own_names():
    spec = json.loads((recast_templates.TEMPLATES_DIR / "puns.json").read_text())
    spec["names"] = ["Kim"]
    pairs = first_pairs(recast_templates.parse_template(spec), SENTENCES, 4)
    assert {name_of(pair) for pair in pairs} == {"Kim"}


# --- dry run ---------------------------------------------------------------------------------


def test_dry_run_has_no_side_effects(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    template = recast_templates.load_template("puns")
    rows = copy.deepcopy(SENTENCES)
    template_before = copy.deepcopy(template)
    random.seed(123)
    random_state = random.getstate()

    consumed = []

    def counted(rows):
        for row in rows:
            consumed.append(row)
            yield row

    preview = first_pairs(template, counted(rows), 3, seed=5)
    assert len(preview) == 3
    assert len(consumed) == 2  # two pairs per row: the third pair needs only the second row
    assert rows == SENTENCES
    assert template == template_before
    assert random.getstate() == random_state
    assert list(tmp_path.iterdir()) == []
    assert first_pairs(template, rows, 3, seed=5) == preview
    full = list(recasting.recast(template, rows, split="dev", seed=5))
    assert preview == full[:3]


def test_recast_pairs_write_as_dnc_json(tmp_path):
    template = recast_templates.load_template("puns")
    pairs = list(recasting.recast(template, SENTENCES, split="train", first_pair_id=100))
    dnc.write_dnc(pairs, tmp_path / "p_data.json", tmp_path / "p_metadata.json")
    assert len(pairs) == 40
    written = dnc.read_dnc(tmp_path / "p_data.json")
    assert [pair.pair_id for pair in written.pairs] == list(range(100, 140))
    assert present(written.pairs[0].provenance).corpus_license == "Yang 2015"
    assert {pair.split for pair in written.pairs} == {"train"}


# --- rules -----------------------------------------------------------------------------------


def ordinal_template():
    return recast_templates.parse_template(
        {
            "format": recast_templates.TEMPLATE_FORMAT,
            "name": "kg-like",
            "fields": ["sentence", "fact", "score"],
            "type_of_inference": "KG",
            "label_set": [1, 2, 3, 4, 5],
            "context": "{sentence}",
            "hypotheses": [
                {"pattern": "{fact}", "label": {"field": "score", "map": {"1": 1, "2": 2, "3": 3, "4": 4, "5": 5}}}
            ],
            "provenance": {"corpus": "test", "corpus-sent-id": "{sentence}", "creation-approach": "manual"},
        }
    )


def test_a_map_rule_carries_an_ordinal_score_and_binary_label_follows_it():
    rows = [{"sentence": "s", "fact": "f", "score": score} for score in (1, 4, 5)]  # ints, as JSONL gives them
    pairs = list(recasting.recast(ordinal_template(), rows, split="test"))
    assert [(pair.label, pair.binary_label) for pair in pairs] == [(1, False), (4, False), (5, True)]
    assert dnc.metadata_record(pairs[0]) == {
        "corpus": "test",
        "corpus-sent-id": "s",
        "creation-approach": "manual",
        "pair-id": 1,
    }


def test_conditions_compose():
    spec = json.loads((recast_templates.TEMPLATES_DIR / "puns.json").read_text())
    spec["hypotheses"][0]["label"]["if"] = {
        "all": [{"field": "is_pun", "in": ["1", "yes"]}, {"not": {"field": "dataset", "equals": "semeval2017"}}]
    }
    template = recast_templates.parse_template(spec)
    labels = [
        pair.label
        for pair in recasting.recast(
            template,
            [dict(SENTENCES[1], is_pun="yes"), dict(SENTENCES[1], dataset="semeval2017"), SENTENCES[0]],
            split="dev",
        )
    ][::2]
    assert labels == ["entailed", "not-entailed", "not-entailed"]


# --- errors ----------------------------------------------------------------------------------


def puns_spec():
    return json.loads((recast_templates.TEMPLATES_DIR / "puns.json").read_text())


def broken(change):
    spec = puns_spec()
    change(spec)
    return spec


@pytest.mark.parametrize(
    "spec, message",
    [
        (broken(lambda spec: spec.pop("context")), "lacks context"),
        (broken(lambda spec: spec.update(contxt="x")), "unknown key(s) 'contxt'"),
        (
            broken(lambda spec: spec.update(context="{NAME} heard that {sentense}")),
            "context: {sentense} is not a declared field",
        ),
        (broken(lambda spec: spec.update(context="{NAME heard")), "a lone '{' at column 1"),
        (
            broken(lambda spec: spec["hypotheses"][0]["label"].update(then="entailment")),
            "hypotheses[0].label: label 'entailment' is not in label_set",
        ),
        (broken(lambda spec: spec["hypotheses"][1]["label"].update(then="yes")), "'yes' is not a DNC label"),
        (
            broken(lambda spec: spec["hypotheses"][0].update(label={"iff": {}})),
            "hypotheses[0].label: a label rule is {'if', 'then', 'else'} or {'field', 'map'}; found ['iff']",
        ),
        (
            broken(lambda spec: spec["hypotheses"][0]["label"].update({"if": {"field": "pun"}})),
            "hypotheses[0].label.if: a field condition needs exactly one of 'equals' or 'in'",
        ),
        (
            broken(lambda spec: spec["hypotheses"][0]["label"].update({"if": {"field": "pun", "equals": "1"}})),
            "hypotheses[0].label: {pun} is not a declared field",
        ),
        (
            broken(lambda spec: spec["provenance"].update(corpus={"switch": "corpus_name", "cases": {"a": "b"}})),
            "provenance.corpus: {corpus_name} is not a declared field",
        ),
        (broken(lambda spec: spec["provenance"].update({"corpus-sent-id": "{NAME}"})), "cannot use the random {NAME}"),
        (broken(lambda spec: spec.update(hypotheses=[])), "hypotheses: a non-empty list was expected"),
        (broken(lambda spec: spec.update(order="random")), "order: 'random' is not one of as-listed, entailed-first"),
        (broken(lambda spec: spec.update(format="dnc/2")), "format 'dnc/2' is not 'nli-recast-template/1'"),
    ],
)
def test_a_bad_template_says_what_and_where(spec, message):
    with pytest.raises(recast_templates.TemplateError) as error:
        recast_templates.parse_template(spec, source="bad.json")
    assert message in str(error.value)
    assert str(error.value).startswith("bad.json")


def test_a_template_file_that_is_not_json_names_the_file_and_position(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "nli-recast-template/1",\n "name": }')
    with pytest.raises(recast_templates.TemplateError, match=r"broken.json: not valid JSON .* line 2, column 10"):
        recast_templates.load_template(path)
    with pytest.raises(recast_templates.TemplateError, match="no such template file"):
        recast_templates.load_template(tmp_path / "absent.json")


def test_a_row_the_template_cannot_recast_is_named():
    template = recast_templates.load_template("sentiment")
    good = {"sentence": "Fine.", "score": "1", "source": "imdb_labelled.txt", "line": "1"}
    with pytest.raises(recast_templates.RecastError, match=r"row 1: lacks field\(s\) 'score'"):
        list(recasting.recast(template, [good, {"sentence": "x", "source": "s", "line": "2"}], split="dev"))
    with pytest.raises(recast_templates.RecastError, match=r"row 0: source='tweets.txt' has no case"):
        first_pairs(template, [dict(good, source="tweets.txt")])


# --- source rows -----------------------------------------------------------------------------


def test_rows_are_read_from_csv_tsv_and_jsonl(tmp_path):
    (tmp_path / "a.csv").write_text('sentence,score\n"Good, really.",1\n')
    (tmp_path / "b.txt").write_text('So there is no way.\t0\nIt\'s "great"  \t1\n')
    (tmp_path / "c.jsonl").write_text('{"sentence": "ok", "score": 1}\n\n')
    assert list(recast_rows.read_rows(tmp_path / "a.csv")) == [{"sentence": "Good, really.", "score": "1"}]
    assert list(recast_rows.read_rows(tmp_path / "b.txt", fieldnames=["sentence", "score"], number_field="line")) == [
        {"sentence": "So there is no way.", "score": "0", "line": "1"},
        {"sentence": 'It\'s "great"  ', "score": "1", "line": "2"},
    ]
    assert list(recast_rows.read_rows(tmp_path / "c.jsonl")) == [{"sentence": "ok", "score": 1}]
    (tmp_path / "d.tsv").write_text("sentence\tscore\nno score here\n")
    with pytest.raises(recast_templates.RecastError, match=r"d\.tsv line 2: 1 tab-separated fields, expected 2"):
        list(recast_rows.read_rows(tmp_path / "d.tsv"))
