"""A loopback HTTP server that answers each request with the next reply a test scripted (the
default once the script is spent) and keeps every request it read: the market clients' edges
(a late or dropped answer, a redirect, an empty or malformed body, each error shape) need answers
the market stand-in (tests/markets/standin.py) gives only as the market does."""

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Reply:
    """One scripted answer: `body` as JSON (None: empty) unless `raw` is given; `hold` waits (until
    the test ends) before answering; `drop` closes the connection without an answer after `hold`."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    hold: float = 0.0
    drop: bool = False


@dataclass
class Request:
    """A request as the server read it; its header names in lower case (HTTP's are case-insensitive)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class ScriptedServer:
    """Started by `start()`, stopped by `stop()` (which ends every held answer); `url` is its address
    and `path`; `content_type` and `headers` go with every answer."""

    def __init__(
        self,
        *,
        default: Reply | None = None,
        path: str = "",
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Request] = []
        self.default = default or Reply(body={})
        self.path = path
        self.content_type = content_type
        self.headers = headers or {}
        self.ended = threading.Event()
        self.server: ThreadingHTTPServer | None = None

    def answer(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def start(self) -> Self:
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                scripted.handle(self, "GET")

            def do_POST(self) -> None:
                scripted.handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.ended.set()
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"

    def handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        self.requests.append(Request(method, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body))
        reply = self.replies.pop(0) if self.replies else self.default
        if reply.hold:
            self.ended.wait(reply.hold)
        if reply.drop:
            handler.close_connection = True
            return
        data = (
            reply.raw if reply.raw is not None else (json.dumps(reply.body).encode() if reply.body is not None else b"")
        )
        handler.send_response(reply.status)
        handler.send_header("Content-Type", self.content_type)
        handler.send_header("Content-Length", str(len(data)))
        for name, value in {**self.headers, **reply.headers}.items():
            handler.send_header(name, value)
        handler.end_headers()
        try:
            handler.wfile.write(data)
            handler.wfile.flush()
        except OSError:
            pass
