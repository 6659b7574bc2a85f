"""The training loop: seeds, mixing, single-genre runs, early stopping on dev matched, AMP on CUDA.

`train` is plain Python + torch (no Django), so the Celery task, the `train` command and bench/
call the same code. `on_progress(event)` receives a dict after every epoch and, during one, at
most every PROGRESS_SECONDS (the loss then is the mean since the last report).
"""

import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from modeling.nets import build_net

from .checkpoint import HYPER_KEYS, write_checkpoint
from .config import ConfigError
from .config import resolve_config as resolve_config  # the tests and benches read it from here
from .data import (
    LABELS,
    NO_LABEL,
    Batch,
    Example,
    SnapshotData,
    Vocab,
    encode_examples,
    epoch_train_set,
    make_batches,
    sort_length,
    split_for_mixing,
)
from .device_data import DeviceBatch, DeviceTrainSet
from .device_eval import DeviceEvalSet
from .embeddings import load_embeddings
from .evaluate import accuracy_report, majority_baseline, summarize
from .graphed import GraphedStep

# How often, at most, a step's progress (and so its loss, which waits for the device) is read.
PROGRESS_SECONDS = 0.25


def pick_device(name: str | None = "auto") -> torch.device:
    if name in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("config asks for device cuda but this node has no CUDA device")
    return device


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda:{device.index or 0} ({torch.cuda.get_device_name(device)})"
    return f"cpu ({torch.get_num_threads()} threads)"


_AMP_DTYPES: dict[str, torch.dtype] = {}


def amp_dtype(device: torch.device) -> torch.dtype:
    """bf16 where this GPU has it and its LSTMs (cuDNN's) run in it, else fp16; probed once per device
    inside fork_rng, so a run's random stream is the same whichever dtype it gets."""
    key = str(device)
    if key not in _AMP_DTYPES:
        dtype = torch.float16
        if torch.cuda.is_bf16_supported():
            try:
                with torch.random.fork_rng(devices=[device]):
                    lstm = nn.LSTM(4, 4, batch_first=True, bidirectional=True).to(device)
                    x = torch.randn(2, 3, 4, device=device)
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        packed = pack_padded_sequence(x, torch.tensor([3, 2]), batch_first=True, enforce_sorted=False)
                        out, _ = lstm(packed)
                        out.data.float().sum().backward()
                dtype = torch.bfloat16
            except RuntimeError:
                pass
        _AMP_DTYPES[key] = dtype
    return _AMP_DTYPES[key]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class Trainer:
    """One model on one device; predict() is shared by dev checks, final evaluation and tests."""

    def __init__(
        self,
        model: str,
        config: Mapping[str, Any],
        vocab: Vocab,
        embeddings: NDArray[np.float32] | None = None,
        device: torch.device | None = None,
        num_classes: int = 3,
    ) -> None:
        self.model_kind = model
        self.config = config
        self.vocab = vocab
        self.device = device or pick_device(config["device"])
        hyper = {k: config[k] for k in HYPER_KEYS}  # what a checkpoint keeps to rebuild the net
        self.num_classes = num_classes
        self.labels: tuple[str, ...] | None = None  # set by train() from the data's classes
        # A torch net, or MajorityClass (`trainable` False): duck-typed, so Any.
        self.net: Any = build_net(model, len(vocab), embeddings=embeddings, num_classes=num_classes, **hyper)
        self.trainable = getattr(self.net, "trainable", True)
        self.use_amp = bool(config["amp"]) and self.device.type == "cuda"
        # bf16 has fp32's range: no loss scaling, so no scaler checks (and their synchronisation) per
        # step. GPUs without it (before Ampere) get fp16 with a GradScaler, as before.
        self.amp_dtype = amp_dtype(self.device) if self.use_amp else None
        if self.trainable:
            self.net.to(self.device)
            # Fused Adam updates every parameter in one kernel on CUDA; on the CPU torch's plain
            # Adam (fused None, the default) is what the same-predictions test holds the CPU to.
            fused = True if self.device.type == "cuda" else None
            self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config["lr"], fused=fused)
            self.loss_fn = nn.CrossEntropyLoss()
            self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp_dtype == torch.float16)
        if self.device.type == "cuda":
            # Bucketed batches repeat a few shapes, so cuDNN's autotuning pays off.
            torch.backends.cudnn.benchmark = True

    def autocast(self) -> AbstractContextManager[object]:
        if self.use_amp:
            return torch.autocast("cuda", dtype=self.amp_dtype)
        return nullcontext()

    def train_step(self, batch: Batch | DeviceBatch) -> torch.Tensor:
        """One optimizer step; returns the batch's mean loss as a device tensor (reading it synchronises)."""
        self.net.train()
        batch = batch.to(self.device)
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast():
            logits = self.net(batch.premise, batch.premise_lengths, batch.hypothesis, batch.hypothesis_lengths)
            loss: torch.Tensor = self.loss_fn(logits.float(), batch.labels)
        self.backward_and_step(loss)
        return loss.detach()

    def backward_and_step(self, loss: torch.Tensor) -> None:
        """Backpropagate, clip to grad_clip and step (through the fp16 scaler when it is on); the graphed step's too."""
        clip = self.config["grad_clip"]
        # torch's Tensor.backward has no type hints.
        if self.scaler.is_enabled():
            self.scaler.scale(loss).backward()  # type: ignore[no-untyped-call]
            if clip:
                self.scaler.unscale_(self.optimizer)
                nn.utils.clip_grad_norm_(self.net.parameters(), clip)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()  # type: ignore[no-untyped-call]
            if clip:
                # foreach on CUDA: the norm and the clipping stay on the device, no synchronisation.
                nn.utils.clip_grad_norm_(self.net.parameters(), clip)
            self.optimizer.step()

    @torch.no_grad()
    def predict(self, examples: Sequence[Example], batch_size: int | None = None) -> list[int]:
        """Predicted label index per example, in the examples' order."""
        if not self.trainable:
            majority: list[int] = self.net.predict(len(examples)).tolist()
            return majority
        self.net.eval()
        batch_size = batch_size or max(64, self.config["batch_size"])
        length = sort_length(self.model_kind)
        order = sorted(range(len(examples)), key=lambda i: length(examples[i]))
        predicted = []
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            batch = make_batches([examples[i] for i in idx], len(idx), bucket=False)[0].to(self.device)
            with self.autocast():
                logits = self.net(batch.premise, batch.premise_lengths, batch.hypothesis, batch.hypothesis_lengths)
            predicted.append(logits.argmax(dim=-1))
        predictions = [0] * len(examples)
        if predicted:  # one device-to-host copy for the whole split, not one per batch
            for i, p in zip(order, torch.cat(predicted).tolist(), strict=True):
                predictions[i] = p
        return predictions

    def accuracy(self, examples: Sequence[Example]) -> float:
        accuracy: float = accuracy_report(examples, self.predict(examples))["accuracy"]
        return accuracy

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.net.state_dict()
        if self.trainable:
            state = {k: v.detach().to("cpu").clone() for k, v in state.items()}
        return state


