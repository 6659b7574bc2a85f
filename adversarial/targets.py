"""The target model a round's writers attack: a finished training run's checkpoint, or an external
endpoint; both answer {label: probability} over the three labels.

Checkpoints are loaded once per web process after their SHA-256 is checked against the run's
record (a swapped or truncated file is never served), and run on the CPU with
ADVERSARIAL_TORCH_THREADS threads (default 1: a web worker serves many requests at once;
bench/adversarial_endpoint.py). External endpoints speak a small JSON contract (docs/adversarial.md):
    POST <url>  {"premise": "...", "hypothesis": "..."}
    200         {"probabilities": {"entailment": 0.1, "neutral": 0.2, "contradiction": 0.7}}
When a target stays down the worker is told so (TargetUnavailable) and the try is not counted.
"""

import hashlib
import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

from base import outbound
from corpus.labels import LABELS

if TYPE_CHECKING:
    from .models import Round

logger = logging.getLogger(__name__)

ENDPOINT_TIMEOUT_SECONDS = 3.0
ENDPOINT_RETRIES = 2
# An answer is three probabilities: anything longer is not the contract's.
ENDPOINT_MAX_ANSWER_BYTES = 64 * 1024


class TargetUnavailable(Exception):
    """The target cannot answer now; the message is fit to show the worker."""


DOWN_MESSAGE = (
    "The model is not answering right now, so this try was not counted. Your sentence is still in the box: "
    "please wait a moment and send it again."
)


def _setting(name, default):
    return getattr(settings, name, default)


# --- checkpoints -------------------------------------------------------------------------------

_loaded: dict[tuple[int, str], object] = {}  # (run id, sha256) -> LoadedModel, per process
_lock = threading.Lock()


def _checkpoint_bytes(run):
    """The checkpoint's bytes (`modeling.training.storage.read_checkpoint`); a run with neither a
    local file nor a stored name is down."""
    from modeling.training.storage import read_checkpoint

    if not run.checkpoint_name and not (run.checkpoint_path and Path(run.checkpoint_path).is_file()):
        raise TargetUnavailable(DOWN_MESSAGE)
    return read_checkpoint(run)


def load_run_model(run):
    """The run's LoadedModel from this process's memory, loading (and verifying) it the first time."""
    key = (run.pk, run.checkpoint_sha256)
    model = _loaded.get(key)
    if model is not None:
        return model
    with _lock:
        model = _loaded.get(key)
        if model is not None:
            return model
        from modeling.training.checkpoint import CheckpointInvalid, load_checkpoint

        data = _checkpoint_bytes(run)
        actual = hashlib.sha256(data).hexdigest()
        if not run.checkpoint_sha256 or actual != run.checkpoint_sha256:
            logger.error("checkpoint of run %s: SHA-256 %s, recorded %s", run.pk, actual, run.checkpoint_sha256)
            raise CheckpointMismatch(run.pk, actual, run.checkpoint_sha256)
        try:
            # A safetensors file, read as data (never unpickled): the node that wrote it is untrusted.
            model = load_checkpoint(data)
        except CheckpointInvalid as invalid:
            logger.error("checkpoint of run %s refused: %s", run.pk, invalid)
            raise CheckpointRefused(run.pk, invalid) from None
        import torch

        if isinstance(model.net, torch.nn.Module):  # a majority-class target has no layers to switch
            model.net.eval()
        threads = _setting("ADVERSARIAL_TORCH_THREADS", 1)
        if threads:
            torch.set_num_threads(threads)
        _loaded[key] = model
    return model


class CheckpointMismatch(TargetUnavailable):
    def __init__(self, run_id, actual, recorded):
        super().__init__(DOWN_MESSAGE)
        self.detail = f"checkpoint of run {run_id}: SHA-256 {actual}, recorded {recorded or 'none'}"


class CheckpointRefused(TargetUnavailable):
    """The run's checkpoint is not one the platform loads (an old torch.save pickle, a damaged file)."""

    def __init__(self, run_id, invalid):
        super().__init__(DOWN_MESSAGE)
        self.detail = f"checkpoint of run {run_id} refused: {invalid}"


