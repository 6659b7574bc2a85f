"""Per-premise (SPE) labels of MPE items in plain Python: the consensus rule, the TSV export format
and the Table 4 comparison of Lai, Bisk and Hockenmaier (2017, §5.2). No Django: the export's
reader and the analysis run on a file alone.

Table 4 sorts the items by how many of their four consensus labels agree with the item's MPE label
(0..4) and compares majority voting (a 2-2 or 2-1-1 split predicts nothing, so it is wrong) and the
E > C heuristic against the MPE label. A `-` consensus agrees with no MPE label and counts as
neither E nor C.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from corpus.labels import CONTRADICTION, ENTAILMENT, LABELS, NEUTRAL, NO_GOLD

JUDGMENTS_PER_PREMISE = 3
CONSENSUS_MAJORITY = 2
PREMISES_PER_ITEM = 4
MAJORITY_OF_FOUR = 3

# The paper's figures for MPE dev (Table 4 and §5.2), shown beside ours.
PAPER_CATEGORY_PERCENT = {0: 21.8, 1: 26.9, 2: 16.7, 3: 24.8, 4: 9.8}
PAPER_MAJORITY_PERCENT = 34.6
PAPER_HEURISTIC_PERCENT = 41.7


def consensus(labels: Iterable[str]) -> str:
    """The label of at least two of the three judgments; `-` with fewer than three or a 1-1-1 split."""
    labels = list(labels)
    if len(labels) < JUDGMENTS_PER_PREMISE:
        return NO_GOLD
    label, count = Counter(labels).most_common(1)[0]
    return label if count >= CONSENSUS_MAJORITY else NO_GOLD


def majority_vote(spe_labels: Sequence[str]) -> str:
    """The label of at least three of the four SPE labels, else `-` (no prediction)."""
    counts = Counter(label for label in spe_labels if label in LABELS)
    for label, count in counts.items():
        if count >= MAJORITY_OF_FOUR:
            return label
    return NO_GOLD


def heuristic_vote(spe_labels: Sequence[str]) -> str:
    """§5.2's heuristic: E > C predicts entailment, C > E contradiction, otherwise neutral."""
    entailments = sum(1 for label in spe_labels if label == ENTAILMENT)
    contradictions = sum(1 for label in spe_labels if label == CONTRADICTION)
    if entailments > contradictions:
        return ENTAILMENT
    if contradictions > entailments:
        return CONTRADICTION
    return NEUTRAL


@dataclass
class Table4:
    """Table 4 over the items whose four premises each have three judgments."""

    items: int = 0
    category_counts: dict[int, int] = field(default_factory=lambda: dict.fromkeys(range(PREMISES_PER_ITEM + 1), 0))
    majority_correct: int = 0
    heuristic_correct: int = 0
    items_with_no_consensus: int = 0  # items with at least one `-` among their SPE labels

    def share(self, count: int) -> float | None:
        return count / self.items if self.items else None

    @property
    def category_shares(self) -> dict[int, float | None]:
        return {agree: self.share(count) for agree, count in self.category_counts.items()}

    @property
    def majority_accuracy(self) -> float | None:
        return self.share(self.majority_correct)

    @property
    def heuristic_accuracy(self) -> float | None:
        return self.share(self.heuristic_correct)

    def lines(self) -> list[str]:
        """The table as text (the export command prints it), with the paper's dev figures beside."""

        def pct(value: float | None) -> str:
            return "-" if value is None else f"{100 * value:.1f}%"

        out = [f"Table 4 (MPE §5.2) over {self.items} items with four consensus labels:"]
        out.append("  SPE labels agreeing with the MPE label: items (% here / % MPE dev)")
        for agree, count in self.category_counts.items():
            out.append(f"  {agree}: {count} ({pct(self.share(count))} / {PAPER_CATEGORY_PERCENT[agree]}%)")
        out.append(
            f"  majority voting (3 or 4 of 4): {pct(self.majority_accuracy)} (MPE dev {PAPER_MAJORITY_PERCENT}%)"
        )
        out.append(
            f"  heuristic (E>C: E, C>E: C, else N): {pct(self.heuristic_accuracy)} (MPE dev {PAPER_HEURISTIC_PERCENT}%)"
        )
        out.append(f"  items with a '-' consensus among their four: {self.items_with_no_consensus}")
        return out


