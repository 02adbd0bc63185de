"""An agent written with the official `openai` client, run through atropos-edge's inference proxy.

It solves a tool task (calculator, then kv_set, then the answer) with Hermes-style tool calls,
exactly as it would against any OpenAI-compatible server: only the base URL points at the proxy
session. With --stream it streams every answer (`stream=True`, usage included) and assembles the
message from the deltas, as streaming agent frameworks do; the tracked tokens are the same. At the end it scores itself and finishes the session, which submits the conversation to
the run as one scored group (exact token ids, masks and logprobs). It prints a JSON transcript.

    PY=$(examples/python/install_openai.sh)
    $PY examples/python/proxy_agent.py --api http://127.0.0.1:8787 --run default --session agent-1
"""

import argparse
import ast
import json
import operator
import os
import urllib.request

from openai import OpenAI

SYSTEM = (
    "You are an agent that solves tasks with tools. Call a tool with "
    '<tool_call>{"name": ..., "arguments": {...}}</tool_call>. When done, reply with the final '
    "result inside <answer></answer> tags."
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluates an arithmetic expression.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "kv_set",
            "description": "Stores a value under a key.",
            "parameters": {
                "type": "object",
                "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
                "required": ["key", "value"],
            },
        },
    },
]

OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def calculate(expression):
    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](value(node.left), value(node.right))
        raise ValueError("only + - * on numbers")

    result = value(ast.parse(expression, mode="eval").body)
    return str(int(result)) if float(result).is_integer() else str(result)


def streamed_message(stream):
    """The assistant message (as `model_dump(exclude_none=True)` gives it) and usage of a stream."""
    content = ""
    calls = {}
    usage = None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
        for choice in chunk.choices:
            delta = choice.delta
            content += delta.content or ""
            for call in delta.tool_calls or []:
                entry = calls.setdefault(
                    call.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["function"]["name"] += call.function.name or ""
                    entry["function"]["arguments"] += call.function.arguments or ""
    message = {"role": "assistant"}
    if content:
        message["content"] = content
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return message, usage


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--api", required=True)
    parser.add_argument("--run", default="default")
    parser.add_argument("--session", required=True)
    parser.add_argument("--expression", default="(12 + 30) * 2")
    parser.add_argument("--key", default="total")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()

    token = os.environ.get("ATROPOS_EDGE_TOKEN", "none")
    session_url = f"{args.api}/v1/runs/{args.run}/proxy/{args.session}"
    client = OpenAI(base_url=f"{session_url}/v1", api_key=token)

    task = (
        f"Tool task: compute {args.expression} with the calculator tool, store the result under "
        f'the key "{args.key}" with kv_set, then reply with the result inside <answer></answer> tags.'
    )
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    store = {}
    answer = None
    usages = []
    for turn in range(args.max_turns):
        request = {
            "model": "policy",
            "messages": messages,
            "tools": TOOLS,
            "temperature": 1.0,
            "max_tokens": 256,
            "seed": args.seed + turn,
        }
        if args.stream:
            stream = client.chat.completions.create(
                **request, stream=True, stream_options={"include_usage": True}
            )
            message, usage = streamed_message(stream)
            usages.append(usage)
        else:
            message = client.chat.completions.create(**request).choices[0].message
            message = message.model_dump(exclude_none=True)
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            text = message.get("content") or ""
            if "<answer>" in text:
                answer = text.split("<answer>")[1].split("</answer>")[0].strip()
            break
        for call in calls:
            params = json.loads(call["function"]["arguments"])
            if call["function"]["name"] == "calculator":
                observation = f"calculator result: {calculate(params['expression'])}"
            else:
                store[str(params["key"])] = str(params["value"])
                observation = "kv_set result: ok"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": observation})

    correct = answer == calculate(args.expression)
    score = (1.0 if correct else 0.0) + (0.5 if store.get(args.key) == answer else 0.0)
    request = urllib.request.Request(
        f"{session_url}/finish",
        data=json.dumps({"scores": [score], "success": [correct]}).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request) as res:
        finished = json.load(res)
    transcript = {"messages": messages, "tools": TOOLS, "finish": finished}
    if args.stream:
        transcript["usages"] = usages
    print(json.dumps(transcript))


if __name__ == "__main__":
    main()
