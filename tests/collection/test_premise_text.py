"""Edge cases of turning text into premise sentences (collection.premise_text)."""

from collection.premise_text import (
    DropReason,
    sentence_drop_reason,
    split_sentences,
    text_blocks,
)


def blocks(*lines):
    return [(block.text, block.drop_reason) for block in text_blocks(lines)]


def test_a_colon_lead_in_is_not_glued_to_the_next_short_line():
    found = blocks("We found that:", "Ok.", "Then more text follows here in the report.")
    assert found[0] == ("We found that:", None)
    assert sentence_drop_reason(found[0][0]) == DropReason.HEADING  # a fragment, dropped with its reason
    assert not any("that: Ok" in text for text, _ in found)
    assert found[1][0].startswith("Ok.")


def test_a_colon_inside_a_line_still_joins_wrapped_lines():
    assert blocks("The report said: the river rose", "two metres overnight.") == [
        ("The report said: the river rose two metres overnight.", None)
    ]


def test_a_closing_quote_after_a_final_tokenized_period_stays_with_its_sentence():
    # DNC's pre-tokenized contexts: pysbd used to cut the closing quote off as a "sentence" of its own.
    for context in [
        "It 's a scene by a painter named W.H.S . Koerner called ' A Charge to Keep . '",
        "He did comment on what he meant by the phrase . '",
    ]:
        assert split_sentences(context) == [context]
    # A quote that opens a new sentence stays where it is.
    assert split_sentences("He stopped. ' Why ? ' she asked him quietly .") == [
        "He stopped.",
        "' Why ? ' she asked him quietly .",
    ]
