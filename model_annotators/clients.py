"""What a model annotator's jobs are asked through, shared by labelling.py and writing_checks.py:
an endpoint's client (its key unsealed for the job's process only), a training run's checkpoint
from this platform's storage (its SHA-256 checked), and the reading of a run's label words."""

import hashlib
from collections.abc import Callable
from typing import Any

from django.conf import settings

from corpus.labels import LABELS, TWO_WAY_LABELS, TWO_WAY_SCHEME, to_stored
from markets.sealing import unseal_text

from .endpoint import ChatAnswer, ChatEndpoint, Pacer
from .models import ModelAnnotator, Outcome
from .prompts import Parsed
from .scope import CannotLabel, current_prompt, task_kind_of

RAW_CHARS = 2000


def read_answer(row: Any, answer: ChatAnswer, parse: Callable[[str], Parsed]) -> str:
    """Fill `row` (a ModelLabel or a WritingCheck) from an endpoint's `answer`: its costs, the raw
    text, and the outcome (failed: no answer; unparseable: why; labelled: the reason). Returns the
    label `parse` read, or "" when there is none; the caller stores it in its own field."""
    row.attempts, row.latency_ms = answer.attempts, answer.latency_ms
    row.input_tokens, row.output_tokens = answer.input_tokens, answer.output_tokens
    if answer.content is None:
        row.outcome, row.error = Outcome.FAILED, answer.error[:300]
        return ""
    row.raw_answer = answer.content[:RAW_CHARS]
    parsed = parse(answer.content)
    if not parsed.label:
        row.outcome, row.error = Outcome.UNPARSEABLE, parsed.why[:300]
        return ""
    row.outcome, row.reason = Outcome.LABELLED, parsed.reason
    return parsed.label


def endpoint_of(annotator: ModelAnnotator) -> ChatEndpoint:
    """The annotator's endpoint client, its key unsealed for the job's process only."""
    return ChatEndpoint(
        base_url=annotator.base_url,
        model=annotator.model_name,
        temperature=annotator.temperature,
        api_key=unseal_text(annotator.sealed_api_key),
        timeout=annotator.timeout_seconds,
        max_retries=annotator.max_retries,
        retry_wait_max=float(settings.MODEL_ANNOTATOR_RETRY_WAIT_MAX_SECONDS),
        pacer=Pacer(annotator.requests_per_minute),
    )


def stored_label(word: str) -> str:
    if word in LABELS:
        return word
    if word in TWO_WAY_LABELS:
        return to_stored(TWO_WAY_SCHEME, word)[0]
    return ""


def load_run_checkpoint(run: Any) -> Any:
    """The run's LoadedModel, from its checkpoint in this platform's storage, its SHA-256 checked."""
    from modeling.training.checkpoint import load_checkpoint
    from modeling.training.storage import read_checkpoint

    data = read_checkpoint(run)
    actual = hashlib.sha256(data).hexdigest()
    if run.checkpoint_sha256 and actual != run.checkpoint_sha256:
        raise CannotLabel(f"the checkpoint of run {run.pk} is not the one recorded (SHA-256 {actual[:12]}…)")
    return load_checkpoint(data)


class EndpointAsker:
    """A job's endpoint and the annotator's current prompt of `task_kind` (by default its labels' kind)."""

    def __init__(self, annotator: ModelAnnotator, task_kind: str | None = None) -> None:
        prompt = current_prompt(annotator, task_kind)
        if prompt is None:
            raise CannotLabel(f"the annotator has no {task_kind or task_kind_of(annotator)} prompt")
        self.prompt = prompt
        self.annotator = annotator
        self.endpoint = endpoint_of(annotator)


class RunAsker:
    """A job's training run, its checkpoint loaded once."""

    def __init__(self, annotator: ModelAnnotator) -> None:
        run = annotator.training_run
        assert run is not None  # the kind's constraint
        self.annotator = annotator
        self.model = load_run_checkpoint(run)
