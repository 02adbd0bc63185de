"""TrajectoryContributor: community contributions as the Atropos book describes them (10.5.2).

A contributor registers task types with a run and submits trajectories for them. Each trajectory
is one agent run through its own inference-proxy session of the run (docs/PROXY.md): the agent
talks to the session's OpenAI-compatible base URL, the proxy records the exact token ids, masks
and logprobs the run's servers sampled, and finishing the session with the task's score submits
them as one scored group attributed to the contributor's token and the task. Text is never
re-tokenized. Standard library only.
"""

from __future__ import annotations

import os
import re
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import NotFoundError
from .http import HttpTransport
from .tasks import TaskSchema, Trajectory, TrajectoryStep, split_thought

#: ``agent(task_text, openai_base_url) -> Trajectory``: runs one task against the session's
#: OpenAI-compatible base URL (e.g. ``OpenAI(base_url=url, api_key=contributor.api_key)``).
Agent = Callable[[str, str], Trajectory]

DEFAULT_BASE_URL = "http://127.0.0.1:8787"
_KEY = re.compile(r"^[\w.-]{1,48}$")


@dataclass
class Contribution:
    """What one trajectory became: its session and the group the run stored.

    ``status`` is the API's: ``received`` or ``buffered`` when stored now, ``duplicate`` when an
    earlier call (a retry with the same ``key``) had already stored it; then ``trajectory`` and
    ``score`` are ``None`` (the agent was not run again).
    """

    index: int
    session: str
    group_id: int
    status: str
    sequences: int
    score: float | None
    trajectory: Trajectory | None