def forget_loaded_models():
    """Drop this process's checkpoints (tests: a rolled-back database reuses run ids)."""
    with _lock:
        _loaded.clear()


def model_probabilities(model, pairs):
    """[{label: probability}] for [(premise, hypothesis)] with a LoadedModel (modeling.training.checkpoint)."""
    import torch

    from modeling.training.data import encode_examples, example_from_row, make_batches

    labels = model.labels
    if model.kind == "majority":
        indexes = model.net.predict(len(pairs)).tolist()
        return [{label: float(i == index) for i, label in enumerate(labels)} for index in indexes]
    examples = [example_from_row({"sentence1": p, "sentence2": h}) for p, h in pairs]
    encode_examples(examples, model.vocab, model.config.get("max_len"))
    batch = make_batches(examples, len(examples), bucket=False)[0]
    with torch.no_grad():
        logits = model.net(batch.premise, batch.premise_lengths, batch.hypothesis, batch.hypothesis_lengths)
        rows = torch.softmax(logits, dim=-1).tolist()
    return [{label: round(p, 6) for label, p in zip(labels, row, strict=True)} for row in rows]


# --- external endpoints ------------------------------------------------------------------------


def endpoint_probabilities(url, premise, hypothesis, timeout=None, retries=None):
    """POST the pair to an external model; {label: probability}, or TargetUnavailable after the retries.

    The URL is a researcher's: it goes out through base.outbound (no inward address, no redirect,
    one deadline, a byte cap). A refused address, a redirect or an oversized answer is not retried."""
    timeout = timeout if timeout is not None else _setting("ADVERSARIAL_ENDPOINT_TIMEOUT", ENDPOINT_TIMEOUT_SECONDS)
    retries = retries if retries is not None else _setting("ADVERSARIAL_ENDPOINT_RETRIES", ENDPOINT_RETRIES)
    problem: Exception | None = None
    for attempt in range(retries + 1):
        try:
            answer = outbound.post_json(
                url,
                {"premise": premise, "hypothesis": hypothesis},
                deadline_seconds=timeout,
                max_bytes=ENDPOINT_MAX_ANSWER_BYTES,
            )
            if answer.status != 200:
                raise ValueError(f"HTTP {answer.status}")
            return parse_endpoint_answer(json.loads(answer.body.decode()))
        except (outbound.RefusedDestination, outbound.RedirectRefused, outbound.AnswerTooLarge) as error:
            problem = error
            break
        except (outbound.OutboundError, ValueError) as error:
            problem = error
            if attempt < retries:
                time.sleep(0.2 * (attempt + 1))
    logger.warning("adversarial endpoint %s is down: %s", url, problem)
    raise TargetUnavailable(DOWN_MESSAGE)


def parse_endpoint_answer(answer):
    """The contract's answer as {label: probability}; ValueError for anything else."""
    probabilities = answer.get("probabilities") if isinstance(answer, dict) else None
    if not isinstance(probabilities, dict) or set(probabilities) != set(LABELS):
        raise ValueError(f"the answer must hold probabilities for {', '.join(LABELS)}")
    values = {label: float(probabilities[label]) for label in LABELS}
    if any(v < 0 or v > 1 for v in values.values()) or abs(sum(values.values()) - 1) > 0.01:
        raise ValueError("probabilities must lie in 0..1 and sum to 1")
    return values


# --- one entry point -----------------------------------------------------------------------------


def target_probabilities(round_: "Round", premise: str, hypothesis: str) -> dict[str, float]:
    """{label: probability} from the round's target; TargetUnavailable when it cannot answer."""
    if round_.target_run_id:
        try:
            model = load_run_model(round_.target_run)
        except (OSError, KeyError, RuntimeError) as error:
            logger.error("target of round %s cannot be loaded: %s", round_.pk, error)
            raise TargetUnavailable(DOWN_MESSAGE) from error
        return model_probabilities(model, [(premise, hypothesis)])[0]
    return endpoint_probabilities(round_.target_endpoint, premise, hypothesis)


def predicted(probabilities: Mapping[str, float]) -> str:
    """The most probable label (ties: the first in LABELS order)."""
    return max(LABELS, key=lambda label: (probabilities.get(label, 0.0), -LABELS.index(label)))
