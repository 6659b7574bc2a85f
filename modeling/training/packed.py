"""Several runs of one model trained at once on one device: their weights stacked, one step for all.

Alone, each run of the genre matrix leaves most of a GPU idle; here they share every kernel launch
(docs/gpu-nodes.md, "The graphed step and packed runs"). Each run is prepared as loop.train
prepares it; embedding tables are padded to the largest vocabulary (rows a run never indexes get
no gradient, so Adam never moves them), and one Adam over the stacked tensors is each run's own
(Adam is elementwise; clipping takes each run's own norm).
"""

import copy
import dataclasses
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.func import functional_call, stack_module_state, vmap
from torch.nn import functional as F

from modeling.nets.layers import set_lstm_path

from .checkpoint import HYPER_KEYS
from .data import LABELS, NO_LABEL, Example, SnapshotData, Vocab, encode_examples
from .device_data import DeviceTrainSet
from .device_eval import DeviceEvalSet
from .embeddings import load_embeddings
from .evaluate import summarize
from .graphed import EpochPlan, epoch_plan
from .loop import (
    PROGRESS_SECONDS,
    Trainer,
    describe_device,
    finite_loss,
    resolve_config,
    save_checkpoint,
    seed_everything,
    select_train,
    sort_by,
)

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8  # torch.optim.Adam's defaults, which a lone run uses


@dataclasses.dataclass
class PackedRun:
    """One run of the pack: what loop.train would hold for it."""

    config: dict[str, Any]
    data: SnapshotData
    trainer: Trainer
    train_set: DeviceTrainSet
    rng: random.Random
    dev: list[Example]
    train_rows: list[Example]
    model: str = ""
    covered: int = 0
    dev_eval: DeviceEvalSet | None = None
    on_progress: Callable[[dict[str, Any]], object] | None = None
    checkpoint_path: str | Path | None = None
    progress: dict[str, Any] = dataclasses.field(default_factory=dict)
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    best_state: dict[str, Any] | None = None
    best_score: float = -math.inf
    best_epoch: int = 0
    bad_epochs: int = 0
    stopped_by: str = "epochs"
    active: bool = True


def prepare(data: SnapshotData, model: str, config: Mapping[str, Any] | None) -> PackedRun:
    """A run set up as loop.train sets it up; its evaluation examples are its own copies (ids differ per vocabulary)."""
    resolved = resolve_config(model, config)
    seed_everything(resolved["seed"])
    rng = random.Random(resolved["seed"])
    own = SnapshotData(
        train=[copy.copy(ex) for ex in data.train],
        evals={split: [copy.copy(ex) for ex in rows] for split, rows in data.evals.items()},
        manifest=data.manifest,
        labels=data.labels,
    )
    primary, secondary = select_train(own.train, resolved)
    vocab = Vocab.build(primary + secondary)
    for examples in [primary, secondary, *own.evals.values()]:
        encode_examples(examples, vocab, resolved["max_len"])
    embeddings, covered = load_embeddings(vocab, resolved["embedding_dim"], resolved["embeddings"], resolved["seed"])
    labels = tuple(own.labels or LABELS)
    trainer = Trainer(model, resolved, vocab, embeddings, num_classes=len(labels))
    trainer.labels = labels
    dev_split = own.dev_split
    dev = [ex for ex in own.evals.get(dev_split, []) if ex.label != NO_LABEL] if dev_split else []
    train_set = DeviceTrainSet(primary, secondary, trainer.device, sort_by=sort_by(model))
    run = PackedRun(resolved, own, trainer, train_set, rng, dev, primary + secondary, model=model, covered=covered)
    # Evaluated at fixed shapes after each epoch, as the graphed step's lone run is.
    run.dev_eval = DeviceEvalSet(trainer, dev, max(64, resolved["batch_size"])) if dev else None
    steps_per_epoch = math.ceil(train_set.pairs_per_epoch(resolved["mix_fraction"]) / resolved["batch_size"])
    run.progress = {
        "epoch": 0,
        "total_epochs": resolved["epochs"],
        "step": 0,
        "total_steps": steps_per_epoch * resolved["epochs"],
        "loss": None,
        "dev_accuracy": None,
        "history": run.history,
        "device": describe_device(trainer.device),
    }
    return run


