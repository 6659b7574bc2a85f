"""Write, check and load a run's checkpoint, anywhere torch runs (no Django, no platform).

A checkpoint is one safetensors file (its header: docs/gpu-nodes.md, "Checkpoints"). The platform
never unpickles a checkpoint: a GPU node is untrusted, and a pickle is a program.

    from modeling.training.checkpoint import load_checkpoint
    model = load_checkpoint("run-12-cbow.safetensors")
    model.predict("A man plays a guitar on stage.", "A person makes music.")   # 'entailment'

Files written by torch.save (before this format) are refused with a message naming the command
that converts them once: `python manage.py convert_checkpoints` (`convert_old_checkpoint`).
"""

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import torch

from modeling.nets import NETS, MajorityClass, build_net

from .config import BOUNDS
from .data import (
    LABELS,
    NO_LABEL,
    Example,
    Vocab,
    encode_examples,
    example_from_row,
    label_index,
    make_batches,
)

FORMAT = "nli-checkpoint/1"
SUFFIX = ".safetensors"
# The safetensors library refuses headers above 100 MB; the vocabulary of a large corpus is a few MB.
HEADER_LIMIT = 100_000_000
CONVERT_COMMAND = "python manage.py convert_checkpoints"
OLD_FORMAT = (
    "this checkpoint was written by torch.save (a pickle, the format before safetensors); the platform "
    f"never unpickles checkpoints. A researcher converts stored ones once with `{CONVERT_COMMAND}` "
    f"(a file of your own: `{CONVERT_COMMAND} --file run-12.pt`)"
)
# torch dtypes a net's state holds, by their safetensors names.
DTYPE_NAMES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.float64: "F64",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
HYPER_KEYS = ("embedding_dim", "hidden_dim", "dropout", "mlp_layers")


class CheckpointInvalid(ValueError):
    """A file that is not a checkpoint this platform can load; the message says what is wrong."""


@dataclass
class CheckpointInfo:
    """A checkpoint's header: what it says it is, checked, before any weight is read."""

    kind: str
    config: dict[str, Any]
    vocab: list[str]
    labels: tuple[str, ...]
    epoch: int
    # tensor name -> (safetensors dtype, shape) as the header lists them
    tensors: dict[str, tuple[str, list[int]]] = field(default_factory=dict)

    def hyper(self) -> dict[str, Any]:
        return {key: self.config[key] for key in HYPER_KEYS if key in self.config}


@dataclass
class LoadedModel:
    kind: str
    config: dict[str, Any]
    vocab: Vocab
    net: torch.nn.Module | MajorityClass
    epoch: int
    labels: tuple[str, ...] = LABELS  # class index -> label (two-way checkpoints: entailed / not-entailed)

    @torch.no_grad()
    def predict_many(self, pairs: Iterable[tuple[str, str]]) -> list[str]:
        """Labels for [(premise, hypothesis), ...], in order."""
        examples = [example_from_row({"sentence1": p, "sentence2": h}) for p, h in pairs]
        if isinstance(self.net, MajorityClass):  # kind "majority"
            return [self.labels[int(i)] for i in self.net.predict(len(examples)).tolist()]
        encode_examples(examples, self.vocab, self.config.get("max_len"))
        self.net.eval()
        batch = make_batches(examples, len(examples), bucket=False)[0]
        logits = self.net(batch.premise, batch.premise_lengths, batch.hypothesis, batch.hypothesis_lengths)
        return [self.labels[i] for i in logits.argmax(dim=-1).tolist()]

    def predict(self, premise: str, hypothesis: str) -> str:
        return self.predict_many([(premise, hypothesis)])[0]

    @torch.no_grad()
    def predict_many_with_probability(self, pairs: Iterable[tuple[str, str]]) -> list[tuple[str, float]]:
        """(label, the softmax probability the model gives it) for [(premise, hypothesis), ...], in
        order; the majority baseline is sure of its one label (1.0)."""
        examples = [example_from_row({"sentence1": p, "sentence2": h}) for p, h in pairs]
        if isinstance(self.net, MajorityClass):
            return [(self.labels[int(i)], 1.0) for i in self.net.predict(len(examples)).tolist()]
        encode_examples(examples, self.vocab, self.config.get("max_len"))
        self.net.eval()
        batch = make_batches(examples, len(examples), bucket=False)[0]
        logits = self.net(batch.premise, batch.premise_lengths, batch.hypothesis, batch.hypothesis_lengths)
        probabilities, indexes = torch.softmax(logits.float(), dim=-1).max(dim=-1)
        return [(self.labels[i], float(p)) for i, p in zip(indexes.tolist(), probabilities.tolist(), strict=True)]


