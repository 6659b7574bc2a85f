"""Penn trees from dependency parses (artifacts.dependency_trees) and their scoring (artifacts.parse_scoring)."""

import json

import pytest

from artifacts.dependency_trees import DepToken, constituency_tree, parses_of_doc
from artifacts.parse_scoring import BracketScore, brackets, right_branching
from artifacts.phenomena import normalise_text
from artifacts.trees import binary_parse, parse_tree
from tests.conftest import shared_file


def tokens(*rows):
    return [DepToken(text, tag, dep, head) for text, tag, dep, head in rows]


def test_a_clause_with_auxiliary_prepositional_phrase_and_full_stop():
    sentence = tokens(
        ("A", "DT", "det", 1),
        ("man", "NN", "nsubj", 3),
        ("is", "VBZ", "aux", 3),
        ("sleeping", "VBG", "root", 3),
        ("on", "IN", "prep", 3),
        ("a", "DT", "det", 6),
        ("bench", "NN", "pobj", 4),
        (".", ".", "punct", 3),
    )
    tree = constituency_tree(sentence)
    assert str(tree) == (
        "(ROOT (S (NP (DT A) (NN man)) (VP (VBZ is) (VP (VBG sleeping) (PP (IN on) (NP (DT a) (NN bench))))) (. .)))"
    )
    assert binary_parse(tree) == "( ( A man ) ( ( is ( sleeping ( on ( a bench ) ) ) ) . ) )"


def test_a_noun_phrase_premise_nests_its_post_modifiers():
    # "A group of boys playing basketball." as spaCy parses it: the noun is the root.
    sentence = tokens(
        ("A", "DT", "det", 1),
        ("group", "NN", "root", 1),
        ("of", "IN", "prep", 1),
        ("boys", "NNS", "pobj", 2),
        ("playing", "VBG", "acl", 1),
        ("basketball", "NN", "dobj", 4),
        (".", ".", "punct", 1),
    )
    assert str(constituency_tree(sentence)) == (
        "(ROOT (NP (NP (NP (DT A) (NN group)) (PP (IN of) (NP (NNS boys)))) (VP (VBG playing) (NP (NN basketball))) (. .)))"
    )


def test_coordination_relative_clause_and_infinitive():
    # "The dog that runs jumps and barks to play."
    sentence = tokens(
        ("The", "DT", "det", 1),
        ("dog", "NN", "nsubj", 4),
        ("that", "WDT", "nsubj", 3),
        ("runs", "VBZ", "relcl", 1),
        ("jumps", "VBZ", "root", 4),
        ("and", "CC", "cc", 4),
        ("barks", "VBZ", "conj", 4),
        ("to", "TO", "aux", 8),
        ("play", "VB", "advcl", 6),
        (".", ".", "punct", 4),
    )
    assert str(constituency_tree(sentence)) == (
        "(ROOT (S (NP (NP (DT The) (NN dog)) (SBAR (WHNP (WDT that)) (S (VP (VBZ runs)))))"
        " (VP (VP (VBZ jumps)) (CC and) (VP (VBZ barks) (S (VP (TO to) (VP (VB play)))))) (. .)))"
    )


def test_the_real_pipeline_gives_trees_in_one_pass(parsing_tagger):
    doc = parsing_tagger.nlp("Two women are embracing while holding packages.")
    parse, binary = parses_of_doc(doc)
    assert parse.startswith("(ROOT (S (NP (CD Two) (NNS women)) (VP (VBP are) (VP (VBG embracing)")
    assert parse_tree(parse).leaves() == ["Two", "women", "are", "embracing", "while", "holding", "packages", "."]
    assert binary == binary_parse(parse_tree(parse))


def test_hyphenated_words_stay_one_token_as_in_the_treebank(parsing_tagger):
    parse, _ = parses_of_doc(parsing_tagger.nlp("A garage-like structure stands."))
    assert "garage-like" in parse_tree(parse).leaves()


def test_binary_parses_of_every_snli_dev_tree_are_the_files():
    """The derivation reproduces the Stanford binary parse of each of the 20,000 SNLI dev sentences."""
    path = shared_file("snli_1.0_dev.jsonl")
    compared = 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            for sentence in ("sentence1", "sentence2"):
                assert binary_parse(parse_tree(record[f"{sentence}_parse"])) == record[f"{sentence}_binary_parse"]
                compared += 1
    assert compared == 20_000


def test_brackets_ignore_punctuation_and_tokenisation():
    stanford = "(ROOT (S (NP (PRP He)) (VP (VBZ does) (RB n't) (VP (VB know))) (. .)))"
    other = "(ROOT (S (NP (PRP He)) (VP (VBZ doesn) (RB 't) (VP (VB know)) (. .))))"
    assert brackets(parse_tree(stanford)) == brackets(parse_tree(other))
    assert BracketScore().add(parse_tree(other), parse_tree(stanford)).f1 == 100.0


def test_scores_count_labelled_brackets_and_identical_trees():
    gold = parse_tree("(ROOT (S (NP (DT A) (NN man)) (VP (VBZ sleeps)) (. .)))")
    wrong_label = parse_tree("(ROOT (S (NP (DT A) (NN man)) (ADJP (VBZ sleeps)) (. .)))")
    score = BracketScore().add(gold, gold).add(wrong_label, gold)
    assert (score.matched, score.guessed, score.gold) == (5, 6, 6)
    assert score.identical_share == 50.0
    baseline = right_branching(gold)
    assert baseline.leaves() == gold.leaves()


def test_malformed_bracketing_is_a_value_error():
    with pytest.raises(ValueError):
        parse_tree("(ROOT (S (NP man)")


def test_the_fast_converter_gives_the_reference_trees_on_snli_dev(parsing_tagger):
    """The converter was made faster (one read of the tokens, leaves made once, head rules split
    once); on the 2,000-odd distinct sentences of 1,520 SNLI dev pairs its trees and binary
    parses are the reference's, and the one-pass tags are the tagger's."""
    from tests.artifacts import reference_trees

    with open(shared_file("snli_1.0_dev.jsonl"), encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle][:1520]
    sentences = list(dict.fromkeys(text for row in rows for text in (row["sentence1"], row["sentence2"])))
    assert len(sentences) >= 2000
    docs = list(parsing_tagger.nlp.pipe(normalise_text(text) for text in sentences))
    fast = [parses_of_doc(doc) for doc in docs]
    assert fast == [reference_trees.parses_of_doc(doc) for doc in docs]

    pairs = [(row["sentence1"], row["sentence2"]) for row in rows]
    tagged = list(parsing_tagger.tag_and_parse_pairs(pairs))
    assert [result.phenomena.tags for result in tagged] == list(parsing_tagger.tag_pairs(pairs))
    by_text = dict(zip(sentences, fast, strict=True))
    assert all(
        (result.premise_parses, result.hypothesis_parses) == (by_text[premise], by_text[hypothesis])
        for (premise, hypothesis), result in zip(pairs, tagged, strict=True)
    )
