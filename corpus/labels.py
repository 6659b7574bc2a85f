"""The label vocabulary and the counts of the papers' rules, in plain Python.

Free of Django on purpose: the training code on a GPU node reads snapshot files with these
names and never loads the web site's models. `corpus.models.Label` offers the same values to
the database and forms.
"""

ENTAILMENT, NEUTRAL, CONTRADICTION = "entailment", "neutral", "contradiction"
LABELS = (ENTAILMENT, NEUTRAL, CONTRADICTION)
NO_GOLD = "-"

# A pair's labels: the author's plus four validators' (MultiNLI §2.1, SNLI §2.2) ...
LABELS_PER_PAIR = 5
AUTHOR_POSITION = 1
# ... and its gold label is the one chosen by at least 3 of them, else NO_GOLD.
GOLD_MAJORITY = 3

# --- label schemes (DNC, Poliak et al. 2018) ----------------------------------------------------
# A dataset collects labels under one scheme. Whatever the scheme, a label row stores one of the
# three core labels above, so vote counters, the 3-of-5 gold rule and recomputes stay one code path:
#   three_way: entailment / neutral / contradiction, stored as they are;
#   two_way:   entailed -> "entailment", not-entailed -> "neutral" (neutral: the weaker claim, "the
#              first sentence does not make the second true"; the contradiction column stays 0);
#   ordinal:   1-5 likelihood (Zhang et al. 2017, DNC's kg_relations); the raw value is kept in
#              ValidationLabel.ordinal and the label is its two-way mapping: 5 -> entailed,
#              1-4 -> not-entailed (DNC footnote 12, Appendix B.4).
# Everything shown or written (pages, statistics, snapshots, DNC export) speaks the scheme's words.
THREE_WAY_SCHEME, TWO_WAY_SCHEME, ORDINAL_SCHEME = "three_way", "two_way", "ordinal"
ENTAILED, NOT_ENTAILED = "entailed", "not-entailed"
TWO_WAY_LABELS = (ENTAILED, NOT_ENTAILED)
ORDINAL_VALUES = (1, 2, 3, 4, 5)
ORDINAL_WORDS = {5: "very likely", 4: "likely", 3: "plausible", 2: "technically possible", 1: "impossible"}
ORDINAL_ENTAILED = 5

_TWO_WAY_STORED = {ENTAILED: ENTAILMENT, NOT_ENTAILED: NEUTRAL}
_STORED_TWO_WAY = {stored: word for word, stored in _TWO_WAY_STORED.items()}


def scheme_labels(scheme: str | None) -> tuple[str, ...]:
    """The labels a scheme's gold labels (and training targets) are named with."""
    return LABELS if scheme in (None, THREE_WAY_SCHEME) else TWO_WAY_LABELS


def stored_categories(scheme: str | None) -> tuple[str, ...]:
    """The core labels a scheme's votes can land in (the categories of its Fleiss κ)."""
    return LABELS if scheme in (None, THREE_WAY_SCHEME) else (ENTAILMENT, NEUTRAL)


def ordinal_to_two_way(value: int) -> str:
    return ENTAILED if value == ORDINAL_ENTAILED else NOT_ENTAILED


def parse_ordinal(answer: object) -> int | None:
    """1..5 from an int or its text, else None."""
    if isinstance(answer, bool):
        return None
    try:
        value = int(str(answer).strip())
    except (TypeError, ValueError):
        return None
    return value if value in ORDINAL_VALUES else None


def to_stored(scheme: str | None, answer: object) -> tuple[str, int | None]:
    """(core label, ordinal or None) for an answer given in the scheme's words; ValueError if it is none of them."""
    scheme = scheme or THREE_WAY_SCHEME
    if scheme == THREE_WAY_SCHEME:
        if answer in LABELS:
            return answer, None
        raise ValueError(f"'{answer}' is not a label; choose one of {', '.join(LABELS)}.")
    if scheme == TWO_WAY_SCHEME:
        if answer in _TWO_WAY_STORED:
            return _TWO_WAY_STORED[answer], None
        raise ValueError(f"'{answer}' is not a label; choose one of {', '.join(TWO_WAY_LABELS)}.")
    if scheme == ORDINAL_SCHEME:
        value = parse_ordinal(answer)
        if value is None:
            raise ValueError(f"'{answer}' is not a rating; choose a whole number from 1 to 5.")
        return _TWO_WAY_STORED[ordinal_to_two_way(value)], value
    raise ValueError(f"unknown label scheme {scheme!r}")


def to_scheme(scheme: str | None, stored: str) -> str:
    """A stored core label (or NO_GOLD) in the scheme's words."""
    if scheme in (None, THREE_WAY_SCHEME) or stored == NO_GOLD:
        return stored
    return _STORED_TWO_WAY.get(stored, stored)
