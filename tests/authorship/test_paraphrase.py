"""Template signatures (authorship.paraphrase) and the paraphrase rule (authorship.copies), without
the database: what survives a changed word, and what honest writers of real premises share."""

import json
from collections import defaultdict

from authorship.copies import is_paraphrase
from authorship.paraphrase import SLOT, lemma, own_words, signature, word_edits
from tests.conftest import shared_file


def test_lemmas_meet_across_endings_and_common_irregular_forms():
    assert {lemma(word) for word in ("runs", "running", "ran")} == {"run"}
    assert lemma("women") == "woman" and lemma("ladies") == "lady" and lemma("dressed") == "dress"
    assert lemma("bus") == "bus" and lemma("grass") == "grass"


def test_the_premises_own_words_are_slotted_out_and_function_words_kept():
    premise = "A man in a red shirt is riding a bicycle down the street."
    assert signature("The man is riding a bike.", premise) == ("the", SLOT, "is", SLOT, "a", "bike")
    assert own_words(signature("The man is riding a bike.", premise)) == {"bike"}


def test_one_template_filled_with_each_premises_words_has_one_signature():
    """The issue's farm fills a template with the premise's words: slotted out, the frames meet."""
    first = signature("The dog is waiting near the old fountain.", "A dog jumps over a log.")
    second = signature("The child is waiting near the old fountain.", "A child plays with sand.")
    assert first == second
    assert is_paraphrase(first, second, len(own_words(first) & own_words(second)))


def test_two_ids_changing_another_word_of_one_template_are_paraphrases():
    premise = "A boat left the harbour at dawn."
    one = signature("The crowd listens to the group in the old square.", premise)
    other = signature("The crowd listens to the band in the old plaza.", premise)
    assert word_edits(one, other) == 2
    assert is_paraphrase(one, other, len(own_words(one) & own_words(other)))
    # Two own words in common (talk, phone) are what honest writers share: not enough.
    honest = signature("A boy is talking on the phone.", "A boy walks home.")
    other_writer = signature("The woman is talking on the phone.", "A woman sits in a bus.")
    assert not is_paraphrase(honest, other_writer, len(own_words(honest) & own_words(other_writer)))


def test_short_sentences_are_paraphrases_only_when_the_same_and_not_the_premises_words():
    about_a_man = "A man sits on a bench."
    about_a_dog = "A dog runs through the grass."
    # Honest: each takes "man"/"dog" from its premise; one own word left ("outside").
    honest, other = signature("A man is outside.", about_a_man), signature("A dog is outside.", about_a_dog)
    assert not is_paraphrase(honest, other, len(own_words(honest) & own_words(other)))
    farm, again = signature("Tourists enjoy concerts.", about_a_man), signature("Tourists enjoy concerts.", about_a_dog)
    assert is_paraphrase(farm, again, 3)
    assert not is_paraphrase(farm, signature("Tourists enjoy festivals.", about_a_dog), 2)


def test_honest_snli_writers_are_rarely_paraphrases_of_one_another():
    """SNLI dev's first 1,500 writings (a caption's round each, several of one caption), replayed as
    writers of three premises each: the sessions with a third of their hypotheses paraphrasing
    another writer's earlier sentence on another premise stay under 1% (on all 10,000 hypotheses
    bench/copy_check.py measures the platform's whole check)."""
    writings: dict[str, list[str]] = {}
    premises: dict[str, str] = {}
    for line in shared_file("snli_1.0_dev.jsonl").open():
        row = json.loads(line)
        writings.setdefault(row["pairID"][:-1], []).append(row["sentence2"])
        premises[row["pairID"][:-1]] = row["sentence1"]
    by_word: dict[str, list[int]] = defaultdict(list)
    earlier: list[tuple[int, tuple[str, ...]]] = []
    flagged: dict[int, list[bool]] = defaultdict(list)
    for number, key in enumerate(list(writings)[:1500]):
        writer = number // 3
        for hypothesis in writings[key]:
            found = signature(hypothesis, premises[key])
            shared: dict[int, int] = defaultdict(int)
            for word in own_words(found):
                for index in by_word[word]:
                    shared[index] += 1
            flagged[writer].append(
                any(
                    earlier[index][0] != writer and is_paraphrase(found, earlier[index][1], count)
                    for index, count in shared.items()
                )
            )
            for word in own_words(found):
                by_word[word].append(len(earlier))
            earlier.append((writer, found))
    held = sum(sum(flags) >= len(flags) / 3 for flags in flagged.values())
    assert sum(map(sum, flagged.values())) > 0  # the rule does meet honest sentences
    assert held / len(flagged) < 0.01
