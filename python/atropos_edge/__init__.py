"""atropos-edge for Python trainers and contributors.

Trainers lease batches exactly once, train, announce, ack; contributors register tasks and submit
trajectories through the inference proxy (:class:`TrajectoryContributor`, :class:`TaskSchema`).
The core (:class:`TrainerClient`, :class:`Batch`, the contributor side) needs only the standard library;
``Batch.to_tensors`` needs the ``[torch]`` extra and :mod:`atropos_edge.trl` the ``[trl]`` one.
See docs/PYTHON.md.
"""

from ._version import __version__
from .batch import Batch, Row, group_advantages
from .contrib import Agent, Contribution, TrajectoryContributor
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
from .tasks import TaskSchema, ToolCall, Trajectory, TrajectoryStep
from .trainer import TrainerClient

__all__ = [
    "Agent",
    "ApiConnectionError",
    "ApiError",
    "AtroposEdgeError",
    "BadRequestError",
    "Batch",
    "BatchTimeoutError",
    "ClientError",
    "ConflictError",
    "Contribution",
    "ForbiddenError",
    "NotFoundError",
    "PayloadTooLargeError",
    "RateLimitError",
    "Row",
    "ServerError",
    "TaskSchema",
    "ToolCall",
    "TrainerClient",
    "Trajectory",
    "TrajectoryContributor",
    "TrajectoryStep",
    "UnauthorizedError",
    "ValidationError",
    "__version__",
    "group_advantages",
]
