"""TrajectoryContributor and TaskSchema against a loopback stand-in for the task and proxy routes
(the real API, the simulator and the openai client: test/e2e/inference-proxy.test.ts)."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

import pytest

from atropos_edge import (
    ConflictError,
    ServerError,
    TaskSchema,
    ToolCall,
    Trajectory,
    TrajectoryContributor,
    TrajectoryStep,
)
from atropos_edge.http import HttpTransport

from conftest import Answer, FakeApi, Seen


class SecurityAnalysisTask(TaskSchema):
    """Find the vulnerabilities
    in a snippet."""

    task_type = "security_analysis"
    difficulty = 3
    required_tools: ClassVar[list[str]] = ["code_exec", "web_search", "file_read"]
    known: ClassVar[list[str]] = ["CVE-1", "CVE-2"]

    def __init__(self) -> None:
        self.made = 0

    def generate_task(self) -> str:
        self.made += 1
        return f"Analyze snippet {self.made}"

    def evaluate(self, trajectory: Trajectory) -> float:
        response = trajectory.final_response or ""
        return sum(1.0 / len(self.known) for cve in self.known if cve in response)


class ProxyStandIn:
    """Sessions as the API keeps them: opened for a task, one node per chat, finished once."""

    def __init__(self, api: FakeApi) -> None:
        self.sessions: dict[str, dict[str, Any]] = {}
        self.chats: list[dict[str, Any]] = []
        self.replies = ["<think>look for injections</think>found CVE-1", "and CVE-2"]
        self.next_group = 100
        api.route = self.answer

    def answer(self, seen: Seen) -> Answer:
        if seen.path == "/v1/runs/r1/tasks" and seen.method == "POST":
            return Answer(200, {"task": {"name": seen.body["name"]}, "status": "created"})
        m = re.fullmatch(r"/v1/runs/r1/(?:atropos-)?proxy/([\w.-]+)(/.*)?", seen.path)
        assert m, seen.path
        sid, rest = m.group(1), m.group(2) or ""
        if seen.method == "DELETE":
            return Answer(200, {"status": "deleted", "uuid": self.sessions.pop(sid) and sid})
        if rest == "/open":
            s = self.sessions.setdefault(sid, {"task": seen.body["task"], "nodes": [], "group": None})
            status = "finished" if s["group"] is not None else "open"
            return Answer(200, {"session": sid, "task": s["task"], "status": status, "group_id": s["group"]})
        s = self.sessions[sid]
        if rest == "/state":
            return Answer(200, {"nodes": s["nodes"], "status": "open"})
        if rest == "/v1/chat/completions":
            self.chats.append(seen.body)
            turn = sum(1 for m in seen.body["messages"] if m["role"] == "assistant")
            s["nodes"][:1] = [{"masked_tokens": [-100, -100] + [7] * (turn + 1)}]
            return Answer(200, {"model": "sim", "choices": [{"message": {"content": self.replies[turn]}}]})
        if rest == "/finish":
            if s["group"] is None:
                s["group"], self.next_group = self.next_group, self.next_group + 1
                s["finish"] = seen.body
                return Answer(200, {"group_id": s["group"], "status": "received", "sequences": 1})
            return Answer(200, {"group_id": s["group"], "status": "duplicate", "sequences": 1})
        raise AssertionError(seen.path)


def contributor(api: FakeApi) -> TrajectoryContributor:
    return TrajectoryContributor("aet_secret", base_url=api.url, run="r1", sleep=lambda _: None)


def test_a_task_class_registers_the_books_attributes_and_its_docstring() -> None:
    assert SecurityAnalysisTask.registration() == {
        "name": "security_analysis",
        "difficulty": 3,
        "required_tools": ["code_exec", "web_search", "file_read"],
        "description": "Find the vulnerabilities in a snippet.",
    }

    class Unnamed(TaskSchema):
        task_type = "has spaces"

    with pytest.raises(ValueError, match="task_type"):
        Unnamed.registration()
    with pytest.raises(NotImplementedError, match="generate_task"):
        Unnamed().generate_task()


def test_the_books_dataclasses_have_its_fields_and_defaults() -> None:
    step = TrajectoryStep(0, None, ToolCall("code_exec", {"code": "1"}, "1"), "ok", 1.0)
    t = Trajectory("t1", "desc", "m", steps=[step])
    assert (step.tool_call and (step.tool_call.error, step.tool_call.latency_ms)) == (None, 0)
    assert (t.final_response, t.success, t.judge_score, t.token_count, t.wall_time_seconds) == (
        None,
        None,
        None,
        0,
        0.0,
    )


def test_base_url_comes_from_the_environment_then_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATROPOS_EDGE_URL", "http://api.example:9/")
    assert TrajectoryContributor(None).base_url == "http://api.example:9"
    monkeypatch.delenv("ATROPOS_EDGE_URL")
    assert TrajectoryContributor(None).base_url == "http://127.0.0.1:8787"
    assert TrajectoryContributor(None, base_url="http://x:1").base_url == "http://x:1"


def test_register_task_posts_the_registration_with_the_token(api: FakeApi) -> None:
    ProxyStandIn(api)
    answer = contributor(api).register_task(SecurityAnalysisTask)
    assert answer["status"] == "created"
    assert api.seen[0].body["required_tools"] == ["code_exec", "web_search", "file_read"]
    assert api.seen[0].headers["authorization"] == "Bearer aet_secret"


def test_a_taken_task_name_is_a_conflict(api: FakeApi) -> None:
    api.script = [Answer(409, {"error": {"code": "CONFLICT", "message": "registered by another token"}})]
    with pytest.raises(ConflictError, match="another token"):
        contributor(api).register_task(SecurityAnalysisTask())


def test_each_trajectory_runs_its_agent_in_its_own_session_and_finishes_with_the_score(api: FakeApi) -> None:
    proxy = ProxyStandIn(api)
    c = contributor(api)
    seen_urls: list[str] = []

    def agent(text: str, base_url: str) -> Trajectory:
        seen_urls.append(base_url)
        http = HttpTransport(base_url)
        reply = http.request("POST", "/chat/completions", {"messages": [{"role": "user", "content": text}]})
        content = reply.data["choices"][0]["message"]["content"]
        return Trajectory("security_analysis", text, "sim", final_response=content, success=True)

    out = c.submit_trajectories(task=SecurityAnalysisTask(), n_trajectories=2, agent=agent, key="k1")
    assert [(o.session, o.group_id, o.status, o.score) for o in out] == [
        ("k1-0", 100, "received", 0.5),
        ("k1-1", 101, "received", 0.5),
    ]
    assert seen_urls == [f"{api.url}/v1/runs/r1/proxy/k1-0/v1", f"{api.url}/v1/runs/r1/proxy/k1-1/v1"]
    assert proxy.sessions["k1-0"]["task"] == "security_analysis"
    assert proxy.sessions["k1-0"]["finish"] == {"scores": [0.5], "success": [True], "judge_scores": [0.5]}
    first = out[0].trajectory
    assert first is not None
    assert (first.task_description, first.judge_score, first.token_count) == ("Analyze snippet 1", 0.5, 1)
    assert first.wall_time_seconds > 0


def test_a_retry_with_the_same_key_returns_what_was_stored_and_redoes_only_the_rest(api: FakeApi) -> None:
    proxy = ProxyStandIn(api)
    c = contributor(api)
    task = SecurityAnalysisTask()
    done = c.submit_trajectories(task=task, n_trajectories=1, key="k2")
    # Trajectory k2-1 crashed midway: its session holds a completion but was never finished.
    c.open_session("security_analysis", "k2-1")
    proxy.sessions["k2-1"]["nodes"] = [{"masked_tokens": [-100, 5]}]
    calls_before = task.made
    again = c.submit_trajectories(task=task, n_trajectories=2, key="k2")
    assert [(o.session, o.group_id, o.status) for o in again] == [
        ("k2-0", done[0].group_id, "duplicate"),
        ("k2-1", done[0].group_id + 1, "received"),
    ]
    assert again[0].trajectory is None
    assert task.made == calls_before + 1  # the stored trajectory's agent was not run again
    assert [s.method for s in api.seen if s.path == "/v1/runs/r1/atropos-proxy/k2-1"] == ["DELETE"]
    with pytest.raises(ValueError, match="key"):
        c.submit_trajectories(task=task, n_trajectories=1, key="no spaces")


def test_the_built_in_agent_chats_until_follow_up_stops_and_keeps_thoughts_apart(api: FakeApi) -> None:
    proxy = ProxyStandIn(api)

    class TwoTurns(SecurityAnalysisTask):
        system_prompt = "You audit code."

        def follow_up(self, trajectory: Trajectory) -> str | None:
            return "Anything else?" if len(trajectory.steps) == 1 else None

    [out] = contributor(api).submit_trajectories(
        task=TwoTurns(), n_trajectories=1, key="k3", model="policy", sampling={"temperature": 1.0}
    )
    assert out.score == 0.5  # evaluate saw only the final reply ("and CVE-2")
    t = out.trajectory
    assert t is not None
    assert [(s.thought, s.observation) for s in t.steps] == [
        ("look for injections", "Anything else?"),
        (None, ""),
    ]
    assert (t.final_response, t.model_id) == ("and CVE-2", "sim")
    assert [m["role"] for m in proxy.chats[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert proxy.chats[1]["messages"][2]["content"] == proxy.replies[0]  # sent back verbatim
    assert proxy.chats[0]["temperature"] == 1.0


def test_a_failed_completion_is_not_repeated(api: FakeApi) -> None:
    proxy = ProxyStandIn(api)
    route = api.route
    assert route is not None

    def failing(seen: Seen) -> Answer:
        if seen.path.endswith("/chat/completions"):
            proxy.chats.append(seen.body)
            return Answer(503, {"error": {"code": "UNAVAILABLE", "message": "servers failed"}})
        return route(seen)

    api.route = failing
    with pytest.raises(ServerError):
        contributor(api).submit_trajectories(task=SecurityAnalysisTask(), n_trajectories=1, key="k4")
    assert len(proxy.chats) == 1


def test_an_agent_that_never_used_its_session_submits_nothing(api: FakeApi) -> None:
    ProxyStandIn(api)

    def offline(text: str, base_url: str) -> Trajectory:
        return Trajectory("t", text, "m", final_response="CVE-1")

    with pytest.raises(ValueError, match="no completion"):
        contributor(api).submit_trajectories(task=SecurityAnalysisTask(), n_trajectories=1, agent=offline)
    assert not [s for s in api.seen if s.path.endswith("/finish")]
    assert json.dumps([s.path for s in api.seen]).count("/open") == 1
