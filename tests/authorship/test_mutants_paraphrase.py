"""Template signatures (authorship.paraphrase) at their edges: which endings fold to a lemma and at
which word lengths they start to (short words and function words stay as written, a doubled final
consonant is undone except l, s and z), how text is normalised before it is split, which words of a
signature are the hypothesis's own, how many word edits turn one sentence into another, and how a
stored signature is cut at a word to its stored length, its own words cut to theirs and sorted.

Plain pytest, no database."""

import pytest

from authorship.paraphrase import (
    MAX_SIGNATURE_CHARS,
    MAX_WORD_CHARS,
    SLOT,
    _fold_doubled_consonant,
    lemma,
    lemmas,
    own_words,
    signature,
    stored_signature,
    word_edits,
)


@pytest.mark.parametrize(
    ("stem", "folded"),
    [
        ("runn", "run"),
        ("egg", "eg"),
        ("tt", "tt"),
        ("fall", "fall"),
        ("dress", "dress"),
        ("buzz", "buzz"),
        ("jump", "jump"),
    ],
)
def test_a_doubled_final_consonant_is_undone_from_three_letters_on_except_l_s_z(stem: str, folded: str) -> None:
    assert _fold_doubled_consonant(stem) == folded


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        # Irregular forms first, whatever their ending.
        ("men", "man"),
        ("people", "person"),
        # Three letters or fewer, and function words, stay as written.
        ("gas", "gas"),
        ("does", "does"),
        ("these", "these"),
        ("cats", "cat"),
        # -ies from five letters on; "ties" is "tie" plus s.
        ("ties", "tie"),
        ("flies", "fly"),
        ("ladies", "lady"),
        # -ing from six letters on, its doubled consonant undone.
        ("bring", "bring"),
        ("eating", "eat"),
        ("running", "run"),
        ("falling", "fall"),
        # -ed from five letters on.
        ("bred", "bred"),
        ("owned", "own"),
        ("robbed", "rob"),
        ("dressed", "dress"),
        # -es after ch, sh, ss and x; a plain -s otherwise, but not after ss, us or is.
        ("watches", "watch"),
        ("dishes", "dish"),
        ("dresses", "dress"),
        ("boxes", "box"),
        ("glass", "glass"),
        ("cactus", "cactus"),
        ("tennis", "tennis"),
        ("bikes", "bike"),
    ],
)
def test_each_ending_folds_at_its_word_length(word: str, expected: str) -> None:
    assert lemma(word) == expected


def test_text_is_normalised_and_case_folded_before_it_is_split() -> None:
    # A ligature is two letters; the sharp s folds to "ss", as its capital spelling does.
    assert lemmas("The \ufb01sh of STRASSE and Straße") == ["the", "fish", "of", "strasse", "and", "strasse"]


def test_own_words_are_the_words_neither_slotted_nor_function_words() -> None:
    assert own_words(("the", SLOT, "is", "riding", SLOT, "bike", "bike")) == {"riding", "bike"}
    assert own_words((SLOT, "the", "a")) == frozenset()
    assert own_words(()) == frozenset()


def test_the_premises_function_words_are_not_slotted_out() -> None:
    # "the" and "of" are in the premise too, yet stay: only content words are the premise's.
    assert signature("The edge of the city", "The man of the city") == ("the", "edge", "of", "the", SLOT)


@pytest.mark.parametrize(
    ("first", "second", "edits"),
    [
        ((), (), 0),
        ((), ("a", "b"), 2),
        (("a", "b", "c"), (), 3),
        (("a", "b", "c"), ("a", "b", "c"), 0),
        (("a", "b", "c"), ("a", "x", "c"), 1),
        (("a", "b", "c"), ("a", "c"), 1),
        (("a", "c"), ("a", "b", "c"), 1),
        (("a", "b"), ("b", "a"), 2),
        (("a", "b", "c", "d"), ("x", "a", "b", "c"), 2),
        (("k", "i", "t", "t", "e", "n"), ("s", "i", "t", "t", "i", "n", "g"), 3),
    ],
)
def test_word_edits_count_insertions_deletions_and_replacements(
    first: tuple[str, ...], second: tuple[str, ...], edits: int
) -> None:
    assert word_edits(first, second) == edits
    assert word_edits(second, first) == edits


def test_a_signature_of_the_stored_length_is_kept_whole() -> None:
    hypothesis = " ".join(["wxyz"] * 59 + ["abcde"])
    text, words = stored_signature(hypothesis, "A dog runs.")
    assert len(text) == MAX_SIGNATURE_CHARS == 300
    assert text == hypothesis
    assert words == ["abcde", "wxyz"]


def test_a_longer_signature_is_cut_at_the_last_whole_word_within_the_stored_length() -> None:
    # 299 characters of words, then a space at 299, "q" at 300 and a space at 301.
    hypothesis = " ".join(["wxyz"] * 60 + ["q", "rstu"])
    text, words = stored_signature(hypothesis, "A dog runs.")
    assert text == " ".join(["wxyz"] * 60)
    assert words == ["wxyz"]  # the words cut off are no own words of the stored signature
    # A space exactly at the stored length: the words before it are kept whole.
    text, words = stored_signature(" ".join(["wxyz"] * 59 + ["abcde", "fg"]), "A dog runs.")
    assert text == " ".join(["wxyz"] * 59 + ["abcde"])
    assert words == ["abcde", "wxyz"]


def test_own_words_are_cut_to_their_stored_length_and_sorted() -> None:
    long_word = "k" * 50
    text, words = stored_signature(f"Zebras watch {long_word} near a dog", "A dog runs.")
    assert text == f"zebra watch {long_word} near a {SLOT}"
    assert words == ["k" * MAX_WORD_CHARS, "watch", "zebra"]
    assert MAX_WORD_CHARS == 40
