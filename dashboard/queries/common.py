"""SQL expressions and small helpers that several dashboard pages share."""

from corpus.tallies import word_count  # noqa: F401 (defined once, in the core: the tallies count words too)


def ratio(part, whole):
    return part / whole if whole else None
