"""A small local server speaking the OpenAI wire format, so the real ``openai`` client is used.

It serves ``POST /v1/embeddings`` (deterministic vectors from a hash of each text) and
``POST /v1/chat/completions`` (answers from a script the test provides), records every request,
and can be told to fail or stall.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def fake_vector(text: str, dimension: int) -> list[float]:
    """A deterministic, non-zero vector for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return [float(x) for x in np.random.default_rng(seed).normal(size=dimension)]


@dataclass
class FakeOpenAI:
    """State shared with the handler: requests seen, behaviour switches."""

    dimension: int = 8
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_status: int | None = None
    delay_s: float = 0.0
    shuffle: bool = True
    zero_vectors: bool = False
    chat: Callable[[dict[str, Any]], dict[str, Any] | str] | None = None
    embed: Callable[[str], list[float]] | None = None
    """The model itself (default: fake_vector)."""
    rerank: Callable[[str, str], float] | None = None
    """A reranker's relevance of a document to a query (``/rerank``, Cohere's format)."""
    base_url: str = ""

    def embedding_calls(self) -> int:
        return sum(1 for r in self.requests if r["path"].endswith("/embeddings"))

    def embedded_texts(self) -> list[str]:
        texts: list[str] = []
        for r in self.requests:
            if r["path"].endswith("/embeddings"):
                texts.extend(r["body"]["input"])
        return texts


def _handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append({"path": self.path, "body": body})
            if state.delay_s:
                time.sleep(state.delay_s)
            if state.fail_status:
                self._send(
                    state.fail_status,
                    {"error": {"message": "scripted failure", "type": "server_error"}},
                )
                return
            if self.path.endswith("/embeddings"):
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": [0.0] * state.dimension
                        if state.zero_vectors
                        else (state.embed or (lambda t: fake_vector(t, state.dimension)))(text),
                    }
                    for i, text in enumerate(texts)
                ]
                if state.shuffle:
                    data.reverse()
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body.get("model"),
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    },
                )
            elif self.path.endswith("/rerank") and state.rerank is not None:
                relevance = state.rerank
                scored = [
                    {"index": i, "relevance_score": relevance(body["query"], d)}
                    for i, d in enumerate(body["documents"])
                ]
                scored.sort(key=lambda row: -row["relevance_score"])
                self._send(200, {"results": scored[: body.get("top_n", len(scored))]})
            elif self.path.endswith("/chat/completions"):
                answer = state.chat(body) if state.chat else "ok"
                message = {"role": "assistant", "content": answer} if isinstance(answer, str) else answer
                self._send(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "fake"),
                        "choices": [
                            {
                                "index": 0,
                                "message": message,
                                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout test) is expected; anything else is reported."""
        import sys

        if not isinstance(sys.exc_info()[1], BrokenPipeError | ConnectionResetError):
            super().handle_error(request, client_address)


@contextmanager
def serve(state: FakeOpenAI | None = None) -> Iterator[FakeOpenAI]:
    """Run the fake server on a free port of 127.0.0.1 for the duration of the block."""
    state = state or FakeOpenAI()
    server = _Server(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
