"""A small JSON-over-HTTP transport on the standard library: bearer auth, gzip, retries.

Network errors, 5xx and 429 are retried with exponential back-off and jitter when the request
is safe to repeat (every trainer call is: leases lapse and are redelivered, acks and policy
announcements are idempotent). Every other error status raises its typed :mod:`errors` class.
"""

from __future__ import annotations

import gzip
import http.client
import json
import random
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._version import __version__
from .errors import ApiConnectionError, ApiError, error_class

#: Statuses worth another attempt: the server or something in front of it was briefly unable.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass
class Response:
    """An answer below 400 (or 204): status, headers (lower-case names) and the decoded JSON."""

    status: int
    headers: Mapping[str, str]
    data: Any = None
    request_id: str | None = field(default=None)


def _decode(raw: bytes, headers: Mapping[str, str]) -> bytes:
    if headers.get("content-encoding", "").lower() == "gzip" or raw[:2] == b"\x1f\x8b":
        return gzip.decompress(raw)
    return raw


def _error_from(status: int, raw: bytes, headers: Mapping[str, str], method: str, url: str) -> ApiError:
    text = raw.decode("utf-8", "replace")
    body: Any = text
    message = text[:300] or http.client.responses.get(status, "error")
    code = None
    request_id = headers.get("x-request-id")
    try:
        body = json.loads(text)
    except ValueError:
        pass
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            message = str(err.get("message", message))
            code = err.get("code")
            request_id = err.get("request_id") or request_id
        elif "detail" in body:
            message = (
                json.dumps(body["detail"])[:300] if not isinstance(body["detail"], str) else body["detail"]
            )
    cls = error_class(status)
    return cls(status, message, code=code, request_id=request_id, method=method, url=url, body=body)


class HttpTransport:
    """Sends JSON requests to one API base URL.

    Args:
        base_url: e.g. ``http://127.0.0.1:8787`` (no trailing path needed).
        token: sent as ``Authorization: Bearer``; ``None`` for an open ``npm run dev``.
        attempts: tries per request on network errors, 5xx and 429 (safe requests only).
        backoff: first retry delay in seconds; doubles per retry up to ``max_backoff``.
        timeout: seconds per attempt.
        sleep: the clock seam the retries wait with (tests pass a recorder).
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        attempts: int = 4,
        backoff: float = 0.25,
        max_backoff: float = 5.0,
        timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.timeout = timeout
        self._sleep = sleep
        # No proxies: the API is usually on loopback, and a proxy from the environment would
        # answer for it.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(self.max_backoff, max(0.0, float(retry_after)))
            except ValueError:
                pass
        cap = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        return cap / 2 + random.random() * cap / 2

    def request(self, method: str, path: str, body: Any = None, *, idempotent: bool = True) -> Response:
        """Sends one request (retrying where safe) and returns the answer below 400.

        Raises:
            ApiError: a subclass for the error status, with the server's message and request id.
            ApiConnectionError: the API could not be reached.
        """
        url = self.base_url + path
        headers = {
            "Accept": "application/json",
            "Accept-Encoding": "gzip",
            "User-Agent": f"atropos-edge-python/{__version__}",
            # One id for every attempt, so the server's log lines of the retries belong together.
            "X-Request-Id": uuid.uuid4().hex,
        }
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        attempts = self.attempts if idempotent else 1
        last: BaseException | None = None
        for attempt in range(1, attempts + 1):
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with self._opener.open(req, timeout=self.timeout) as res:
                    hdrs = {k.lower(): v for k, v in res.headers.items()}
                    raw = _decode(res.read(), hdrs)
                    parsed = json.loads(raw) if raw.strip() else None
                    return Response(res.status, hdrs, parsed, hdrs.get("x-request-id"))
            except urllib.error.HTTPError as e:
                hdrs = {k.lower(): v for k, v in (e.headers or {}).items()}
                raw = _decode(e.read(), hdrs)
                err = _error_from(e.code, raw, hdrs, method, url)
                if e.code not in RETRY_STATUSES or attempt == attempts:
                    raise err from None
                last = err
                self._sleep(self._delay(attempt, hdrs.get("retry-after")))
            except (urllib.error.URLError, ConnectionError, TimeoutError, http.client.HTTPException) as e:
                last = e
                if attempt == attempts:
                    break
                self._sleep(self._delay(attempt, None))
        assert last is not None
        if isinstance(last, ApiError):
            raise last
        raise ApiConnectionError(method, url, attempts, last) from last