# --- writing -----------------------------------------------------------------------------------


def write_checkpoint(
    path: "str | os.PathLike[str]",
    *,
    model: str,
    config: Mapping[str, Any],
    epoch: int,
    vocab: Iterable[str],
    labels: Iterable[str],
    state_dict: Mapping[str, Any],
) -> Path:
    """Write a checkpoint file atomically (a reader never sees half of one); returns the path."""
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if model == "majority":
        tensors = {"label": torch.tensor(int(state_dict["label"]), dtype=torch.int64)}
    else:
        tensors = {name: value.detach().to("cpu").contiguous() for name, value in state_dict.items()}
    metadata = {
        "format": FORMAT,
        "model": model,
        "config": json.dumps(config),
        "epoch": str(int(epoch)),
        "vocab": json.dumps(list(vocab)),
        "labels": json.dumps(list(labels)),
    }
    tmp = path.with_name(path.name + ".tmp")
    save_file(tensors, str(tmp), metadata=metadata)
    tmp.replace(path)
    return path


# --- checking ----------------------------------------------------------------------------------


def _parse_header(read: Callable[[int], bytes], total: int) -> dict[str, Any]:
    """The safetensors header (a JSON object) of a file of `total` bytes, read by `read(n)`."""
    head = read(8)
    if len(head) < 8:
        raise CheckpointInvalid("the file is too short to be a checkpoint")
    length = int.from_bytes(head, "little")
    not_safetensors = OLD_FORMAT if _looks_pickled(head) else "the file is not a safetensors checkpoint"
    if length > HEADER_LIMIT or 8 + length > total:
        raise CheckpointInvalid(not_safetensors)
    try:
        header = json.loads(read(length))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CheckpointInvalid(not_safetensors) from None
    if not isinstance(header, dict):
        raise CheckpointInvalid("the file is not a safetensors checkpoint (its header is not a JSON object)")
    return header


def _looks_pickled(head: bytes) -> bool:
    # torch.save writes a zip archive (PK\x03\x04); older torch and pickle.dump start with PROTO (0x80).
    return head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"


def _json_field(metadata: Mapping[str, Any], key: str, kind: type, what: str) -> Any:
    try:
        value = json.loads(metadata[key])
    except KeyError:
        raise CheckpointInvalid(f"the checkpoint's metadata has no {key!r}") from None
    except (TypeError, json.JSONDecodeError):
        raise CheckpointInvalid(f"the checkpoint's {key!r} is not JSON") from None
    if not isinstance(value, kind):
        raise CheckpointInvalid(f"the checkpoint's {key!r} must be {what}")
    return value


def _info(header: Mapping[str, Any]) -> CheckpointInfo:
    """CheckpointInfo from a parsed header; CheckpointInvalid for anything this platform did not write."""
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise CheckpointInvalid(f"the file is a safetensors file but not a checkpoint of this platform ({FORMAT})")
    kind = metadata.get("model")
    if not isinstance(kind, str) or kind not in NETS:
        raise CheckpointInvalid(f"unknown model {kind!r} in the checkpoint; known: {', '.join(NETS)}")
    config = _json_field(metadata, "config", dict, "a JSON object")
    vocab = _json_field(metadata, "vocab", list, "a list of words")
    labels = _json_field(metadata, "labels", list, "a list of labels")
    if not all(isinstance(word, str) for word in vocab):
        raise CheckpointInvalid("the checkpoint's vocabulary must hold words (strings) only")
    if not 2 <= len(labels) <= 3 or len(set(labels)) != len(labels) or not all(isinstance(x, str) for x in labels):
        raise CheckpointInvalid("the checkpoint's labels must be 2 or 3 different strings")
    epoch = metadata.get("epoch", "0")
    if not isinstance(epoch, str) or not epoch.isdigit():
        raise CheckpointInvalid("the checkpoint's epoch must be a whole number")
    for key in ("embedding_dim", "hidden_dim", "mlp_layers"):
        if key in config:
            low, high = BOUNDS[key]
            value = config[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise CheckpointInvalid(f"the checkpoint's config {key} must be a whole number from {low} to {high}")
    dropout = config.get("dropout", 0.0)
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
        raise CheckpointInvalid("the checkpoint's config dropout must be in [0, 1)")
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in shape):
            raise CheckpointInvalid(f"the checkpoint's tensor {name!r} is described wrongly")
        tensors[name] = (entry.get("dtype"), shape)
    return CheckpointInfo(
        kind=kind, config=config, vocab=vocab, labels=tuple(labels), epoch=int(epoch), tensors=tensors
    )


