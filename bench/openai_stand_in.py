"""A STAND-IN for an OpenAI-compatible chat server (vLLM, Ollama, a hosted API), for tests and
benchmarks only: it runs no model. It serves canned, deterministic completions.

    .venv/bin/python bench/openai_stand_in.py [--port 0] [--answers answers.json] [--api-key KEY]

Prints `listening on http://127.0.0.1:<port>/v1` on its first line, then serves, one thread a
request, until killed. POST /v1/chat/completions answers as the OpenAI chat API does
(`choices[0].message.content`, `usage.prompt_tokens` / `completion_tokens`); with `--api-key` a
request without `Authorization: Bearer <KEY>` gets 401. The answer is looked up by the text after
"Hypothesis: " in the last user message (a JSON string there is decoded first), in the answers file (a JSON object):

  "<hypothesis>": "<content>"                              that content, verbatim;
  "<hypothesis>": {"status": 429, "times": 2, "then": "<content>"}
                                                           that status (429 with Retry-After: 0) the first
                                                           `times` requests, then the content;
  "<hypothesis>": {"status": 500}                          always that status;
  "<hypothesis>": {"envelope": "broken"}                   200 with a body that is not a completion.

Any other hypothesis gets {"label": "neutral", ...} (three-way prompts) or {"label":
"not-entailed", ...} (prompts that name entailed / not-entailed). GET /stats gives the requests
seen per hypothesis and the models and temperatures asked for.
"""

import argparse
import json
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StandIn:
    def __init__(self, answers: dict[str, Any], api_key: str = "") -> None:
        self.answers = answers
        self.api_key = api_key
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()
        self.asked: list[dict[str, Any]] = []


def _hypothesis(messages: list[dict[str, Any]]) -> str:
    user = [m.get("content", "") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    text = user[-1] if user else ""
    if "Hypothesis: " not in text:
        return ""
    line = text.split("Hypothesis: ", 1)[1].split("\n", 1)[0]
    if line.startswith('"'):  # the platform quotes the crowd's text as a JSON string
        try:
            decoded = json.loads(line)
        except ValueError:
            return line
        return decoded if isinstance(decoded, str) else line
    return line


def _default(messages: list[dict[str, Any]]) -> str:
    system = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    label = "not-entailed" if "not-entailed" in system else "neutral"
    return json.dumps({"label": label, "reason": "The stand-in's default answer."})


def make_handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/stats":
                with state.lock:
                    self._send(200, {"seen": dict(state.seen), "asked": state.asked[-50:]})
                return
            self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": "not found"}})
                return
            if state.api_key and self.headers.get("Authorization") != f"Bearer {state.api_key}":
                self._send(401, {"error": {"message": "invalid api key"}})
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length))
                messages = body["messages"]
            except (ValueError, KeyError, TypeError):
                self._send(400, {"error": {"message": "bad request"}})
                return
            hypothesis = _hypothesis(messages)
            with state.lock:
                state.seen[hypothesis] += 1
                count = state.seen[hypothesis]
                state.asked.append({"model": body.get("model"), "temperature": body.get("temperature")})
            canned = state.answers.get(hypothesis)
            content = _default(messages)
            if isinstance(canned, str):
                content = canned
            elif isinstance(canned, dict):
                if canned.get("envelope") == "broken":
                    self._send(200, {"object": "not a completion"})
                    return
                status = int(canned.get("status", 200))
                if status != 200 and ("times" not in canned or count <= int(canned["times"])):
                    self._send(status, {"error": {"message": "stand-in fault"}}, {"Retry-After": "0"})
                    return
                content = canned.get("then", content)
            words = sum(len(str(m.get("content", "")).split()) for m in messages)
            self._send(
                200,
                {
                    "id": f"standin-{count}",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": words, "completion_tokens": len(content.split())},
                },
            )

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--answers", default="")
    parser.add_argument("--api-key", default="")
    args = parser.parse_args(argv)
    answers = {}
    if args.answers:
        with open(args.answers, encoding="utf-8") as handle:
            answers = json.load(handle)
    state = StandIn(answers, args.api_key)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(state))
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