def _report(run: PackedRun, kind: str) -> None:
    """loop.train's progress event for one run of the pack (its heartbeat and its bar)."""
    if run.on_progress is not None:
        run.on_progress(dict(run.progress, kind=kind))


def train_packed(
    datasets: Sequence[SnapshotData],
    model: str,
    configs: Sequence[Mapping[str, Any] | None],
    on_progress: Sequence[Callable[[dict[str, Any]], object] | None] | None = None,
    checkpoint_paths: Sequence[str | Path | None] | None = None,
) -> list[dict[str, Any]]:
    """Train one run per (data, config) at once; each run's results as loop.train reports them.
    `on_progress[i]` and `checkpoint_paths[i]` are run i's, as loop.train takes them."""
    if model == "majority":
        raise ValueError("the majority baseline has nothing to train; run it alone")
    started = time.monotonic()
    runs = [prepare(data, model, config) for data, config in zip(datasets, configs, strict=True)]
    for index, run in enumerate(runs):
        run.on_progress = on_progress[index] if on_progress else None
        run.checkpoint_path = checkpoint_paths[index] if checkpoint_paths else None
        _report(run, "start")
    shared = {key: runs[0].config[key] for key in (*HYPER_KEYS, "batch_size", "epochs", "lr", "grad_clip", "device")}
    for run in runs[1:]:
        differing = sorted(key for key, value in shared.items() if run.config[key] != value)
        if differing:
            raise ValueError(f"packed runs must share {', '.join(differing)}; train those runs apart")
    device = runs[0].trainer.device
    nets: list[Any] = [set_lstm_path(run.trainer.net, "unrolled") for run in runs]
    rows_needed = max(net.embedding.weight.size(0) for net in nets)
    params, buffers = stack_module_state([_padded(net, rows_needed) for net in nets])
    params = {name: value.detach().requires_grad_(True) for name, value in params.items()}
    template = copy.deepcopy(_padded(nets[0], rows_needed)).to("meta")
    adam = MaskedAdam(params, shared["lr"], len(runs), device)

    def forward(
        weights: dict[str, torch.Tensor],
        own_buffers: dict[str, torch.Tensor],
        premise: torch.Tensor,
        hypothesis: torch.Tensor,
    ) -> torch.Tensor:
        logits: torch.Tensor = functional_call(template, (weights, own_buffers), (premise, None, hypothesis, None))
        return logits

    batched_forward = vmap(forward, randomness="different")
    for epoch in range(1, shared["epochs"] + 1):
        if not any(run.active for run in runs):
            break
        epoch_started = time.monotonic()
        plans = [
            epoch_plan(run.train_set, shared["batch_size"], run.rng, run.config["mix_fraction"], run.config["bucket"])
            if run.active
            else None
            for run in runs
        ]
        loss_totals = torch.zeros(len(runs), device=device)
        template.train()
        last_report = time.monotonic()
        for step in range(max(len(plan) for plan in plans if plan is not None)):
            live = [plan is not None and step < len(plan) for plan in plans]
            for index, run in enumerate(runs):
                if live[index]:
                    run.progress.update(epoch=epoch, step=run.progress["step"] + 1)
            if time.monotonic() - last_report >= PROGRESS_SECONDS:
                # Steps only: a loss read here would make the host wait for the device.
                last_report = time.monotonic()
                for index, run in enumerate(runs):
                    if live[index]:
                        _report(run, "step")
            premise, hypothesis, labels, weights = _stacked_batch(runs, plans, live, step, shared["batch_size"], device)
            logits = batched_forward(params, buffers, premise, hypothesis)
            losses = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="none").view_as(weights)
            losses = losses * weights
            per_run = losses.sum(dim=1) / weights.sum(dim=1).clamp(min=1)
            adam.zero_grad()
            per_run.sum().backward()  # type: ignore[no-untyped-call]
            if shared["grad_clip"]:
                adam.clip_per_run(shared["grad_clip"])
            adam.step(torch.tensor(live, device=device))
            loss_totals += losses.detach().sum(dim=1)
        epoch_losses = loss_totals.tolist()  # the one read of the device in an epoch
        for index, run in enumerate(runs):
            plan = plans[index]
            if plan is None:
                continue
            pairs = sum(plan.sizes)
            _load_run(run, params, index)
            _record_epoch(
                run, epoch, finite_loss(epoch_losses[index] / max(1, pairs), epoch, run.config), pairs, epoch_started
            )
    return [_results(run, started) for run in runs]