def expected_tensors(info: CheckpointInfo) -> dict[str, tuple[str, list[int]]]:
    """{name: (safetensors dtype, shape)} of the named net with the checkpoint's dimensions, built on
    the meta device: checking an upload of hundreds of megabytes allocates nothing of that size."""
    if info.kind == "majority":
        return {"label": ("I64", [])}
    try:
        with torch.device("meta"):
            net = build_net(info.kind, len(info.vocab), num_classes=len(info.labels), **info.hyper())
    except (TypeError, ValueError, RuntimeError) as error:
        raise CheckpointInvalid(f"the checkpoint's config does not build a {info.kind} net: {error}") from None
    assert isinstance(net, torch.nn.Module)  # a torch net: "majority" answered above
    return {
        name: (DTYPE_NAMES.get(value.dtype, str(value.dtype)), list(value.shape))
        for name, value in net.state_dict().items()
    }


def _compare(info: CheckpointInfo) -> None:
    expected = expected_tensors(info)
    missing = sorted(set(expected) - set(info.tensors))
    extra = sorted(set(info.tensors) - set(expected))
    if missing or extra:
        problems = [f"missing {', '.join(missing[:5])}"] if missing else []
        problems += [f"unexpected {', '.join(extra[:5])}"] if extra else []
        raise CheckpointInvalid(f"the tensors do not match a {info.kind} net: " + "; ".join(problems))
    for name, want in expected.items():
        if info.tensors[name] != want:
            dtype, shape = info.tensors[name]
            raise CheckpointInvalid(
                f"tensor {name!r} is {dtype} {shape}, a {info.kind} net with this vocabulary and config needs "
                f"{want[0]} {want[1]}"
            )


# --- belonging to a run --------------------------------------------------------------------------


def run_vocabulary(train_lines: Iterable[bytes | str], labels: Sequence[str], config: Mapping[str, Any]) -> list[str]:
    """The vocabulary (index -> word) loop.train builds for a run from its snapshot's train.jsonl
    (the gold-labelled pairs select_train keeps), read a line at a time so the platform checks a
    node's checkpoint without holding the pairs in memory. `labels`: the snapshot's label scheme."""
    index = label_index(labels)
    genre = config.get("train_genre")

    def kept() -> Iterator[Example]:
        for line in train_lines:
            if not line.strip():
                continue
            example = example_from_row(json.loads(line), "train", index)
            if example.label != NO_LABEL and (not genre or example.genre == genre):
                yield example

    return Vocab.build(kept()).itos


def vocabulary_digest(words: Iterable[str]) -> str:
    """SHA-256 of a vocabulary in index order: two vocabularies are equal exactly when these are."""
    return hashlib.sha256(json.dumps(list(words), ensure_ascii=False).encode("utf-8")).hexdigest()


def mismatch_with_run(info: CheckpointInfo, labels: Sequence[str], vocabulary_sha256: str) -> str | None:
    """Why a checkpoint does not belong to a run with these labels and vocabulary, or None when it does.
    Other classes or other embedding rows would answer well-formed nonsense, so both must be the run's."""
    if tuple(info.labels) != tuple(labels):
        return (
            f"the checkpoint's labels are {', '.join(info.labels)}; the run's snapshot labels its pairs "
            f"{', '.join(labels)} (in this class order)"
        )
    if vocabulary_digest(info.vocab) != vocabulary_sha256:
        return (
            f"the checkpoint's vocabulary ({len(info.vocab)} words) is not the one the run's training pairs give "
            "(the trainer builds it from the snapshot's train.jsonl)"
        )
    return None


