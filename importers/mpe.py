"""The Multiple Premise Entailment corpus (MPE, Lai, Bisk and Hockenmaier 2017): format and rules; pure Python.

The file format, the decisions of the reader and writer, and the paper's rules: docs/mpe.md.
"""

import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# The task as the MPE annotators saw it (paper, Table 2) lives in the core (corpus.mpe_wording),
# where the judgment task reads it; so do the adjudication reasons (corpus.gold).
from corpus import gold
from corpus.giveaways import tokenize
from corpus.gold import ItemSetStatistics, majority

ENTAILMENT, NEUTRAL, CONTRADICTION = "entailment", "neutral", "contradiction"
LABELS = (ENTAILMENT, NEUTRAL, CONTRADICTION)
JUDGMENTS_PER_ITEM = 5
PREMISES_PER_ITEM = 4
OVERLAP_THRESHOLD = 0.5

COLUMNS = (
    "ID",
    "premise1",
    "premise2",
    "premise3",
    "premise4",
    "hypothesis",
    "entailment_judgments",
    "neutral_judgments",
    "contradiction_judgments",
    "gold_label",
)
HEADER = "\t".join(COLUMNS)
_FIRST_JUDGMENT_COLUMN = COLUMNS.index("entailment_judgments")

# The canonical forms only (no leading zeros, no signs), so that formatting gives the text back.
_PREMISE = re.compile(r"(?P<image_id>[^#/\t]+)#(?P<caption_number>0|[1-9][0-9]*)/(?P<text>.*)", re.DOTALL)
_COUNT = re.compile(r"0|[1-9][0-9]*")


class MpeFormatError(ValueError):
    """The file as a whole cannot be read (e.g. its header is not MPE's)."""


class MalformedLine(ValueError):
    """One line that cannot become an item; its message says why."""


@dataclass(frozen=True)
class MpePremise:
    image_id: str  # e.g. "4818829454.jpg"
    caption_number: int  # which of the image's five FLICKR30K captions
    text: str

    @property
    def prefix(self) -> str:
        return f"{self.image_id}#{self.caption_number}/"

    def as_field(self) -> str:
        return self.prefix + self.text


@dataclass(frozen=True)
class Judgments:
    """How many of the five crowd workers chose each label."""

    entailment: int
    neutral: int
    contradiction: int

    def count(self, label: str) -> int:
        count: int = getattr(self, label)
        return count

    def as_dict(self) -> dict[str, int]:
        return {label: self.count(label) for label in LABELS}

    @property
    def total(self) -> int:
        return self.entailment + self.neutral + self.contradiction

    @property
    def split(self) -> tuple[int, ...]:
        """The shape of the vote, largest first: (5, 0, 0), (3, 2, 0), (2, 2, 1), ..."""
        return tuple(sorted(self.as_dict().values(), reverse=True))


@dataclass(frozen=True)
class MpeItem:
    line: int  # 1-based line number in the file it was read from (0 for items built in code)
    item_id: str
    premises: tuple[MpePremise, ...]  # four
    hypothesis: str
    judgments: Judgments
    gold_label: str


@dataclass(frozen=True)
class Problem:
    line: int
    reason: str
    text: str
    repaired: bool = False


@dataclass
class MpeFile:
    path: str
    items: list[MpeItem] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # in line order


# --- reading ---------------------------------------------------------------------------------


def parse_premise(value: str, position: int) -> MpePremise:
    match = _PREMISE.fullmatch(value)
    if not match:
        raise MalformedLine(f"premise{position} lacks the 'imageid#n/' prefix: {value[:40]!r}")
    return MpePremise(match["image_id"], int(match["caption_number"]), match["text"])


def parse_count(value: str, column: str) -> int:
    if not _COUNT.fullmatch(value):
        raise MalformedLine(f"{column} is not a count: {value!r}")
    return int(value)


def _explain_field_count(values: Sequence[str]) -> str:
    """Why a line has the wrong number of fields, naming a space run that stands in for a tab."""
    reason = f"{len(values)} tab-separated fields, expected {len(COLUMNS)}"
    # The columns after the hypothesis are numbers and a label: a space in them is a broken separator.
    for position, value in enumerate(values[_FIRST_JUDGMENT_COLUMN:], start=_FIRST_JUDGMENT_COLUMN):
        spaced = re.search(r"\S( +)\S", value)
        if spaced:
            reason += f"; field {position + 1} ({value!r}) has {len(spaced.group(1))} spaces where a tab belongs"
            break
    return reason


