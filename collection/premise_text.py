"""The text rules of premise import: what counts as a narrative sentence, and how raw text
becomes sentences. Plain Python (no database), so the rules can be read and tested alone.

MultiNLI §2.1 built its premises "with minimal preprocessing": unique sentences within a genre,
nothing under eight characters, and no non-narrative writing (mathematical formulae,
bibliographic references, lists). Plain text: blank lines separate paragraphs, wrapped lines are
joined, and pysbd (rule-based, offline) splits the paragraphs into sentences. Lines that are not
narrative (a list item, a reference, a formula, a row of figures, a heading) are recognised as
whole lines before they can be glued to their neighbours, and dropped whole.
"""

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

MIN_CHARS = 8
# A premise is one sentence; anything longer is not one (a 10 MB line with no sentence end, a
# table flattened into a line). The import passes settings.NLI["MAX_PREMISE_CHARS"].
MAX_CHARS = 1000
# Characters no sentence holds (PostgreSQL text cannot even store NUL).
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class DropReason:
    """Why a sentence did not become a premise (the keys of `PremiseImportReport.dropped`)."""

    DUPLICATE_IN_IMPORT = "duplicate_in_import"
    DUPLICATE_EARLIER = "duplicate_earlier"
    TOO_SHORT = "too_short"
    LIST_ITEM = "list_item"
    REFERENCE = "reference"
    FORMULA = "formula"
    SYMBOLS = "symbols"
    HEADING = "heading"
    PROMPT_ID_TAKEN = "prompt_id_taken"
    TOO_LONG = "too_long"
    CONTROL_CHARACTERS = "control_characters"

    LABELS: dict[str, str] = {
        DUPLICATE_IN_IMPORT: "duplicate within this import",
        DUPLICATE_EARLIER: "duplicate of an earlier import",
        TOO_SHORT: f"too short (under {MIN_CHARS} characters)",
        LIST_ITEM: "list item",
        REFERENCE: "bibliographic reference",
        FORMULA: "formula",
        SYMBOLS: "mostly digits or symbols",
        HEADING: "heading or fragment (no lowercase word, or ends with a colon)",
        PROMPT_ID_TAKEN: "promptID already used by another premise",
        TOO_LONG: "too long (over the maximum premise length)",
        CONTROL_CHARACTERS: "control characters (e.g. NUL)",
    }


# --- what is not narrative ---------------------------------------------------------------------

# A Markdown heading ("## Getting there"): a heading whatever its words, never glued to the next line.
MARKDOWN_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+\S")
BULLET_RE = re.compile(r"^\s*[-*•·‣◦▪▫●○■□➢➤►✓✔]\s+\S")
# "1." "12)" "(3)" "a)" "(b)" "b." "iv." : numbered or lettered items. Years ("1990. ") are not.
NUMBERED_RE = re.compile(r"^\s*(?:\(?\d{1,3}[.)]|\(\d{1,3}\)|\(?[a-z][.)]|\([a-zA-Z]\)|\(?[ivx]{1,5}[.)])\s+\S")

REFERENCE_RES = [
    re.compile(r"^\s*\[\w{1,12}\]\s"),  # "[12] Smith ...", "[Smi99] ..."
    re.compile(r"\bdoi\s*:|\bdoi\.org/|\barxiv\s*:\s*\d|\bISBN[\s:-]*[\dX]", re.I),
    # "Smith, J. (1999)." / "Smith, J. A., and Jones, K. 1999."
    re.compile(r"^\s*[A-Z][\w'’-]+,\s+(?:[A-Z]\.\s*){1,3}.{0,200}?\(?\b(?:1[5-9]|20)\d\d[a-z]?\b\)?"),
    re.compile(r"\bet al\.?,?\s*\(?(?:1[5-9]|20)\d\d"),  # "et al., 1999" / "et al. (1999)"
    re.compile(r"\b\d{1,4}\s*\(\d{1,4}\)\s*[:,]\s*\d{1,5}\s*[-–—]\s*\d{1,5}"),  # "12(3): 45–67"
    re.compile(r"\bpp?\.\s*\d{1,5}\s*[-–—]\s*\d{1,5}"),  # "pp. 45-67"
    re.compile(r"\bVol\.\s*\d+\s*,\s*No\.\s*\d+", re.I),
]