class MaskedAdam:
    """torch.optim.Adam's update on stacked parameters, one step count per run; masked runs stay as they are."""

    def __init__(self, params: dict[str, torch.Tensor], lr: float, runs: int, device: torch.device) -> None:
        self.params = params
        self.lr = lr
        self.steps = torch.zeros(runs, device=device)
        self.first = {name: torch.zeros_like(value) for name, value in params.items()}
        self.second = {name: torch.zeros_like(value) for name, value in params.items()}

    def zero_grad(self) -> None:
        for value in self.params.values():
            value.grad = None

    @torch.no_grad()
    def clip_per_run(self, max_norm: float) -> None:
        """clip_grad_norm_ of each run over its own gradients (its slice of every stacked tensor)."""
        grads = [value.grad for value in self.params.values() if value.grad is not None]
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads]).norm(dim=0)
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.view(-1, *[1] * (g.dim() - 1)))

    @torch.no_grad()
    def step(self, live: torch.Tensor) -> None:
        beta1, beta2 = ADAM_BETAS
        self.steps += live.to(self.steps.dtype)
        steps = self.steps.clamp(min=1)
        correction1 = 1 - beta1**steps
        correction2 = 1 - beta2**steps
        for name, param in self.params.items():
            grad = param.grad
            if grad is None:
                continue
            shape = (-1, *[1] * (param.dim() - 1))
            mask = live.view(shape)
            first, second = self.first[name], self.second[name]
            first.copy_(torch.where(mask, first * beta1 + grad * (1 - beta1), first))
            second.copy_(torch.where(mask, second * beta2 + grad * grad * (1 - beta2), second))
            denom = second.sqrt() / correction2.sqrt().view(shape) + ADAM_EPS
            update = first / denom * (self.lr / correction1).view(shape)
            param.copy_(torch.where(mask, param - update, param))


def _padded(net: torch.nn.Module, rows: int) -> torch.nn.Module:
    """`net` with its embedding table grown to `rows` (zero rows at the end); the original is untouched."""
    embedding: Any = net.embedding
    if embedding.weight.size(0) == rows:
        return net
    grown: Any = copy.deepcopy(net)
    weight = embedding.weight.detach()
    extra = weight.new_zeros(rows - weight.size(0), weight.size(1))
    grown.embedding.weight = torch.nn.Parameter(torch.cat([weight, extra]))
    grown.embedding.num_embeddings = rows
    result: torch.nn.Module = grown
    return result