def parse_fields(line_number: int, values: Sequence[str]) -> MpeItem:
    if len(values) != len(COLUMNS):
        raise MalformedLine(_explain_field_count(values))
    item_id, *premise_fields, hypothesis = values[:_FIRST_JUDGMENT_COLUMN]
    counts = [
        parse_count(value, column)
        for value, column in zip(values[_FIRST_JUDGMENT_COLUMN:-1], COLUMNS[_FIRST_JUDGMENT_COLUMN:-1], strict=False)
    ]
    judgments = Judgments(*counts)
    if judgments.total != JUDGMENTS_PER_ITEM:
        raise MalformedLine(f"the judgments add up to {judgments.total}, expected {JUDGMENTS_PER_ITEM}")
    gold_label = values[-1]
    if gold_label not in LABELS:
        raise MalformedLine(f"unknown gold_label {gold_label!r}")
    if not item_id.strip():
        raise MalformedLine("empty ID")
    return MpeItem(
        line=line_number,
        item_id=item_id,
        premises=tuple(parse_premise(value, position) for position, value in enumerate(premise_fields, start=1)),
        hypothesis=hypothesis,
        judgments=judgments,
        gold_label=gold_label,
    )


def parse_line(line_number: int, text: str) -> MpeItem:
    """One line (without its line terminator) -> MpeItem, or MalformedLine."""
    return parse_fields(line_number, text.split("\t"))


def repair_separators(text: str) -> list[str] | None:
    """The fields of a line whose judgment/label columns are separated by spaces instead of tabs, or None."""
    values = text.split("\t")
    if len(values) >= len(COLUMNS):
        return None
    head, tail = values[:_FIRST_JUDGMENT_COLUMN], "\t".join(values[_FIRST_JUDGMENT_COLUMN:]).split()
    repaired = head + tail
    return repaired if len(repaired) == len(COLUMNS) else None


def _lines(text: str) -> list[str]:
    """Lines without their "\\n"; a final newline does not start an extra (empty) line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_mpe(path: str | Path, repair: bool = False) -> MpeFile:
    """Read an MPE TSV file into an MpeFile: the good items and, per bad line, its number and reason."""
    with open(path, encoding="utf-8", newline="") as handle:
        lines = _lines(handle.read())
    if not lines or lines[0].rstrip("\r") != HEADER:
        found = lines[0][:120] if lines else "an empty file"
        raise MpeFormatError(f"{path}: the first line is not MPE's header ({found!r})")
    result = MpeFile(path=str(path))
    for line_number, text in enumerate(lines[1:], start=2):
        try:
            result.items.append(parse_line(line_number, text))
        except MalformedLine as error:
            fields = repair_separators(text) if repair else None
            if fields is None:
                result.problems.append(Problem(line_number, str(error), text))
                continue
            try:
                result.items.append(parse_fields(line_number, fields))
            except MalformedLine:
                result.problems.append(Problem(line_number, str(error), text))
            else:
                result.problems.append(Problem(line_number, str(error), text, repaired=True))
    return result


# --- writing ---------------------------------------------------------------------------------


def format_line(item: MpeItem) -> str:
    """The item as one line of MPE's TSV, without the line terminator."""
    values = [
        item.item_id,
        *(premise.as_field() for premise in item.premises),
        item.hypothesis,
        *(str(item.judgments.count(label)) for label in LABELS),
        item.gold_label,
    ]
    return "\t".join(values)


def write_mpe(path: str | Path, items: Iterable[MpeItem]) -> None:
    """Write the header and the items, one "\\n"-terminated line each."""
    Path(path).write_text("".join(f"{line}\n" for line in [HEADER, *map(format_line, items)]), encoding="utf-8")


# --- the word-overlap filter -----------------------------------------------------------------