def check_checkpoint(path: "str | os.PathLike[str]") -> CheckpointInfo:
    """CheckpointInfo of a checkpoint file that would load; CheckpointInvalid (why not) otherwise.
    Checked without running anything or reading the weights into memory (docs/gpu-nodes.md)."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    total = path.stat().st_size
    with open(path, "rb") as handle:
        info = _info(_parse_header(handle.read, total))
    _compare(info)
    try:
        with safe_open(str(path), framework="pt") as opened:
            if info.kind == "majority":
                _majority_label(opened.get_tensor("label"), info)
    except SafetensorError as error:
        raise CheckpointInvalid(f"the safetensors file is damaged: {error}") from None
    return info


def _majority_label(tensor: torch.Tensor, info: CheckpointInfo) -> int:
    label = int(tensor.item())
    if not 0 <= label < len(info.labels):
        raise CheckpointInvalid(f"the majority label {label} is not one of the {len(info.labels)} classes")
    return label


# --- loading -----------------------------------------------------------------------------------


# What a checkpoint is read from: its bytes, a path, or a binary file object.
CheckpointSource = bytes | bytearray | memoryview | str | os.PathLike[str] | IO[bytes]


def _read_all(source: CheckpointSource) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        return Path(source).read_bytes()
    return source.read()  # a binary file object


def load_checkpoint(source: CheckpointSource, map_location: str | torch.device = "cpu") -> LoadedModel:
    """The LoadedModel of a checkpoint: a path, the file's bytes, or a binary file object.
    CheckpointInvalid (what is wrong) for anything else, old torch.save files included."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    data = _read_all(source)
    offset = 0

    def read(n: int) -> bytes:
        nonlocal offset
        chunk = data[offset : offset + n]
        offset += n
        return chunk

    info = _info(_parse_header(read, len(data)))
    _compare(info)
    try:
        tensors = load(data)
    except SafetensorError as error:
        raise CheckpointInvalid(f"the safetensors file is damaged: {error}") from None
    vocab = Vocab([])
    vocab.itos = list(info.vocab)
    vocab.stoi = {word: i for i, word in enumerate(vocab.itos)}
    net = build_net(info.kind, len(vocab), num_classes=len(info.labels), **info.hyper())
    if isinstance(net, MajorityClass):
        net.load_state_dict({"label": _majority_label(tensors["label"], info)})
    else:
        net.load_state_dict(tensors, strict=True)
        net.to(map_location)
    return LoadedModel(kind=info.kind, config=info.config, vocab=vocab, net=net, epoch=info.epoch, labels=info.labels)


# --- the old format ----------------------------------------------------------------------------


def convert_old_checkpoint(source: "str | os.PathLike[str]", destination: "str | os.PathLike[str]") -> CheckpointInfo:
    """Rewrite a torch.save checkpoint (the old format) as a safetensors checkpoint; its CheckpointInfo.

    Read with torch.load(weights_only=True) only, so a planted pickle raises instead of running.
    CheckpointInvalid when the file holds more than tensors and plain containers, or does not load
    into the net it names.
    """
    import pickle

    try:
        saved = torch.load(source, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, AttributeError) as error:
        raise CheckpointInvalid(
            f"not converted: torch.load(weights_only=True) refused it: {_why_refused(error)}; the file holds more "
            "than tensors and plain containers (it may be a planted program): never load it with weights_only=False"
        ) from None
    if not isinstance(saved, dict) or not isinstance(saved.get("state_dict"), dict):
        raise CheckpointInvalid("not converted: the file is not a checkpoint of this platform (no state_dict)")
    try:
        write_checkpoint(
            destination,
            model=saved["model"],
            config=saved["config"],
            epoch=saved.get("epoch", 0),
            vocab=saved["vocab"],
            labels=saved.get("labels") or LABELS,
            state_dict=saved["state_dict"],
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        Path(destination).unlink(missing_ok=True)
        raise CheckpointInvalid(f"not converted: the old checkpoint lacks or garbles {error}") from None
    try:
        return check_checkpoint(destination)
    except CheckpointInvalid:
        Path(destination).unlink(missing_ok=True)
        raise


def _why_refused(error: BaseException) -> str:
    """The line of torch's refusal that names the object (not its advice to load the file unsafely)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    named = [line for line in lines if "WeightsUnpickler error" in line]
    reason = (named or lines or [type(error).__name__])[0]
    return reason.split(" Please use ")[0][:300]
