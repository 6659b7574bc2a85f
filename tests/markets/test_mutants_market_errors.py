"""A market's error as the platform keeps it: its message one line, its runs of whitespace one
space, cut to 300 characters; its HTTP status and the market's error code as given, and no status
and an empty code when none was given."""

from markets.clients import MarketError, MarketTimeout


def test_a_market_error_is_one_line_with_single_spaces():
    error = MarketError("  Prolific said:\n\tthe study  is\r\nnot yours.  ")

    assert str(error) == "Prolific said: the study is not yours."


def test_a_market_error_is_cut_to_300_characters():
    words = "word " * 100

    assert str(MarketError(words)) == words[:300]
    assert len(str(MarketTimeout("x" * 301))) == 300


def test_a_market_error_keeps_the_status_and_code_it_was_given():
    error = MarketError("Throttled.", status=429, code="ThrottlingException")

    assert (error.status, error.code) == (429, "ThrottlingException")


def test_a_market_error_given_no_status_or_code_has_none_and_an_empty_code():
    error = MarketError("No connection.")

    assert error.status is None and error.code == ""