# NLTK's English stop-word list (nltk_data corpora/stopwords/english, 179 words), written out here
# because NLTK fetches it with a run-time download. It is the list under which the overlap of
# mpe_train.txt reproduces the paper's Table 1 ("full" columns) to two decimals: mean 0.28 overall,
# 0.34 entailment, 0.28 neutral, 0.23 contradiction (scikit-learn's and spaCy's lists give 0.22 for
# contradiction). The paper does not name its list.
STOP_WORDS = frozenset(
    [
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "you're",
        "you've",
        "you'll",
        "you'd",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "she's",
        "her",
        "hers",
        "herself",
        "it",
        "it's",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "that'll",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "don't",
        "should",
        "should've",
        "now",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "ain",
        "aren",
        "aren't",
        "couldn",
        "couldn't",
        "didn",
        "didn't",
        "doesn",
        "doesn't",
        "hadn",
        "hadn't",
        "hasn",
        "hasn't",
        "haven",
        "haven't",
        "isn",
        "isn't",
        "ma",
        "mightn",
        "mightn't",
        "mustn",
        "mustn't",
        "needn",
        "needn't",
        "shan",
        "shan't",
        "shouldn",
        "shouldn't",
        "wasn",
        "wasn't",
        "weren",
        "weren't",
        "won",
        "won't",
        "wouldn",
        "wouldn't",
    ]
)

_WORD = re.compile(r"[a-z0-9]+")


def overlap_words(sentence: str) -> list[str]:
    """MPE's words: the lower-cased runs of letters and digits in the tokens of `corpus.giveaways.tokenize`
    ("red-haired" -> red, haired; "didn't" -> didn, t); punctuation is not a word."""
    return [word for token in tokenize(sentence) for word in _WORD.findall(token)]


def word_overlap(
    premises: Iterable[MpePremise | str], hypothesis: str, stop_words: Collection[str] = STOP_WORDS
) -> float:
    """The fraction of the hypothesis's non-stop-word tokens that occur in at least one premise.

    Tokens are counted with repetition ("a girl hugs a girl" has two "girl" tokens) and matched
    by exact lower-cased form (the paper's "full" column, not its lemmatized one). A hypothesis
    made only of stop words has nothing that could overlap: 0.0.
    """
    premise_words = {word for premise in premises for word in overlap_words(_premise_text(premise))}
    content = [word for word in overlap_words(hypothesis) if word not in stop_words]
    if not content:
        return 0.0
    return sum(word in premise_words for word in content) / len(content)


def _premise_text(premise: MpePremise | str) -> str:
    return premise.text if isinstance(premise, MpePremise) else premise


# --- labels and adjudication -----------------------------------------------------------------


def majority_label(judgments: Judgments) -> str | None:
    """The label chosen by at least three of the five workers, or None (a 2-2-1 split): corpus.gold's rule."""
    return majority(judgments.as_dict())


def adjudication_reason(judgments: Judgments) -> str | None:
    """Why a researcher must decide this item's label, or None when the majority stands (corpus.gold)."""
    return gold.adjudication_reason(judgments.as_dict())


def adjudication_queue(items: Iterable[MpeItem]) -> list[tuple[MpeItem, str]]:
    """(item, reason) for every item a researcher must adjudicate, in the items' order."""
    return [(item, reason) for item in items if (reason := adjudication_reason(item.judgments))]


# --- statistics ------------------------------------------------------------------------------


def mpe_statistics(items: Iterable[MpeItem]) -> ItemSetStatistics:
    """A file's figures, in the class the database's figures use (corpus.agreement.mpe_statistics)."""
    items = list(items)
    majorities = [majority_label(item.judgments) for item in items]
    reasons = Counter(reason for item in items if (reason := adjudication_reason(item.judgments)) is not None)
    return ItemSetStatistics(
        items=len(items),
        label_counts={label: sum(item.gold_label == label for item in items) for label in LABELS},
        unanimous=sum(item.judgments.split[0] == JUDGMENTS_PER_ITEM for item in items),
        with_majority=sum(majority is not None for majority in majorities),
        gold_equals_majority=sum(
            item.gold_label == majority for item, majority in zip(items, majorities, strict=False)
        ),
        splits=dict(Counter(item.judgments.split for item in items)),
        to_adjudicate=dict(reasons),
    )