def _stacked_batch(
    runs: Sequence[PackedRun],
    plans: Sequence[EpochPlan | None],
    live: Sequence[bool],
    step: int,
    batch_size: int,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each run's batch of this step, padded to the widest; a run with no step here gets a weight-0 batch."""
    shapes = [plan.shapes[step] for plan, on in zip(plans, live, strict=True) if plan is not None and on]
    premise_width = max(width for width, _ in shapes)
    hypothesis_width = max(width for _, width in shapes)
    premises, hypotheses, labels, weights = [], [], [], []
    for run, plan, on in zip(runs, plans, live, strict=True):
        if plan is None or not on:
            premises.append(torch.ones(batch_size, premise_width, dtype=torch.long, device=device))
            hypotheses.append(torch.ones(batch_size, hypothesis_width, dtype=torch.long, device=device))
            labels.append(torch.zeros(batch_size, dtype=torch.long, device=device))
            weights.append(torch.zeros(batch_size, device=device))
            continue
        rows = plan.rows[step]
        premise = run.train_set.premise[rows, :premise_width].long()
        hypothesis = run.train_set.hypothesis[rows, :hypothesis_width].long()
        premises.append(F.pad(premise, (0, premise_width - premise.size(1))))
        hypotheses.append(F.pad(hypothesis, (0, hypothesis_width - hypothesis.size(1))))
        labels.append(run.train_set.labels[rows])
        weights.append(plan.weights[step])
    return torch.stack(premises), torch.stack(hypotheses), torch.stack(labels), torch.stack(weights)


@torch.no_grad()
def _load_run(run: PackedRun, params: dict[str, torch.Tensor], index: int) -> None:
    """Copy run `index`'s slice of the stacked weights into its own net (its own vocabulary's rows)."""
    own = dict(run.trainer.net.named_parameters())
    for name, value in params.items():
        target = own[name]
        target.copy_(value[index][: target.size(0)] if value.dim() > 1 else value[index])


def _record_epoch(run: PackedRun, epoch: int, loss: float, pairs: int, epoch_started: float) -> None:
    """loop.train's end of an epoch for one run: dev accuracy, best state, early stopping."""
    set_lstm_path(run.trainer.net, "static")  # evaluation needs no vmap: the fused LSTM, same sums
    dev_accuracy = run.dev_eval.accuracy(run.dev) if run.dev_eval is not None else None
    set_lstm_path(run.trainer.net, "unrolled")
    run.history.append(
        {
            "epoch": epoch,
            "loss": round(loss, 6),
            "dev_accuracy": dev_accuracy,
            "train_pairs": pairs,
            "seconds": round(time.monotonic() - epoch_started, 3),
        }
    )
    score = dev_accuracy if dev_accuracy is not None else -loss
    if run.best_state is None or score > run.best_score:
        run.best_state, run.best_score, run.best_epoch, run.bad_epochs = run.trainer.state(), score, epoch, 0
        if run.checkpoint_path:
            save_checkpoint(run.checkpoint_path, run.trainer, run.model, run.config, epoch)
    else:
        run.bad_epochs += 1
    run.progress.update(loss=loss, dev_accuracy=dev_accuracy)
    _report(run, "epoch")
    if run.dev and run.bad_epochs >= run.config["patience"]:
        run.active, run.stopped_by = False, "early stopping"


def _results(run: PackedRun, started: float) -> dict[str, Any]:
    trainer = run.trainer
    if run.best_state is not None:
        trainer.net.load_state_dict(run.best_state)
    set_lstm_path(trainer.net, "static")
    _report(run, "evaluate")
    predictions = {split: (examples, trainer.predict(examples)) for split, examples in run.data.evals.items()}
    labels = trainer.labels or LABELS
    results = summarize(predictions, labels)
    results.update(
        {
            "train_accuracy": trainer.accuracy(run.train_rows[: run.config["train_eval_limit"]]),
            "train_pairs": len(run.train_rows),
            "train_pairs_per_epoch": run.train_set.pairs_per_epoch(run.config["mix_fraction"]),
            "vocab_size": len(trainer.vocab),
            "embeddings_covered": run.covered,
            "dev_split": run.data.dev_split,
            "best_epoch": run.best_epoch,
            "epochs_run": len(run.history),
            "stopped_by": run.stopped_by,
            "history": run.history,
            "device": describe_device(trainer.device),
            "amp": trainer.use_amp,
            "amp_dtype": str(trainer.amp_dtype).removeprefix("torch.") if trainer.use_amp else None,
            "seconds": round(time.monotonic() - started, 3),
            "config": run.config,
        }
    )
    if tuple(labels) != tuple(LABELS):
        results["labels"] = list(labels)
    return results