def finite_loss(loss: float, epoch: int, config: Mapping[str, Any]) -> float:
    if not math.isfinite(loss):
        raise FloatingPointError(f"loss became {loss} at epoch {epoch}; lower lr (now {config['lr']})")
    return loss


def sort_by(model: str) -> str:
    """device_data's name for sort_length(model)."""
    return "hypothesis" if model == "hypothesis_only" else "pair"


def select_train(train: Iterable[Example], config: Mapping[str, Any]) -> tuple[list[Example], list[Example]]:
    """Gold-labelled train pairs after the single-genre filter, split into (A, B) for mixing."""
    rows = [ex for ex in train if ex.label != NO_LABEL]
    genre = config.get("train_genre")
    if genre:
        genres = sorted({ex.genre for ex in rows})
        rows = [ex for ex in rows if ex.genre == genre]
        if not rows:
            raise ValueError(f"no gold-labelled train pair of genre {genre!r}; the train genres are {genres}")
    if not rows:
        raise ValueError("the snapshot's train.jsonl has no gold-labelled pair")
    mix = config.get("mix_dataset")
    if mix:
        primary, secondary = split_for_mixing(rows, mix)
        if not secondary:
            raise ValueError(f"mix_dataset {mix!r} matches no train pair (by dataset or genre)")
        if not primary:
            raise ValueError(f"every train pair belongs to mix_dataset {mix!r}; nothing to mix it into")
        return primary, secondary
    return rows, []


