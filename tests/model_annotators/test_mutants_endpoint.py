"""The chat endpoint's client (model_annotators/endpoint.py) at the edges: the pacer spaces request
starts by sixty seconds over its rate and never waits when it has none; a Retry-After is read in
seconds, never below zero, and ignored when absent or not a number; a completion is read for its
first choice's text and its token counts (a count that is not a whole number of at least zero is
none); and one request carries the model, temperature, token cap, both messages and the key, to
the base URL's chat path, retried on a server error or an unreachable server after a doubling
wait (or the server's Retry-After, capped), never on a refusal or an oversized answer, with the
attempts and the time it took. The server is a real loopback HTTP server in the test's process."""

import contextlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from base.outbound import Answer
from model_annotators.endpoint import (
    ANSWER_MAX_BYTES,
    MAX_TOKENS,
    ChatAnswer,
    ChatEndpoint,
    Pacer,
    _count,
    _read_completion,
    _retry_after,
)

Reply = tuple[int, dict[str, str], bytes]


def completion(content: Any, usage: Any = None) -> bytes:
    data: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    if usage is not None:
        data["usage"] = usage
    return json.dumps(data).encode()


class Seen:
    """What the scripted server was sent: each request's path, headers, JSON body and arrival time."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def gaps(self) -> list[float]:
        times = [request["at"] for request in self.requests]
        return [later - earlier for earlier, later in itertools.pairwise(times)]


Start = Callable[[list[Reply]], tuple[str, Seen]]


@pytest.fixture
def scripted() -> Iterator[Start]:
    """Start a loopback server answering each request with the next reply of its script (the
    last one again once the script is spent); stopped after the test."""
    started: list[ThreadingHTTPServer] = []

    def start(script: list[Reply]) -> tuple[str, Seen]:
        seen = Seen()
        replies = list(script)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                at = time.monotonic()
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                seen.requests.append({"path": self.path, "headers": dict(self.headers), "body": body, "at": at})
                status, headers, data = replies.pop(0) if len(replies) > 1 else replies[0]
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the client hung up (an answer it would not read whole)
                    self.wfile.write(data)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", seen

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def client(
    base_url: str,
    *,
    retries: int = 0,
    wait_max: float = 30.0,
    api_key: str = "",
    sleep: Callable[[float], None] = time.sleep,
) -> ChatEndpoint:
    return ChatEndpoint(
        base_url=base_url,
        model="judge-7b",
        temperature=0.3,
        api_key=api_key,
        timeout=5.0,
        max_retries=retries,
        retry_wait_max=wait_max,
        pacer=Pacer(0),
        sleep=sleep,
    )


def timed(endpoint: ChatEndpoint) -> tuple[ChatAnswer, int]:
    """The answer, and the milliseconds the whole call took as seen from outside it."""
    started = time.monotonic()
    answer = endpoint.ask("the system text", "the user text")
    return answer, int((time.monotonic() - started) * 1000)


# --- the pacer --------------------------------------------------------------------------------------


def test_a_pacer_without_a_rate_never_waits() -> None:
    slept: list[float] = []
    pacer = Pacer(0, sleep=slept.append, clock=lambda: 5.0)

    pacer.wait()
    pacer.wait()

    assert slept == []


def test_a_pacer_of_one_a_minute_waits_out_the_minute() -> None:
    slept: list[float] = []
    times = iter([100.0, 110.0])
    pacer = Pacer(1, sleep=slept.append, clock=lambda: next(times))

    pacer.wait()
    pacer.wait()

    assert slept == [50.0]


def test_a_pacer_spaces_starts_by_sixty_seconds_over_its_rate_and_never_waits_at_its_slot() -> None:
    slept: list[float] = []
    times = iter([100.0, 104.0, 130.0, 200.0])
    pacer = Pacer(4, sleep=slept.append, clock=lambda: next(times))

    pacer.wait()  # the first start: no wait, the next slot at 115
    assert slept == [] and pacer._next == 115.0
    pacer.wait()  # at 104: waits 11 s, the next slot 15 s after 115
    assert slept == [11.0] and pacer._next == 130.0
    pacer.wait()  # exactly at its slot: no wait, not even a zero one
    assert slept == [11.0] and pacer._next == 145.0
    pacer.wait()  # long after its slot: no wait, counted from now
    assert slept == [11.0] and pacer._next == 215.0


# --- Retry-After ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after": "-3"}, 0.0),  # never a negative wait
        ({"retry-after": "soon"}, None),  # not a number of seconds: the client's own wait
        ({}, None),
    ],
)
def test_a_retry_after_is_read_in_seconds_never_below_zero(header: dict[str, str], seconds: float | None) -> None:
    assert _retry_after(Answer(status=429, body=b"", headers=header)) == seconds


# --- reading a completion ---------------------------------------------------------------------------


def test_a_completion_gives_its_first_choices_text_and_its_token_counts() -> None:
    body = json.dumps(
        {
            "choices": [{"message": {"content": "first"}}, {"message": {"content": "second"}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7},
        }
    ).encode()

    answer = _read_completion(Answer(status=200, body=body))

    assert answer == ChatAnswer(content="first", error="", input_tokens=11, output_tokens=7)


def test_a_completion_whose_usage_is_not_an_object_counts_no_tokens() -> None:
    answer = _read_completion(Answer(status=200, body=completion("text", usage=[3, 4])))

    assert answer == ChatAnswer(content="text", input_tokens=0, output_tokens=0)


@pytest.mark.parametrize("body", [b"not json", b'{"choices": []}', b'{"choices": [{"text": "x"}]}', b"[1]"])
def test_an_answer_that_is_not_a_chat_completion_is_an_error_without_content(body: bytes) -> None:
    answer = _read_completion(Answer(status=200, body=body))

    assert answer == ChatAnswer(content=None, error="the endpoint's answer is not a chat completion")


@pytest.mark.parametrize("content", [None, 42, ["a"]])
def test_a_completion_whose_content_is_not_text_is_an_error(content: Any) -> None:
    answer = _read_completion(Answer(status=200, body=completion(content)))

    assert answer == ChatAnswer(content=None, error="the completion has no text content")


@pytest.mark.parametrize(
    ("usage", "count"),
    [
        ({"n": 5}, 5),
        ({"n": 0}, 0),
        ({}, 0),  # not given
        ({"n": -1}, 0),
        ({"n": True}, 0),  # a boolean is not a count
        ({"n": "7"}, 0),
        ({"n": 2.5}, 0),
        ([5], 0),  # usage that is not an object
        (None, 0),
    ],
)
def test_a_token_count_is_a_whole_number_of_at_least_zero_else_none(usage: Any, count: int) -> None:
    value = _count(usage, "n")

    assert value == count and type(value) is int


# --- asking -----------------------------------------------------------------------------------------


def test_one_request_carries_the_model_temperature_token_cap_messages_and_key_to_the_chat_path(
    scripted: Start,
) -> None:
    url, seen = scripted([(200, {}, completion("an answer", {"prompt_tokens": 30, "completion_tokens": 4}))])

    # A base URL ending in a slash, its last segment ending in "X": only the slash is dropped.
    answer, _ = timed(client(f"{url}/proxyX/", api_key="key-41"))

    assert answer.content == "an answer" and answer.error == ""
    assert answer.attempts == 1 and (answer.input_tokens, answer.output_tokens) == (30, 4)
    assert isinstance(answer.latency_ms, int) and answer.latency_ms >= 0
    (request,) = seen.requests
    assert request["path"] == "/proxyX/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer key-41"
    assert request["body"] == {
        "model": "judge-7b",
        "temperature": 0.3,
        "max_tokens": MAX_TOKENS,
        "messages": [{"role": "system", "content": "the system text"}, {"role": "user", "content": "the user text"}],
    }


def test_without_a_key_no_authorization_is_sent(scripted: Start) -> None:
    url, seen = scripted([(200, {}, completion("ok"))])

    answer, _ = timed(client(url))

    assert answer.content == "ok"
    (request,) = seen.requests
    assert "Authorization" not in request["headers"]


def test_a_server_error_is_asked_again_after_a_doubling_wait(scripted: Start) -> None:
    url, _ = scripted([(500, {}, b""), (503, {}, b""), (200, {}, completion("third time"))])
    slept: list[float] = []

    answer, _ = timed(client(url, retries=2, sleep=slept.append))

    assert answer.content == "third time" and answer.attempts == 3
    assert slept == [0.5, 1.0]  # half a second, then a second


def test_the_answer_says_how_long_it_took_its_waits_included(scripted: Start) -> None:
    url, seen = scripted([(500, {}, b""), (200, {}, completion("second time"))])

    answer, outside_ms = timed(client(url, retries=1))

    assert answer.content == "second time"
    (gap,) = seen.gaps()
    # Lower bounds only: a loaded machine makes every wait longer, never shorter.
    assert gap >= 0.45
    assert 450 <= answer.latency_ms <= outside_ms


def test_a_server_that_keeps_failing_is_asked_retries_plus_one_times_waiting_its_retry_after(
    scripted: Start,
) -> None:
    url, seen = scripted([(503, {"Retry-After": "1.2"}, b"")])
    slept: list[float] = []

    answer, outside_ms = timed(client(url, retries=1, sleep=slept.append))

    assert answer == ChatAnswer(
        content=None, error="the endpoint answered HTTP 503", attempts=2, latency_ms=answer.latency_ms
    )
    assert len(seen.requests) == 2
    # The server's 1.2 s, not the client's own half second, and no wait after the last attempt.
    assert slept == [1.2]
    assert 0 <= answer.latency_ms <= outside_ms


def test_a_failed_answer_says_how_long_it_took_its_waits_included(scripted: Start) -> None:
    url, _ = scripted([(503, {"Retry-After": "1.2"}, b"")])

    answer, outside_ms = timed(client(url, retries=1))

    assert answer.content is None and answer.attempts == 2
    # A lower bound only (a loaded machine makes the wait longer, never shorter); the call seen from
    # outside holds the answer's own measure.
    assert 1150 <= answer.latency_ms <= outside_ms


def test_a_long_retry_after_is_cut_to_the_retry_wait_cap(scripted: Start) -> None:
    url, _ = scripted([(429, {"Retry-After": "30"}, b""), (200, {}, completion("later"))])
    slept: list[float] = []

    answer, _ = timed(client(url, retries=1, wait_max=0.2, sleep=slept.append))

    assert answer.content == "later" and answer.attempts == 2
    assert slept == [0.2]


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_refusal_is_not_asked_again(scripted: Start, status: int) -> None:
    url, seen = scripted([(status, {}, b""), (200, {}, completion("never"))])

    answer, _ = timed(client(url, retries=3, wait_max=0.01))

    assert answer.content is None and answer.error == f"the endpoint answered HTTP {status}"
    assert answer.attempts == 1 and len(seen.requests) == 1


def test_an_unreachable_server_is_asked_again_and_the_error_says_no_answer() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    answer, _ = timed(client(f"http://127.0.0.1:{port}/v1", retries=1, wait_max=0.01))

    assert answer.content is None and answer.attempts == 2
    assert answer.error.startswith("no answer from the endpoint: The server could not be reached")


def test_an_answer_past_the_byte_limit_is_not_read_and_not_asked_again(scripted: Start) -> None:
    url, seen = scripted([(200, {}, b" " * (ANSWER_MAX_BYTES + 1))])

    answer, _ = timed(client(url, retries=2, wait_max=0.01))

    assert answer.content is None and answer.attempts == 1 and len(seen.requests) == 1
    assert answer.error == (
        f"no answer from the endpoint: The answer would be {ANSWER_MAX_BYTES + 1:,} bytes; "
        f"at most {ANSWER_MAX_BYTES:,} are read."
    )