RELATION_CHARS = set("=<>≤≥≠≈≡∝")
OPERATOR_CHARS = set("+*/^=<>≤≥≠≈≡∝±×÷∑∏∫√∂∞∈∉⊂⊆∪∩∀∃→⇒⇔")
PURE_MATH_CHARS = set("≤≥≠≈≡∝±×÷∑∏∫√∂∞∈∉⊂⊆∪∩∀∃⇒⇔")
WORD_RE = re.compile(r"[^\W\d_]+")


def is_reference(text: str) -> bool:
    return any(pattern.search(text) for pattern in REFERENCE_RES)


def _is_mathy(token: str) -> bool:
    """A token that reads as mathematics: a number, an operator, a lone variable, '3y', 'f(x)'."""
    stripped = token.strip(".,;:()[]{}")
    if not stripped:
        return True
    if any(ch in OPERATOR_CHARS or ch.isdigit() for ch in stripped):
        return True
    return len(stripped) == 1 and stripped not in {"a", "A", "I"}


def is_formula(text: str) -> bool:
    if any(ch in PURE_MATH_CHARS for ch in text):
        return True
    tokens = text.split()
    if not tokens:
        return False
    mathy = sum(_is_mathy(token) for token in tokens) / len(tokens)
    relations = sum(ch in RELATION_CHARS for ch in text)
    operators = sum(ch in OPERATOR_CHARS for ch in text)
    # "x = 3y + 2": a relation among mostly mathematical tokens. "a = b" inside a long sentence
    # of words ("the ratio is roughly 2 = good") stays narrative.
    if relations and mathy >= 0.5:
        return True
    return operators >= 3 and mathy >= 0.6


def is_mostly_symbols(text: str) -> bool:
    """Rows of figures, rules of dashes, page numbers: fewer letters than other characters."""
    visible = [ch for ch in text if not ch.isspace()]
    if not visible:
        return True
    letters = sum(ch.isalpha() for ch in visible)
    return letters < 0.5 * len(visible)


def lowercase_word_count(text: str) -> int:
    return sum(word[0].islower() for word in WORD_RE.findall(text))


def has_lowercase_word(text: str) -> bool:
    """Why headings go: a sentence of eight characters or more nearly always has a lowercase
    word ("the", "of", a verb), while chapter headings, running heads, titles, bylines and lists
    of names have none. The cost is the odd all-capitals shout ("GET OUT!"), which the report
    shows under its own reason, so a researcher who wants those can see how many there were."""
    return lowercase_word_count(text) > 0


def line_drop_reason(line: str) -> str | None:
    """Why a whole raw line is not narrative, or None. Checked before lines are joined."""
    if is_reference(line):
        return DropReason.REFERENCE
    if is_formula(line):
        return DropReason.FORMULA
    if is_mostly_symbols(line) and lowercase_word_count(line) < 3:
        # A row of figures or a rule of dashes; a line with a run of words ("! ! ! so go and get
        # dancing ! ! !") is left whole for the sentence rules, so no sentence loses its middle.
        return DropReason.SYMBOLS
    return None


def sentence_drop_reason(sentence: str, max_chars: int = MAX_CHARS) -> str | None:
    """Why one (whitespace-normalised) sentence is not a premise, or None."""
    if _CONTROL_RE.search(sentence):
        return DropReason.CONTROL_CHARACTERS
    if len(sentence) < MIN_CHARS:
        return DropReason.TOO_SHORT
    if len(sentence) > max_chars:
        return DropReason.TOO_LONG
    if is_reference(sentence):
        return DropReason.REFERENCE
    if is_formula(sentence):
        return DropReason.FORMULA
    if is_mostly_symbols(sentence):
        return DropReason.SYMBOLS
    if not has_lowercase_word(sentence) or sentence.endswith(":"):
        # "We found that:" only leads in to what follows (a list, a formula, a quote block).
        return DropReason.HEADING
    return None