def train(
    data: SnapshotData,
    model: str,
    config: Mapping[str, Any] | None,
    on_progress: Callable[[dict[str, Any]], object] | None = None,
    checkpoint_path: str | Path | None = None,
    data_path: str = "device",
) -> tuple[dict[str, Any], Trainer]:
    """Train `model` on a loaded snapshot; return (results, trainer). `config` is resolved here.
    `data_path`: "device" (device_data.py) or "host" (batches collated in Python each epoch, kept
    for comparison): both train on the same batches in the same order."""
    if data_path not in ("device", "host"):
        raise ValueError(f"data_path must be device or host, not {data_path!r}")
    config = resolve_config(model, config)
    if config["cpu_threads"]:
        # Several small LSTMs on a shared CPU spin far more than they compute with many threads.
        torch.set_num_threads(config["cpu_threads"])
    seed_everything(config["seed"])
    rng = random.Random(config["seed"])
    started = time.monotonic()

    primary, secondary = select_train(data.train, config)
    vocab = Vocab.build(primary + secondary)
    for examples in [primary, secondary, *data.evals.values()]:
        encode_examples(examples, vocab, config["max_len"])

    embeddings: NDArray[np.float32] | None = None
    covered = 0
    if model != "majority":
        embeddings, covered = load_embeddings(vocab, config["embedding_dim"], config["embeddings"], config["seed"])
    labels = tuple(getattr(data, "labels", None) or LABELS)
    trainer = Trainer(model, config, vocab, embeddings, num_classes=len(labels))
    trainer.labels = labels
    dev_split = data.dev_split
    dev = [ex for ex in data.evals.get(dev_split, []) if ex.label != NO_LABEL] if dev_split else []

    history: list[dict[str, object]] = []
    per_epoch = len(primary) + round(len(secondary) * config["mix_fraction"])
    steps_per_epoch = math.ceil(per_epoch / config["batch_size"]) if trainer.trainable else 0
    total_steps = steps_per_epoch * config["epochs"]
    progress: dict[str, Any] = {
        "epoch": 0,
        "total_epochs": config["epochs"] if trainer.trainable else 0,
        "step": 0,
        "total_steps": total_steps,
        "loss": None,
        "dev_accuracy": None,
        "history": history,
        "device": describe_device(trainer.device),
    }

    def report(kind: str) -> None:
        if on_progress:
            on_progress(dict(progress, kind=kind))

    report("start")
    best_state: dict[str, Any] | None
    best_state, best_dev, best_epoch, bad_epochs, stopped = None, -1.0, 0, 0, "epochs"
    if not trainer.trainable:
        trainer.net.fit([ex.label for ex in primary + secondary])
        best_state = trainer.state()
    train_set = None
    if trainer.trainable and data_path == "device":
        train_set = DeviceTrainSet(primary, secondary, trainer.device, sort_by=sort_by(model))
    graphed = None
    dev_eval: DeviceEvalSet | None = None
    if trainer.trainable and config["step"] == "graphed":
        if train_set is None:
            raise ConfigError("the graphed step trains from the device data path (data_path='device')")
        capture = trainer.device.type == "cuda" and trainer.amp_dtype != torch.float16
        graphed = GraphedStep(trainer, train_set, config["batch_size"], graphs=capture)
        if dev:
            # The dev pass after each epoch at fixed shapes too, or the GPU waits on its collation.
            dev_eval = DeviceEvalSet(trainer, dev, max(64, config["batch_size"]), graphs=capture)
    for epoch in range(1, config["epochs"] + 1 if trainer.trainable else 1):
        epoch_started = time.monotonic()
        batches: Iterable[Batch | DeviceBatch]
        if graphed is not None and train_set is not None:
            epoch_pairs = train_set.pairs_per_epoch(config["mix_fraction"])
            epoch_loss = graphed_epoch(graphed, rng, config, epoch, progress, report)
        elif train_set is not None:
            epoch_pairs = train_set.pairs_per_epoch(config["mix_fraction"])
            batches = train_set.epoch(config["batch_size"], rng, config["mix_fraction"], bucket=config["bucket"])
        else:  # the host path: every batch collated in Python and copied over (what ran before)
            epoch_rows = epoch_train_set(primary, secondary, config["mix_fraction"], rng)
            epoch_pairs = len(epoch_rows)
            batches = make_batches(
                epoch_rows, config["batch_size"], rng=rng, bucket=config["bucket"], length=sort_length(model)
            )
        if graphed is None:
            # Losses are summed on the device and read only when progress is reported (at most every
            # PROGRESS_SECONDS) and at the epoch's end: reading one forces the host to wait for the GPU.
            loss_sum = torch.zeros((), device=trainer.device)
            window_sum, window_pairs, last_report = torch.zeros((), device=trainer.device), 0, time.monotonic()
            for batch in batches:
                loss = trainer.train_step(batch) * len(batch)
                loss_sum += loss
                window_sum += loss
                window_pairs += len(batch)
                progress.update(epoch=epoch, step=progress["step"] + 1)
                now = time.monotonic()
                if now - last_report >= PROGRESS_SECONDS:
                    progress["loss"] = finite_loss(float(window_sum) / window_pairs, epoch, config)
                    window_sum.zero_()
                    window_pairs, last_report = 0, now
                    report("step")
            epoch_loss = finite_loss(float(loss_sum) / max(1, epoch_pairs), epoch, config)
        dev_accuracy = (dev_eval.accuracy(dev) if dev_eval is not None else trainer.accuracy(dev)) if dev else None
        history.append(
            {
                "epoch": epoch,
                "loss": round(epoch_loss, 6),
                "dev_accuracy": dev_accuracy,
                "train_pairs": epoch_pairs,
                "seconds": round(time.monotonic() - epoch_started, 3),
            }
        )
        progress.update(loss=epoch_loss, dev_accuracy=dev_accuracy)
        score = dev_accuracy if dev_accuracy is not None else -epoch_loss
        if best_state is None or score > best_dev:
            best_state, best_dev, best_epoch, bad_epochs = trainer.state(), score, epoch, 0
            if checkpoint_path:
                save_checkpoint(checkpoint_path, trainer, model, config, epoch)
        else:
            bad_epochs += 1
        report("epoch")
        if dev and bad_epochs >= config["patience"]:
            stopped = "early stopping"
            break
        if config["max_minutes"] and time.monotonic() - started > 60 * config["max_minutes"]:
            stopped = "max_minutes"
            break

    trainer.net.load_state_dict(best_state)
    if checkpoint_path and (not trainer.trainable or not Path(checkpoint_path).exists()):
        save_checkpoint(checkpoint_path, trainer, model, config, best_epoch)
    report("evaluate")
    predictions = {split: (examples, trainer.predict(examples)) for split, examples in data.evals.items()}
    results = summarize(predictions, labels)
    train_sample = (primary + secondary)[: config["train_eval_limit"]]
    results.update(
        {
            "train_accuracy": trainer.accuracy(train_sample),
            "train_pairs": len(primary) + len(secondary),
            "train_pairs_per_epoch": per_epoch,
            "vocab_size": len(vocab),
            "embeddings_covered": covered,
            "dev_split": dev_split,
            "best_epoch": best_epoch,
            "epochs_run": len(history),
            "stopped_by": stopped,
            "history": history,
            "device": describe_device(trainer.device),
            "amp": trainer.use_amp,
            "amp_dtype": str(trainer.amp_dtype).removeprefix("torch.") if trainer.use_amp else None,
            "seconds": round(time.monotonic() - started, 3),
            "config": config,
        }
    )
    if model == "hypothesis_only":  # Poliak et al.: beside the majority class on the same files
        results["majority_baseline"] = majority_baseline([ex.label for ex in primary + secondary], predictions, labels)
    if model == "majority":
        results["majority_label"] = labels[trainer.net.label]
    if labels != tuple(LABELS):
        results["labels"] = list(labels)  # two-way runs name their classes; three-way results read as before
    return results, trainer


