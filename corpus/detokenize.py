"""Tokenised text (DNC's recast contexts and hypotheses, PTB-style imports) as a reader writes it; pure Python.

Recast data keeps the tokeniser's spaces: "I did n't know what I was missing .", "Italy 's",
"i ' m", "said , 'Love". Workers read the text with those spaces closed (a stray space reads as an error); the stored
text stays as imported, so a DNC export is still byte-exact (docs/dnc.md).

A handful of fixed rules, each of which leaves ordinary written text as it is (nobody writes a space
before a full stop or inside "n't"). NLTK's TreebankWordDetokenizer (installed) was tried on the
shared DNC files first: it leaves "i' m" and straight double quotes spaced, so these rules are
written out instead, and each is tested on real recast lines (tests/corpus/test_detokenize.py).
"""

import re

_SPACES = re.compile(r"\s+")
# "i ' m", "they ' re": a clitic whose apostrophe was split off on both sides.
_SPLIT_CLITIC = re.compile(r"(?<=\w) ' (m|s|re|ve|ll|d|t)\b", re.IGNORECASE)
# "did n't", "Italy 's", "they 're", "I 'm", "we 'll", "you 'd", "students ' ".
_CLITIC = re.compile(r"(?<=\S) (n't|'s|'re|'ve|'ll|'d|'m)\b", re.IGNORECASE)
_PLURAL_POSSESSIVE = re.compile(r"(?<=s) '(?= |$)")
# A space before closing punctuation, after opening brackets.
_BEFORE_CLOSING = re.compile(r" +([.,;:!?%)\]}]|\.\.\.)")
_AFTER_OPENING = re.compile(r"([(\[{$]) +")
# PTB quotes, and a straight double-quoted span with spaces inside it.
_PTB_OPEN, _PTB_CLOSE = re.compile(r"`` ?"), re.compile(r" ?''")
_DOUBLE_QUOTED = re.compile(r'(?<!\S)"\s+([^"]*?)\s+"(?!\S)')


def detokenize(text: str) -> str:
    """`text` with tokenisation spaces closed; text without them comes back unchanged (but trimmed)."""
    if not text:
        return text
    out = _SPACES.sub(" ", text).strip()
    out = _SPLIT_CLITIC.sub(r"'\1", out)
    out = _CLITIC.sub(r"\1", out)
    out = _PLURAL_POSSESSIVE.sub("'", out)
    out = _PTB_OPEN.sub('"', out)
    out = _PTB_CLOSE.sub('"', out)
    out = _DOUBLE_QUOTED.sub(r'"\1"', out)
    out = _BEFORE_CLOSING.sub(r"\1", out)
    out = _AFTER_OPENING.sub(r"\1", out)
    return out
