"""A snapshot's JSONL files as token ids, and length-bucketed batches.

Training reads the exported files, never the database, so a run is reproducible from the
snapshot folder alone. Plain Python and torch only, no Django.
"""

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from corpus.giveaways import tokenize as tokenize  # the one tokenizer, shared with the artifacts app
from corpus.labels import LABELS as LABELS  # the training modules read them from here
from corpus.labels import NO_GOLD as NO_GOLD
from modeling.snapshots.format import (
    DEV_SPLITS_FOR_EARLY_STOPPING,
    EVALUATION_SPLITS,
    TRAIN_FILE,
    SnapshotError,
    manifest_labels,
    read_manifest,
    training_files,
    verify_snapshot,
)

LABEL_INDEX = {label: i for i, label in enumerate(LABELS)}
NO_LABEL = -1


PAD, UNK = "<pad>", "<unk>"


@dataclass
class Example:
    premise: list[str]
    hypothesis: list[str]
    label: int
    genre: str = ""
    pair_id: str = ""
    split: str = ""
    source: str = ""  # the row's dataset slug when the export names it, for mixing
    premise_ids: list[int] = field(default_factory=list, repr=False)
    hypothesis_ids: list[int] = field(default_factory=list, repr=False)


def label_index(labels: Sequence[str] = LABELS) -> dict[str, int]:
    """gold label -> class index for a snapshot's label set (manifest_labels: three-way, or entailed / not-entailed)."""
    return {label: i for i, label in enumerate(labels)}


def example_from_row(row: Mapping[str, Any], split: str = "", labels_index: Mapping[str, int] | None = None) -> Example:
    gold = row.get("gold_label", NO_GOLD)
    return Example(
        premise=tokenize(row.get("sentence1", "")),
        hypothesis=tokenize(row.get("sentence2", "")),
        label=(labels_index or LABEL_INDEX).get(gold, NO_LABEL),
        genre=row.get("genre") or "",
        pair_id=str(row.get("pairID", "")),
        split=split,
        source=row.get("dataset") or "",
    )


def read_jsonl(path: str | Path, split: str = "", labels_index: Mapping[str, int] | None = None) -> list[Example]:
    """Examples of one file; a bad line stops everything with its file and line number."""
    examples: list[Example] = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SnapshotError(f"{Path(path).name} line {number}: invalid JSON ({exc.msg})") from exc
            if not isinstance(row, dict) or "sentence1" not in row or "sentence2" not in row:
                raise SnapshotError(f"{Path(path).name} line {number}: not a pair (needs sentence1 and sentence2)")
            examples.append(example_from_row(row, split, labels_index))
    return examples


@dataclass
class SnapshotData:
    train: list[Example]
    evals: dict[str, list[Example]]  # split name -> examples (gold '-' rows included; evaluation skips them)
    manifest: dict[str, Any]
    labels: tuple[str, ...] = LABELS  # class index -> label: the snapshot's label scheme (manifest_labels)

    @property
    def dev_split(self) -> str | None:
        for name in DEV_SPLITS_FOR_EARLY_STOPPING:
            if self.evals.get(name):
                return name
        return None


def load_snapshot(directory: str | Path, expected_hash: str | None = None, verify: bool = True) -> SnapshotData:
    """The snapshot's train and evaluation files, after checking the JSONL files it reads against the manifest."""
    directory = Path(directory)
    manifest: dict[str, Any] = {}
    if verify:
        needed = set(training_files(read_manifest(directory))) if directory.is_dir() else None
        manifest = verify_snapshot(directory, expected_hash, names=needed)
    elif (directory / "manifest.json").exists():
        manifest = read_manifest(directory)
    labels = manifest_labels(manifest)
    index = label_index(labels)
    train = read_jsonl(directory / TRAIN_FILE, "train", index)
    evals: dict[str, list[Example]] = {}
    for split in EVALUATION_SPLITS:
        path = directory / f"{split}.jsonl"
        if path.exists():
            evals[split] = read_jsonl(path, split, index)
    return SnapshotData(train=train, evals=evals, manifest=manifest, labels=labels)


class Vocab:
    def __init__(self, words: Iterable[str]) -> None:
        self.itos = [PAD, UNK, *list(words)]
        self.stoi = {word: i for i, word in enumerate(self.itos)}

    @classmethod
    def build(cls, examples: Iterable[Example], min_count: int = 1, max_size: int | None = None) -> "Vocab":
        counts: Counter[str] = Counter()
        for ex in examples:
            counts.update(ex.premise)
            counts.update(ex.hypothesis)
        words = [w for w, c in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0])) if c >= min_count]
        return cls(words[:max_size] if max_size else words)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str], max_len: int | None = None) -> list[int]:
        ids = [self.stoi.get(token, 1) for token in (tokens[:max_len] if max_len else tokens)]
        # An empty sentence still needs one step for the LSTMs' packed sequences.
        return ids or [1]