def graphed_epoch(
    graphed: GraphedStep,
    rng: random.Random,
    config: Mapping[str, Any],
    epoch: int,
    progress: dict[str, Any],
    report: Callable[[str], None],
) -> float:
    """One epoch of the graphed step; the mean loss. The device is read only to report progress."""
    loss_total, pairs, window_pairs, last_report = 0.0, 0, 0, time.monotonic()
    for size in graphed.epoch(rng, config["mix_fraction"], bucket=config["bucket"]):
        pairs += size
        window_pairs += size
        progress.update(epoch=epoch, step=progress["step"] + 1)
        now = time.monotonic()
        if now - last_report >= PROGRESS_SECONDS:
            window_loss, _ = graphed.take_totals()
            loss_total += window_loss
            progress["loss"] = finite_loss(window_loss / window_pairs, epoch, config)
            window_pairs, last_report = 0, now
            report("step")
    rest, _ = graphed.take_totals()
    return finite_loss((loss_total + rest) / max(1, pairs), epoch, config)


def save_checkpoint(path: str | Path, trainer: Trainer, model: str, config: Mapping[str, Any], epoch: int) -> None:
    """The run's checkpoint: a safetensors file with the config, vocabulary and labels as JSON (checkpoint.py)."""
    write_checkpoint(
        path,
        model=model,
        config=config,
        epoch=epoch,
        vocab=trainer.vocab.itos,
        labels=list(getattr(trainer, "labels", None) or LABELS[: trainer.num_classes]),
        state_dict=trainer.state(),
    )
