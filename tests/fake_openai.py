"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

The LLM paths are tested through the real ``openai`` client over real HTTP; only the model is
fake.  The server replays a script of :class:`Reply` objects, one per request, in order:

* ``Reply.text("...")`` / ``Reply.json({...})``: a normal completion;
* ``Reply.tools([("search", {"q": "x"})], content=None)``: a completion with tool calls;
* ``Reply.error(429, "slow down", headers={"Retry-After": "0"})``: an HTTP error with an
  OpenAI-style error body;
* ``Reply.raw("not json", status=200)``: a broken HTTP body;
* ``Reply.text("late", delay=2.0)``: answers only after ``delay`` seconds (longer than a
  client timeout, to test retries);
* ``Reply.dynamic(fn)``: ``fn(request_json) -> Reply`` decides from the request.

Every request is recorded (:attr:`FakeOpenAI.requests`) before the reply is sent, so tests assert
on what the client sent, retries included.  A request beyond the script gets HTTP 418 with
``"fake_openai: script exhausted"`` (a status no client retries) and sets ``exhausted``.

Use the ``fake_openai`` fixture from a test module::

    from tests.fake_openai import Reply, fake_openai  # noqa: F401  (the fixture)

    def test_x(fake_openai):
        fake_openai.script(Reply.text("hi"))
        client = openai.OpenAI(base_url=fake_openai.base_url, api_key="k")
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest


@dataclass
class Reply:
    """One scripted response (build it with the class methods)."""

    status: int = 200
    body: Any = None  # dict (sent as JSON) or str/bytes (sent raw)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    finish_reason: str = "stop"
    fn: Callable[[dict[str, Any]], "Reply"] | None = None

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0, finish_reason: str = "stop") -> "Reply":
        return cls(content=content, delay=delay, finish_reason=finish_reason)

    @classmethod
    def json(cls, obj: Any, *, delay: float = 0.0) -> "Reply":
        return cls(content=json.dumps(obj), delay=delay)

    @classmethod
    def tools(cls, calls: list[tuple[str, Any]], *, content: str | None = None, delay: float = 0.0) -> "Reply":
        """``calls``: ``(name, arguments)`` pairs; arguments as a dict or as raw (possibly broken) JSON text."""
        made = []
        for i, (name, args) in enumerate(calls):
            made.append({
                "id": f"call_{i}", "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            })
        return cls(content=content, tool_calls=made, finish_reason="tool_calls", delay=delay)

    @classmethod
    def error(cls, status: int, message: str = "error", *, headers: dict[str, str] | None = None,
              delay: float = 0.0, code: str | None = None) -> "Reply":
        body = {"error": {"message": message, "type": "fake_error", "param": None, "code": code}}
        return cls(status=status, body=body, headers=dict(headers or {}), delay=delay)

    @classmethod
    def raw(cls, body: str | bytes, *, status: int = 200, content_type: str = "application/json") -> "Reply":
        return cls(status=status, body=body, headers={"Content-Type": content_type})

    @classmethod
    def dynamic(cls, fn: Callable[[dict[str, Any]], "Reply"]) -> "Reply":
        return cls(fn=fn)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def text(self) -> str:
        """Every message's text content joined (what a prompt assertion usually needs)."""
        out = []
        for m in self.messages:
            c = m.get("content")
            if isinstance(c, str):
                out.append(c)
            elif isinstance(c, list):
                out.extend(part.get("text", "") for part in c if isinstance(part, dict))
        return "\n".join(out)


class FakeOpenAI:
    """The server; :meth:`start` it, :meth:`script` replies, read :attr:`requests`, :meth:`close`."""

    def __init__(self, model: str = "fake-model"):
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.exhausted = False
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------
    def start(self) -> "FakeOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                fake._record(self, None)
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": fake.model, "object": "model"}]}, {})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, {})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                try:
                    body: Any = json.loads(raw) if raw else {}
                except json.JSONDecodeError:
                    body = raw
                fake._record(self, body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                    return
                reply = fake._next(body if isinstance(body, dict) else {})
                if reply.delay and fake._stop.wait(reply.delay):
                    return  # shutting down
                status, payload, headers = fake._render(reply, body if isinstance(body, dict) else {})
                self._send(status, payload, headers)

            def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                data = payload if isinstance(payload, bytes) else (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                )
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- scripting and inspection ------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply) -> "FakeOpenAI":
        with self._lock:
            self._script.extend(replies)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path.rstrip("/").endswith("/chat/completions")]

    # ---- internals ---------------------------------------------------------------------
    def _record(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        with self._lock:
            self.requests.append(
                RecordedRequest(handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body)
            )

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if not self._script:
                self.exhausted = True
                return Reply.error(418, "fake_openai: script exhausted")
            reply = self._script.pop(0)
        while reply.fn is not None:
            reply = reply.fn(body)
        return reply

    def _render(self, reply: Reply, request: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        headers = dict(reply.headers)
        if reply.body is not None or reply.status != 200:
            return reply.status, reply.body if reply.body is not None else {}, headers
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        prompt_chars = sum(len(str(m.get("content") or "")) for m in request.get("messages", []))
        completion_chars = len(reply.content or "") + len(json.dumps(reply.tool_calls or []))
        return 200, {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt_chars // 4, "completion_tokens": completion_chars // 4,
                "total_tokens": (prompt_chars + completion_chars) // 4,
            },
        }, headers


@pytest.fixture
def fake_openai():
    """A started :class:`FakeOpenAI` (closed after the test)."""
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.close()
