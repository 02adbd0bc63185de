"""Exceptions raised by the atropos-edge client.

Every error status the API answers becomes an :class:`ApiError` subclass carrying the server's
message, its machine-readable code and the request id (quote it when reporting a problem: the
server logs one line per failed request under that id).
"""

from __future__ import annotations

from typing import Any


class AtroposEdgeError(Exception):
    """Base class of everything this package raises on purpose."""


class ApiConnectionError(AtroposEdgeError):
    """The API could not be reached (after the retries that were safe to make)."""

    def __init__(self, method: str, url: str, attempts: int, cause: BaseException) -> None:
        self.method = method
        self.url = url
        self.attempts = attempts
        self.cause = cause
        super().__init__(
            f"{method} {url} failed after {attempts} attempt(s): {cause!r}; is the API running? (npm run dev)"
        )


class ApiError(AtroposEdgeError):
    """The API answered with an error status.

    Attributes:
        status: the HTTP status.
        code: the API's error code (``"CONFLICT"``, ``"VALIDATION_FAILED"``…) or ``None``.
        message: the server's message: what went wrong and what to change.
        request_id: the id the server logged the request under (``X-Request-Id``).
        body: the decoded JSON error body, or the raw text when it was not JSON.
    """

    status: int = 0

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        request_id: str | None = None,
        method: str = "",
        url: str = "",
        body: Any = None,
    ) -> None:
        self.status = status
        self.message = message
        self.code = code
        self.request_id = request_id
        self.method = method
        self.url = url
        self.body = body
        where = f"{method} {url}: " if method else ""
        rid = f" (request id {request_id})" if request_id else ""
        super().__init__(f"{where}HTTP {status}: {message}{rid}")


class ClientError(ApiError):
    """A 4xx answer: the request was refused and nothing changed; fix it before retrying."""


class BadRequestError(ClientError):
    """400: malformed request (bad JSON, bad gzip)."""


class UnauthorizedError(ClientError):
    """401: the token is missing, unknown or revoked."""


class ForbiddenError(ClientError):
    """403: the token lacks the route's scope or is bound to another run."""


class NotFoundError(ClientError):
    """404: no such run, batch or route."""


class ConflictError(ClientError):
    """409: e.g. an ack whose lease expired and whose batch went to another trainer, or a policy
    version lower than the run's without ``reset=True``."""


class PayloadTooLargeError(ClientError):
    """413: the request body is over the API's limit."""


class ValidationError(ClientError):
    """422: a field is invalid; ``body["detail"]`` lists them (FastAPI style)."""


class RateLimitError(ClientError):
    """429: the token's rate or byte budget is spent (retried with back-off before this is raised)."""


class ServerError(ApiError):
    """5xx: the API failed (raised after the retries)."""


class BatchTimeoutError(AtroposEdgeError, TimeoutError):
    """No batch became ready within the wait; ``reason`` is the API's last explanation."""

    def __init__(self, waited: float, reason: str) -> None:
        self.waited = waited
        self.reason = reason
        super().__init__(
            f"no batch within {waited:g} s (last reason: {reason}): is an env submitting groups?"
        )


_BY_STATUS: dict[int, type[ClientError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: ValidationError,
    429: RateLimitError,
}


def error_class(status: int) -> type[ApiError]:
    """The exception class for an error status."""
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, ClientError)