def table4(items: Iterable[tuple[str, Sequence[str]]]) -> Table4:
    """Table 4 from (MPE label, the four SPE consensus labels in premise order) per item."""
    table = Table4()
    for mpe_label, spe_labels in items:
        if len(spe_labels) != PREMISES_PER_ITEM:
            raise ValueError(f"an MPE item has {PREMISES_PER_ITEM} SPE labels, not {len(spe_labels)}")
        table.items += 1
        table.category_counts[sum(1 for label in spe_labels if label == mpe_label)] += 1
        table.majority_correct += majority_vote(spe_labels) == mpe_label
        table.heuristic_correct += heuristic_vote(spe_labels) == mpe_label
        table.items_with_no_consensus += NO_GOLD in spe_labels
    return table


# --- the TSV export ------------------------------------------------------------------------------

COLUMNS = (
    "item_id",
    "premise_index",
    "premise_source",
    "premise",
    "hypothesis",
    "judgment_1",
    "judgment_2",
    "judgment_3",
    "consensus",
    "mpe_gold_label",
)


@dataclass(frozen=True)
class PremiseLabelRow:
    """One premise-hypothesis pair of an item: its judgments in the order they came (at most three)."""

    item_id: str
    premise_index: int
    premise_source: str
    premise: str
    hypothesis: str
    judgments: tuple[str, ...]
    consensus: str
    mpe_gold_label: str


class FormatError(ValueError):
    pass


def _clean(text: str) -> str:
    # Tabs and line breaks would break the row; captions and hypotheses have none, but be sure.
    return " ".join(str(text).split("\t")).replace("\r", " ").replace("\n", " ")


def write_rows(rows: Iterable[PremiseLabelRow], stream: TextIO) -> int:
    """Write the header and one tab-separated line per row; returns the rows written."""
    stream.write("\t".join(COLUMNS) + "\n")
    written = 0
    for row in rows:
        if len(row.judgments) > JUDGMENTS_PER_PREMISE:
            raise FormatError(f"{row.item_id} premise {row.premise_index}: more than three judgments")
        judgments = list(row.judgments) + [""] * (JUDGMENTS_PER_PREMISE - len(row.judgments))
        fields = [
            row.item_id,
            str(row.premise_index),
            row.premise_source,
            row.premise,
            row.hypothesis,
            *judgments,
            row.consensus,
            row.mpe_gold_label,
        ]
        stream.write("\t".join(_clean(value) for value in fields) + "\n")
        written += 1
    return written


def read_rows(stream: Iterable[str]) -> list[PremiseLabelRow]:
    """The rows of a file `write_rows` wrote; FormatError names the line of a malformed one."""
    reader = csv.reader(stream, delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(reader, None)
    if header is None or tuple(header) != COLUMNS:
        raise FormatError(f"line 1: expected the header {' '.join(COLUMNS)}")
    rows = []
    for number, fields in enumerate(reader, 2):
        if len(fields) != len(COLUMNS):
            raise FormatError(f"line {number}: {len(fields)} fields, not {len(COLUMNS)}")
        record = dict(zip(COLUMNS, fields, strict=True))
        judgments = tuple(
            record[f"judgment_{n}"] for n in range(1, JUDGMENTS_PER_PREMISE + 1) if record[f"judgment_{n}"]
        )
        if any(label not in LABELS for label in judgments) or record["consensus"] not in (*LABELS, NO_GOLD):
            raise FormatError(f"line {number}: a judgment or the consensus is not a label")
        if not record["premise_index"].isdigit():
            raise FormatError(f"line {number}: the premise index is not a number")
        rows.append(
            PremiseLabelRow(
                item_id=record["item_id"],
                premise_index=int(record["premise_index"]),
                premise_source=record["premise_source"],
                premise=record["premise"],
                hypothesis=record["hypothesis"],
                judgments=judgments,
                consensus=record["consensus"],
                mpe_gold_label=record["mpe_gold_label"],
            )
        )
    return rows


def table4_from_rows(rows: Iterable[PremiseLabelRow]) -> Table4:
    """Table 4 from an export: the items whose four premises each have three judgments."""
    by_item: dict[str, list[PremiseLabelRow]] = {}
    for row in rows:
        by_item.setdefault(row.item_id, []).append(row)
    complete = []
    for item_rows in by_item.values():
        item_rows.sort(key=lambda row: row.premise_index)
        if len(item_rows) == PREMISES_PER_ITEM and all(
            len(row.judgments) == JUDGMENTS_PER_PREMISE for row in item_rows
        ):
            complete.append((item_rows[0].mpe_gold_label, [row.consensus for row in item_rows]))
    return table4(complete)
