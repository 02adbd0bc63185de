"""The book's contribution flow (10.5.2) against `npm run dev` and the simulator, for
test/e2e/inference-proxy.test.ts: a contributor registers a task, submits trajectories whose agent
is the unmodified `openai` client pointed at its proxy session, retries the call, uses the built-in
agent once, and tries to lease. Prints one JSON object.

    python contributor_agent.py API RUN TOKEN KEY
"""

from __future__ import annotations

import ast
import json
import operator
import sys
import time
from typing import Any, ClassVar

from openai import OpenAI

from atropos_edge import (
    ApiError,
    TaskSchema,
    ToolCall,
    TrainerClient,
    Trajectory,
    TrajectoryContributor,
    TrajectoryStep,
)

SYSTEM = (
    "You are an agent that solves tasks with tools. Call a tool with "
    '<tool_call>{"name": ..., "arguments": {...}}</tool_call>. When done, reply with the final '
    "result inside <answer></answer> tags."
)
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in params}},
        },
    }
    for name, params in (("calculator", ["expression"]), ("kv_set", ["key", "value"]))
]
OPERATORS: dict[type, Any] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def calculate(expression: str) -> str:
    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](value(node.left), value(node.right))
        raise ValueError("only + - * on numbers")

    return str(value(ast.parse(expression, mode="eval").body))


class ToolMathTask(TaskSchema):
    """Compute with the calculator, store the result with kv_set, answer in <answer> tags."""

    task_type = "tool_math"
    difficulty = 2
    required_tools: ClassVar[list[str]] = ["calculator", "kv_set"]
    system_prompt = SYSTEM
    max_turns = 1
    expressions: ClassVar[list[str]] = ["(12 + 30) * 2", "7 * 6", "5 + 4"]

    def __init__(self) -> None:
        self.made = 0

    def generate_task(self) -> str:
        expression = self.expressions[self.made % len(self.expressions)]
        self.made += 1
        return (
            f"Tool task: compute {expression} with the calculator tool, store the result under "
            'the key "memo" with kv_set, then reply with the result inside <answer></answer> tags.'
        )

    def evaluate(self, trajectory: Trajectory) -> float:
        expression = trajectory.task_description.split("compute ")[1].split(" with")[0]
        answer = (trajectory.final_response or "").split("<answer>")[-1].split("</answer>")[0].strip()
        used = [s.tool_call.tool_name for s in trajectory.steps if s.tool_call]
        return (1.0 if answer == calculate(expression) else 0.0) + 0.25 * len(used)


def main() -> None:
    api, run, token, key = sys.argv[1:5]
    contributor = TrajectoryContributor(api_key=token, base_url=api, run=run)
    transcripts: list[dict[str, Any]] = []

    def agent(task_text: str, openai_base_url: str) -> Trajectory:
        """An ordinary openai-client agent; only its base URL is the proxy session's."""
        client = OpenAI(base_url=openai_base_url, api_key=token)
        seed = 11 + 10 * len(transcripts)
        messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task_text}]
        trajectory = Trajectory(task_id="tool_math", task_description=task_text, model_id="policy")
        for turn in range(4):
            response = client.chat.completions.create(
                model="policy",
                messages=messages,
                tools=TOOLS,
                temperature=1.0,
                max_tokens=256,
                seed=seed + turn,
            )
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                trajectory.final_response = message.content
                break
            for call in message.tool_calls:
                params = json.loads(call.function.arguments)  # type: ignore[union-attr]
                name = call.function.name  # type: ignore[union-attr]
                result = calculate(params["expression"]) if name == "calculator" else "ok"
                observation = f"{name} result: {result}"
                step = TrajectoryStep(
                    len(trajectory.steps), None, ToolCall(name, params, result), observation, time.time()
                )
                trajectory.steps.append(step)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": observation})
        transcripts.append({"url": openai_base_url, "seed": seed, "messages": messages, "tools": TOOLS})
        return trajectory

    registered = [contributor.register_task(ToolMathTask)["status"] for _ in range(2)]
    task = ToolMathTask()
    first = contributor.submit_trajectories(task=task, n_trajectories=2, agent=agent, key=key)
    again = contributor.submit_trajectories(task=task, n_trajectories=2, agent=agent, key=key)
    built_in = contributor.submit_trajectories(task=task, n_trajectories=1, key=f"{key}-chat")
    try:
        TrainerClient(api, token, run).lease()
        lease: Any = "leased"
    except ApiError as e:
        lease = {"status": e.status, "message": e.message}

    def shown(c: Any) -> dict[str, Any]:
        return {"session": c.session, "group_id": c.group_id, "status": c.status, "score": c.score}

    print(
        json.dumps(
            {
                "registered": registered,
                "first": [shown(c) for c in first],
                "again": [shown(c) for c in again],
                "built_in": [shown(c) for c in built_in],
                "transcripts": transcripts,
                "agent_calls": len(transcripts),
                "lease": lease,
                "tasks": contributor.tasks(),
            }
        )
    )


if __name__ == "__main__":
    main()
