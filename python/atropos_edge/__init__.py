"""atropos-edge for Python trainers: lease batches exactly once, train, announce, ack.

The core (:class:`TrainerClient`, :class:`Batch`) needs only the standard library;
``Batch.to_tensors`` needs the ``[torch]`` extra and :mod:`atropos_edge.trl` the ``[trl]`` one.
See docs/PYTHON.md.
"""

from ._version import __version__
from .batch import Batch, Row, group_advantages
from .errors import (
    ApiConnectionError,
    ApiError,
    AtroposEdgeError,
    BadRequestError,
    BatchTimeoutError,
    ClientError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitError,
    ServerError,
    UnauthorizedError,
    ValidationError,
)
from .trainer import TrainerClient

__all__ = [
    "ApiConnectionError",
    "ApiError",
    "AtroposEdgeError",
    "BadRequestError",
    "Batch",
    "BatchTimeoutError",
    "ClientError",
    "ConflictError",
    "ForbiddenError",
    "NotFoundError",
    "PayloadTooLargeError",
    "RateLimitError",
    "Row",
    "ServerError",
    "TrainerClient",
    "UnauthorizedError",
    "ValidationError",
    "__version__",
    "group_advantages",
]
