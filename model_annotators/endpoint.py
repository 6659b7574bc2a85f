"""A client of the OpenAI-compatible chat API (POST {base_url}/chat/completions): one request per
pair, paced to the annotator's requests per minute, retried on a 429 (honouring Retry-After up to a
cap), a server error or a timeout. Every request goes through base/outbound.py (never an inward
address, no redirect, one deadline an attempt, an answer past ANSWER_MAX_BYTES cut)."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from base import outbound

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_TOKENS = 120
# A completion of MAX_TOKENS tokens in its envelope is a few kilobytes; far more is not an answer.
ANSWER_MAX_BYTES = 256 * 1024


@dataclass
class ChatAnswer:
    """What came back: the completion's content (None when no answer came), or the error."""

    content: str | None
    error: str = ""
    attempts: int = 1
    latency_ms: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class Pacer:
    """At most `per_minute` request starts a minute: each waits for its slot."""

    per_minute: int
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    _next: float = 0.0

    def wait(self) -> None:
        if self.per_minute <= 0:
            return
        now = self.clock()
        if now < self._next:
            self.sleep(self._next - now)
            now = self._next
        self._next = now + 60.0 / self.per_minute


@dataclass
class ChatEndpoint:
    base_url: str
    model: str
    temperature: float
    api_key: str = ""
    timeout: float = 30.0
    max_retries: int = 3
    retry_wait_max: float = 30.0
    pacer: Pacer = field(default_factory=lambda: Pacer(60))
    sleep: Callable[[float], None] = time.sleep  # the wait before asking again

    def ask(self, system: str, user: str) -> ChatAnswer:
        body: dict[str, Any] = {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": MAX_TOKENS,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        url = self.base_url.rstrip("/") + "/chat/completions"
        started = time.monotonic()
        error = ""
        for attempt in range(1, self.max_retries + 2):
            self.pacer.wait()
            wait = min(self.retry_wait_max, 0.5 * 2 ** (attempt - 1))
            try:
                response = outbound.post_json(
                    url, body, headers=headers, deadline_seconds=self.timeout, max_bytes=ANSWER_MAX_BYTES
                )
            except outbound.OutboundError as failure:
                error = f"no answer from the endpoint: {failure}"
                if not failure.retry:
                    break  # a refused address, a redirect or an oversized answer is the same next time
            else:
                if response.status == 200:
                    answer = _read_completion(response)
                    answer.attempts = attempt
                    answer.latency_ms = int((time.monotonic() - started) * 1000)
                    return answer
                error = f"the endpoint answered HTTP {response.status}"
                if response.status not in RETRIED_STATUSES:
                    break  # a refusal (401, 404, 400) is not cured by asking again
                wait = min(self.retry_wait_max, _retry_after(response) or wait)
            if attempt <= self.max_retries:
                self.sleep(wait)
        return ChatAnswer(
            content=None, error=error, attempts=attempt, latency_ms=int((time.monotonic() - started) * 1000)
        )


def _retry_after(response: outbound.Answer) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


def _read_completion(response: outbound.Answer) -> ChatAnswer:
    try:
        data: Any = response.json()
        content = data["choices"][0]["message"]["content"]
        usage = data.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return ChatAnswer(content=None, error="the endpoint's answer is not a chat completion")
    if not isinstance(content, str):
        return ChatAnswer(content=None, error="the completion has no text content")
    return ChatAnswer(
        content=content, input_tokens=_count(usage, "prompt_tokens"), output_tokens=_count(usage, "completion_tokens")
    )


def _count(usage: Any, key: str) -> int:
    value = usage.get(key, 0) if isinstance(usage, dict) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