def normalize(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


# --- reading ----------------------------------------------------------------------------------

SENTENCE_END_RE = re.compile(r"[.!?…:;][\"'”’)\]]*$")
# What pysbd cuts off after a pre-tokenized " ." at the end of a paragraph: a closing quote or
# bracket on its own, which belongs to the sentence before it.
CLOSING_ONLY_RE = re.compile(r"^[\"'”’)\]\s]+$")
INNER_BOUNDARY_RE = re.compile(r"[.!?…][\"'”’)\]]*\s")


@dataclass
class Block:
    """A paragraph to split into sentences, or a non-narrative line to drop whole."""

    text: str
    drop_reason: str | None = None


class OverlongLine(str):
    """The start of a line longer than the reader holds (premise_import reads the rest without
    keeping it): no premise, dropped whole as too long."""


@dataclass
class HeldText:
    """The most `text_blocks` held at once while reading: lines and characters of one paragraph."""

    most_lines: int = 0
    most_chars: int = 0


# A paragraph this many times longer than the longest premise is dropped whole.
MAX_PARAGRAPH_FACTOR = 200
# A paragraph of this many lines is cut at the next line that starts a sentence after one that
# ends one, so text without blank lines (one sentence a line) is never held whole.
PARAGRAPH_LINES = 100
# Where a paragraph may be cut: a line that ends a sentence, then a line that starts one.
_ENDS_SENTENCE_RE = re.compile(r"[.!?…][\"'”’)\]]*$")
_STARTS_SENTENCE_RE = re.compile(r"^[\"'“‘(\[]*[A-Z0-9]")
# What is kept of a paragraph dropped as too long (its report shows the first 100 characters).
_TOO_LONG_KEPT = 1000


def _is_heading_line(line: str) -> bool:
    """A short line with no lowercase word and no sentence end: "CHAPTER ONE", "The Lost City".
    (Only asked where a sentence may start, so "New York City." wrapped mid-sentence is safe.)"""
    stripped = line.strip()
    return not (has_lowercase_word(stripped) or SENTENCE_END_RE.search(stripped) or len(stripped.split()) > 12)


def _join(lines: Iterable[str]) -> str:
    text = ""
    for line in lines:
        line = line.strip()
        if text.endswith("-") and len(text) > 1 and text[-2].isalpha():
            text += line  # "well-\nknown" -> "well-known": keep the hyphen, drop the break
        elif text:
            text += " " + line
        else:
            text = line
    return text


def text_blocks(
    lines: Iterable[str], max_chars: int = MAX_PARAGRAPH_FACTOR * MAX_CHARS, held: HeldText | None = None
) -> Iterator[Block]:
    """Paragraphs and non-narrative lines of plain text, in order.

    A line is judged on its own only where a new sentence may start, so a wrapped line that happens
    to begin "12. " or "- " in the middle of a sentence is not cut out of it. Indented lines continue
    a list item or reference; a reference line with no sentence end is continued by the next line.

    What is held stays bounded whatever the text's shape: a paragraph of PARAGRAPH_LINES lines ends
    at the next sentence boundary at a line's end, and one that grows past `max_chars` without one
    is dropped whole as too long without holding the rest of it. `held` records the most held.
    """
    paragraph: list[str] = []  # lines of the paragraph being read
    chars = 0  # their length
    overlong: Block | None = None  # a paragraph past max_chars, whose further lines are not kept
    item: tuple[str, list[str]] | None = None  # (reason, lines) of a list item or reference being read
    previous: str | None = None  # the last line read in this paragraph or item

    def flush() -> Iterator[Block]:
        nonlocal paragraph, chars, overlong, item, previous
        if item is not None:
            yield Block(_join(item[1]), item[0])
        if overlong is not None:
            yield overlong
        if paragraph:
            yield Block(_join(paragraph))
        paragraph, chars, overlong, item, previous = [], 0, None, None, None

    for raw in lines:
        if isinstance(raw, OverlongLine):
            yield from flush()
            yield Block(raw.strip()[:_TOO_LONG_KEPT], DropReason.TOO_LONG)
            continue
        line = raw.rstrip("\r\n")
        if not line.strip():
            yield from flush()
            continue
        if (
            (overlong is not None or len(paragraph) >= PARAGRAPH_LINES)
            and item is None
            and _ENDS_SENTENCE_RE.search((previous or "").rstrip())
            and _STARTS_SENTENCE_RE.match(line.lstrip())
        ):
            yield from flush()
        if overlong is not None:
            previous = line  # the rest of a paragraph already dropped as too long: not kept
            continue
        if (
            item is not None
            and not BULLET_RE.match(line)
            and (
                line[:1] in (" ", "\t")
                or (item[0] == DropReason.REFERENCE and not SENTENCE_END_RE.search((previous or "").strip()))
            )
        ):
            item[1].append(line)
            previous = line
            continue
        at_sentence_start = previous is None or item is not None or bool(SENTENCE_END_RE.search(previous.strip()))
        reason = None
        if at_sentence_start and (BULLET_RE.match(line) or NUMBERED_RE.match(line)):
            reason = DropReason.LIST_ITEM
        elif at_sentence_start and MARKDOWN_HEADING_RE.match(line):
            reason = DropReason.HEADING
        elif at_sentence_start and len(normalize(line)) < MIN_CHARS and not SENTENCE_END_RE.search(line.strip()):
            # "Hi" on a line of its own: too short to be a premise (what the sentence rules would
            # say), not a heading; counted as the line it is, never glued to the next one.
            reason = DropReason.TOO_SHORT
        elif at_sentence_start:
            reason = line_drop_reason(line)
            if reason is None and _is_heading_line(line):
                reason = DropReason.HEADING
        if reason is not None:
            yield from flush()
            if reason in (DropReason.LIST_ITEM, DropReason.REFERENCE):
                item, previous = (reason, [line]), line
            else:
                yield Block(line.strip(), reason)
            continue
        if item is not None or (previous is not None and previous.rstrip().endswith(":")):
            # A line ending in a colon leads into what follows (a list, a quote, an answer): it is
            # not one sentence with the next line, so it becomes a block (a fragment) of its own.
            yield from flush()
        paragraph.append(line)
        chars += len(line)
        previous = line
        if held is not None:
            held.most_lines = max(held.most_lines, len(paragraph))
            held.most_chars = max(held.most_chars, chars)
        if chars > max_chars:
            overlong = Block(_join(paragraph)[:_TOO_LONG_KEPT], DropReason.TOO_LONG)
            paragraph, chars = [], 0
    yield from flush()


_segmenter: Any = None  # pysbd.Segmenter, imported on first use; pysbd ships no types


def split_sentences(paragraph: str) -> list[str]:
    """pysbd's rule-based segmentation of one paragraph. pysbd costs milliseconds a paragraph, so a
    paragraph with no inner sentence end is one sentence, and pysbd's processed sentences are taken
    directly: `segment` would search the paragraph once per sentence for spans never used here."""
    global _segmenter
    if not INNER_BOUNDARY_RE.search(paragraph.rstrip()):
        return [paragraph]
    if _segmenter is None:
        import pysbd

        _segmenter = pysbd.Segmenter(language="en", clean=False)
    sentences: list[str] = []
    for sentence in (s.strip() for s in _segmenter.processor(paragraph).process()):
        if sentences and CLOSING_ONLY_RE.match(sentence):
            sentences[-1] += " " + sentence  # "… to Keep ." + "'" -> "… to Keep . '"
        elif sentence:
            sentences.append(sentence)
    return sentences


def segment_block(item: tuple[Block, int], max_premise_chars: int) -> tuple[Block, int, list[str] | None]:
    """(block, position) -> (block, position, its sentences, or None when the block is dropped).
    Here, without Django, so that worker processes of a fresh interpreter can run it."""
    block, position = item
    if block.drop_reason is None and len(block.text) > MAX_PARAGRAPH_FACTOR * max_premise_chars:
        # Far longer than any paragraph of premises: dropped whole, not fed to the sentence
        # splitter (which would take minutes on a 10 MB line and still yield no premise).
        block.drop_reason = DropReason.TOO_LONG
    return block, position, (None if block.drop_reason is not None else split_sentences(block.text))