class TrajectoryContributor:
    """A contributor to one run of an atropos-edge API.

    Args:
        api_key: a ``contributor`` token bound to the run (or an ``env``/admin token); ``None``
            for an open local API (``npm run dev``), where nothing is attributed to a token.
        base_url: the API; default ``$ATROPOS_EDGE_URL``, else ``http://127.0.0.1:8787``.
        run: the run to contribute to.
        attempts, backoff, max_backoff, timeout, sleep: see :class:`~atropos_edge.http.HttpTransport`.

    Example::

        contributor = TrajectoryContributor(api_key="aet_…", run="agents")
        contributor.register_task(SecurityAnalysisTask)
        contributor.submit_trajectories(task=SecurityAnalysisTask(), n_trajectories=100)
    """

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None = None,
        run: str = "default",
        *,
        attempts: int = 4,
        backoff: float = 0.25,
        max_backoff: float = 5.0,
        timeout: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_key = api_key
        self.base_url = (base_url or os.environ.get("ATROPOS_EDGE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.run = run
        self.http = HttpTransport(
            self.base_url,
            api_key,
            attempts=attempts,
            backoff=backoff,
            max_backoff=max_backoff,
            timeout=timeout,
            sleep=sleep,
        )
        #: The ``key`` of the last ``submit_trajectories`` call (pass it again to resume that call).
        self.last_key: str | None = None

    @property
    def _runs(self) -> str:
        return f"/v1/runs/{urllib.parse.quote(self.run, safe='')}"

    def _session_path(self, session: str) -> str:
        return f"{self._runs}/proxy/{urllib.parse.quote(session, safe='')}"

    # -- the registry -------------------------------------------------------------------------

    def register_task(self, task: type[TaskSchema] | TaskSchema) -> dict[str, Any]:
        """Registers the task type with the run (``POST /v1/runs/{run}/tasks``); safe to repeat.

        Returns the API's answer: ``{"task": {...}, "status": "created" | "updated" | "unchanged"}``.

        Raises:
            ConflictError: another token registered a task of this name in the run.
        """
        cls = task if isinstance(task, type) else type(task)
        return dict(self.http.request("POST", f"{self._runs}/tasks", cls.registration()).data)

    def tasks(self) -> list[dict[str, Any]]:
        """The run's tasks with groups submitted and mean score, per contributor."""
        return list(self.http.request("GET", f"{self._runs}/tasks").data["tasks"])

    # -- sessions -----------------------------------------------------------------------------

    def open_session(self, task_type: str, session: str) -> dict[str, Any]:
        """Opens (or looks up) a proxy session for a registered task; ``base_url`` is relative."""
        path = f"{self._session_path(session)}/open"
        return dict(self.http.request("POST", path, {"task": task_type}).data)

    def session_base_url(self, session: str) -> str:
        """The session's absolute OpenAI base URL (what an agent's client points at)."""
        return f"{self.base_url}{self._session_path(session)}/v1"

    def session_state(self, session: str) -> dict[str, Any]:
        """The session's tracked sequences (``GET …/state``)."""
        return dict(self.http.request("GET", f"{self._session_path(session)}/state").data)

    def discard_session(self, session: str) -> None:
        """Drops an unfinished session (what a crashed agent left in it)."""
        path = f"{self._runs}/atropos-proxy/{urllib.parse.quote(session, safe='')}"
        try:
            self.http.request("DELETE", path)
        except NotFoundError:
            pass

    def finish_session(
        self,
        session: str,
        scores: list[float],
        *,
        success: list[bool | None] | None = None,
        judge_scores: list[float | None] | None = None,
    ) -> dict[str, Any]:
        """Submits the session as one scored group (safe to repeat: the same group answers)."""
        body: dict[str, Any] = {"scores": scores}
        if success is not None:
            body["success"] = success
        if judge_scores is not None:
            body["judge_scores"] = judge_scores
        return dict(self.http.request("POST", f"{self._session_path(session)}/finish", body).data)

    # -- contributing -------------------------------------------------------------------------

    def submit_trajectories(
        self,
        task: TaskSchema,
        n_trajectories: int,
        agent: Agent | None = None,
        *,
        key: str | None = None,
        model: str = "policy",
        sampling: dict[str, Any] | None = None,
    ) -> list[Contribution]:
        """Runs ``n_trajectories`` tasks, each through its own proxy session, and submits them.

        For each: ``task.generate_task()``, the agent against the session's base URL (``agent``
        or, when ``None``, a plain multi-turn chat on the run's servers: ``model`` and
        ``sampling`` are its request fields), ``task.evaluate(trajectory)``, then finish with that
        score: one group of the session's tracked sequences, attributed to this token and the task.

        Idempotent on retry: sessions are named ``{key}-{i}``. Calling again with the same ``key``
        (after a crash or a lost answer) returns the groups already stored without running their
        agents again, discards what an interrupted agent left in an unfinished session, and
        runs only the rest. Without ``key`` a new one is drawn (``self.last_key`` says which).

        Raises:
            ValueError: ``key`` is not 1-48 letters, digits, ``_``, ``-`` or ``.``; an agent made
                no completion through its session (there would be nothing to train on).
        """
        registration = type(task).registration()
        key = key or uuid.uuid4().hex[:16]
        if not _KEY.match(key):
            raise ValueError(f"key must be 1-48 letters, digits, '_', '-' or '.' (got {key!r})")
        self.last_key = key
        run_agent = agent or (lambda text, url: self._chat_agent(task, text, url, model, sampling))
        out: list[Contribution] = []
        for i in range(n_trajectories):
            session = f"{key}-{i}"
            opened = self.open_session(registration["name"], session)
            if opened["status"] == "finished":
                state = self.session_state(session)
                out.append(
                    Contribution(
                        i, session, int(opened["group_id"]), "duplicate", len(state["nodes"]), None, None
                    )
                )
                continue
            if self.session_state(session)["nodes"]:
                # An earlier attempt's agent stopped midway: start the conversation over.
                self.discard_session(session)
                self.open_session(registration["name"], session)
            out.append(self._contribute(task, i, session, run_agent))
        return out

    def _contribute(self, task: TaskSchema, index: int, session: str, agent: Agent) -> Contribution:
        text = task.generate_task()
        started = time.monotonic()
        trajectory = agent(text, self.session_base_url(session))
        if not trajectory.wall_time_seconds:
            trajectory.wall_time_seconds = time.monotonic() - started
        nodes = self.session_state(session)["nodes"]
        if not nodes:
            raise ValueError(
                f"the agent made no completion through its session's base URL "
                f"({self.session_base_url(session)}): nothing to submit for trajectory {index}"
            )
        if not trajectory.token_count:
            trajectory.token_count = sum(1 for n in nodes for m in n["masked_tokens"] if m != -100)
        score = float(task.evaluate(trajectory))
        if trajectory.judge_score is None:
            trajectory.judge_score = score
        count = len(nodes)
        finished = self.finish_session(
            session,
            [score] * count,
            success=[trajectory.success] * count if trajectory.success is not None else None,
            judge_scores=[trajectory.judge_score] * count,
        )
        return Contribution(
            index,
            session,
            int(finished["group_id"]),
            str(finished["status"]),
            int(finished["sequences"]),
            score,
            trajectory,
        )

    def _chat_agent(
        self,
        task: TaskSchema,
        text: str,
        base_url: str,
        model: str,
        sampling: dict[str, Any] | None,
    ) -> Trajectory:
        """The built-in agent: chat turns until ``task.follow_up`` says stop or ``max_turns``."""
        path = base_url[len(self.base_url) :] + "/chat/completions"
        messages: list[dict[str, Any]] = []
        if task.system_prompt:
            messages.append({"role": "system", "content": task.system_prompt})
        messages.append({"role": "user", "content": text})
        trajectory = Trajectory(
            task_id=type(task).registration()["name"], task_description=text, model_id=model
        )
        for turn in range(max(1, task.max_turns)):
            # Not retried: a repeated completion would be recorded in the session twice.
            answer = self.http.request(
                "POST", path, {"model": model, "messages": messages, **(sampling or {})}, idempotent=False
            ).data
            message = answer["choices"][0]["message"]
            content = str(message.get("content") or "")
            trajectory.model_id = str(answer.get("model") or model)
            messages.append({"role": "assistant", "content": content})
            thought, reply = split_thought(content)
            trajectory.final_response = reply
            step = TrajectoryStep(turn, thought, None, "", time.time())
            trajectory.steps.append(step)
            follow = task.follow_up(trajectory) if turn + 1 < task.max_turns else None
            if follow is None:
                break
            step.observation = follow
            messages.append({"role": "user", "content": follow})
        return trajectory
