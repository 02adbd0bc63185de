"""Tasks and trajectories as the Atropos book describes them (chapter 10.2.1 and 10.5.2).

A contributor subclasses :class:`TaskSchema` (its type, difficulty and tools; how to make one
task and how to score what an agent did with it) and hands it to
:class:`~atropos_edge.contrib.TrajectoryContributor`. The dataclasses are the book's
``Trajectory``, ``TrajectoryStep`` and ``ToolCall`` with the book's fields; what is trained on is
not these but the token ids the inference proxy recorded while the agent ran (never re-tokenized
text), so an agent only fills in what ``evaluate`` needs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass
class ToolCall:
    """One tool call of a step: its name, arguments, result, and error when it failed."""

    tool_name: str
    parameters: dict[str, Any]
    result: str
    error: str | None = None
    latency_ms: int = 0


@dataclass
class TrajectoryStep:
    """One step of a trajectory: the model's ``<think>`` content, its tool call, what came back."""

    step_id: int
    thought: str | None
    tool_call: ToolCall | None
    observation: str
    timestamp: float


@dataclass
class Trajectory:
    """A complete task execution: what the agent did and, once evaluated, how well."""

    task_id: str
    task_description: str
    model_id: str
    steps: list[TrajectoryStep] = field(default_factory=list)
    final_response: str | None = None
    success: bool | None = None
    judge_score: float | None = None  # 0.0 - 1.0
    token_count: int = 0
    wall_time_seconds: float = 0.0


_TASK_NAME = re.compile(r"^[\w.-]{1,64}$")
_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)


def split_thought(text: str) -> tuple[str | None, str]:
    """``(thought, rest)``: the ``<think>…</think>`` content of a reply, and the reply without it."""
    thoughts = [t.strip() for t in _THINK.findall(text)]
    rest = _THINK.sub("", text).strip()
    return ("\n".join(thoughts) if thoughts else None), rest


class TaskSchema:
    """A task type contributors submit trajectories for; subclass it.

    Class attributes (registered with the run by ``TrajectoryContributor.register_task``):

    - ``task_type``: the task's name in the run (1-64 letters, digits, ``_``, ``-``, ``.``).
    - ``difficulty``: 1 (easiest) to 10, or ``None``.
    - ``required_tools``: the tools an agent needs (names, for the registry and the agent).
    - ``description``: shown in the registry and the dashboard (default: the class docstring).

    For the built-in agent (``submit_trajectories(agent=None)``), optionally ``system_prompt``,
    ``max_turns`` and :meth:`follow_up`.

    Example (the book's)::

        class SecurityAnalysisTask(TaskSchema):
            task_type = "security_analysis"
            difficulty = 3
            required_tools = ["code_exec", "web_search", "file_read"]

            def generate_task(self) -> str:
                return f"Analyze the following code for security vulnerabilities:\\n{CODE}"

            def evaluate(self, trajectory: Trajectory) -> float:
                response = trajectory.final_response or ""
                return sum(1.0 / len(KNOWN) for v in KNOWN if v.cve_id in response)
    """

    task_type: ClassVar[str]
    difficulty: ClassVar[int | None] = None
    required_tools: ClassVar[Sequence[str]] = ()
    description: ClassVar[str | None] = None
    #: The built-in agent's system message (none when ``None``).
    system_prompt: ClassVar[str | None] = None
    #: The built-in agent's assistant turns at most.
    max_turns: ClassVar[int] = 4

    def generate_task(self) -> str:
        """One task, as the text the agent is given."""
        raise NotImplementedError(f"{type(self).__name__} must define generate_task()")

    def evaluate(self, trajectory: Trajectory) -> float:
        """The trajectory's score (the group's score for training; higher is better)."""
        raise NotImplementedError(f"{type(self).__name__} must define evaluate(trajectory)")

    def follow_up(self, trajectory: Trajectory) -> str | None:
        """The built-in agent's next user message after a reply, or ``None`` to stop (the default)."""
        return None

    @classmethod
    def registration(cls) -> dict[str, Any]:
        """The body of ``POST /v1/runs/{run}/tasks`` for this task type.

        Raises:
            ValueError: ``task_type`` is missing or not a valid name.
        """
        name = getattr(cls, "task_type", None)
        if not isinstance(name, str) or not _TASK_NAME.match(name):
            raise ValueError(
                f"{cls.__name__}.task_type must be 1-64 letters, digits, '_', '-' or '.' (got {name!r})"
            )
        description = cls.description if cls.description is not None else (cls.__doc__ or "")
        return {
            "name": name,
            "difficulty": cls.difficulty,
            "required_tools": [str(t) for t in cls.required_tools],
            "description": " ".join(description.split()),
        }