def encode_examples(examples: Iterable[Example], vocab: Vocab, max_len: int | None = None) -> Iterable[Example]:
    for ex in examples:
        ex.premise_ids = vocab.encode(ex.premise, max_len)
        ex.hypothesis_ids = vocab.encode(ex.hypothesis, max_len)
    return examples


@dataclass
class Batch:
    premise: torch.Tensor
    premise_lengths: torch.Tensor
    hypothesis: torch.Tensor
    hypothesis_lengths: torch.Tensor
    labels: torch.Tensor
    examples: list[Example]

    def to(self, device: torch.device | str) -> "Batch":
        return Batch(
            self.premise.to(device, non_blocking=True),
            self.premise_lengths,  # pack_padded_sequence wants lengths on the CPU
            self.hypothesis.to(device, non_blocking=True),
            self.hypothesis_lengths,
            self.labels.to(device, non_blocking=True),
            self.examples,
        )

    def __len__(self) -> int:
        return len(self.examples)


def collate(examples: Sequence[Example], pad_to: int | None = None) -> Batch:
    """Pad to the longest sentence of the batch, or to `pad_to` (the unbucketed baseline)."""
    p_len = torch.tensor([len(ex.premise_ids) for ex in examples])
    h_len = torch.tensor([len(ex.hypothesis_ids) for ex in examples])
    p_width = pad_to or int(p_len.max())
    h_width = pad_to or int(h_len.max())
    premise = torch.zeros(len(examples), p_width, dtype=torch.long)
    hypothesis = torch.zeros(len(examples), h_width, dtype=torch.long)
    for i, ex in enumerate(examples):
        premise[i, : len(ex.premise_ids)] = torch.tensor(ex.premise_ids)
        hypothesis[i, : len(ex.hypothesis_ids)] = torch.tensor(ex.hypothesis_ids)
    labels = torch.tensor([ex.label for ex in examples])
    return Batch(premise, p_len, hypothesis, h_len, labels, list(examples))


def pair_length(ex: Example) -> tuple[int, int]:
    return (len(ex.premise_ids), len(ex.hypothesis_ids))


def hypothesis_length(ex: Example) -> int:
    return len(ex.hypothesis_ids)


def sort_length(model: str) -> Callable[[Example], tuple[int, int] | int]:
    """What bucketing sorts by: the hypothesis-only model never reads the premise."""
    return hypothesis_length if model == "hypothesis_only" else pair_length


def make_batches(
    examples: Iterable[Example],
    batch_size: int,
    rng: random.Random | None = None,
    bucket: bool = True,
    pad_to: int | None = None,
    pool_batches: int = 50,
    length: Callable[[Example], tuple[int, int] | int] = pair_length,
) -> list[Batch]:
    """Batches of similar length: shuffle, sort pools of `pool_batches` batches by `length`, cut
    (sorting only within pools keeps epochs random). Without `rng` the order is fixed (evaluation);
    `bucket=False` is the plain baseline."""
    examples = list(examples)
    if rng is not None:
        rng.shuffle(examples)
    if bucket:
        pool = batch_size * pool_batches
        ordered: list[Example] = []
        for start in range(0, len(examples), pool):
            chunk = examples[start : start + pool]
            chunk.sort(key=length)
            ordered.extend(chunk)
        examples = ordered
    batches = [examples[i : i + batch_size] for i in range(0, len(examples), batch_size)]
    if rng is not None and bucket:
        rng.shuffle(batches)
    return [collate(b, pad_to) for b in batches]


def epoch_train_set(
    primary: Sequence[Example], secondary: Sequence[Example], fraction: float, rng: random.Random
) -> list[Example]:
    """All of A plus a fresh random `fraction` of B (MultiNLI §3: all of MultiNLI + 15% of SNLI)."""
    if not secondary or not fraction:
        return list(primary)
    k = round(len(secondary) * fraction)
    return list(primary) + rng.sample(list(secondary), k)


def split_for_mixing(train: Sequence[Example], mix_dataset: str) -> tuple[list[Example], list[Example]]:
    """(A, B): B = train rows whose dataset (or, when the export has none, genre) is `mix_dataset`."""
    secondary = [ex for ex in train if (ex.source or ex.genre) == mix_dataset or ex.genre == mix_dataset]
    chosen = set(map(id, secondary))
    primary = [ex for ex in train if id(ex) not in chosen]
    return primary, secondary
