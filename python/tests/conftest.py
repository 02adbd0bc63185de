"""A scripted loopback HTTP server standing in for the API (client logic only; the real API is
exercised by test/e2e/python-package.test.ts)."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Answer:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    gzip: bool = False
    drop: bool = False  # close the connection without answering


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeApi:
    """Answers each request with the next scripted :class:`Answer` (or what ``route`` returns)."""

    def __init__(self) -> None:
        self.script: list[Answer] = []
        self.route: Callable[[Seen], Answer] | None = None
        self.seen: list[Seen] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                seen = Seen(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    json.loads(raw) if raw else None,
                )
                api.seen.append(seen)
                answer = api.script.pop(0) if api.script else (api.route(seen) if api.route else Answer(404))
                if answer.drop:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                data = b"" if answer.body is None else json.dumps(answer.body).encode()
                self.send_response(answer.status)
                for k, v in answer.headers.items():
                    self.send_header(k, v)
                if answer.gzip:
                    data = gzip.compress(data)
                    self.send_header("Content-Encoding", "gzip")
                if data:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _handle
            do_POST = _handle
            do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api() -> Iterator[FakeApi]:
    server = FakeApi()
    yield server
    server.close()


def make_group(seed: int, size: int = 4, length: int = 8, vocab: int = 150_000) -> dict[str, Any]:
    """A group like test/e2e/harness.ts makeGroup: half prompt (-100), scores in {-1, 0, 1}."""
    tokens, masks, logprobs = [], [], []
    for s in range(size):
        seq = [(seed * 7919 + s * 104729 + i) % vocab for i in range(length)]
        tokens.append(seq)
        masks.append([-100 if i < length // 2 else t for i, t in enumerate(seq)])
        logprobs.append([1.0 if i < length // 2 else -((seed + s + i) % 97) / 10 for i in range(length)])
    return {
        "tokens": tokens,
        "masks": masks,
        "scores": [float((seed + s) % 3 - 1) for s in range(size)],
        "inference_logprobs": logprobs,
        "overrides": None,
        "advantages": None,
    }


def lease_answer(
    groups: list[dict[str, Any]],
    batch_id: str = "b1",
    lease_id: str = "l1",
    step: int = 1,
    versions: list[int] | None = None,
) -> dict[str, Any]:
    """The wire shape of a 200 lease answer."""
    return {
        "batch_id": batch_id,
        "lease_id": lease_id,
        "step": step,
        "lease_expires_at": 1e12,
        "redelivered": False,
        "groups": [
            {
                "group_id": i + 1,
                "env_id": 0,
                "policy_version": (versions or [0] * len(groups))[i],
                "num_seqs": len(g["tokens"]),
                "replayed": False,
            }
            for i, g in enumerate(groups)
        ],
        "batch": groups,
    }
