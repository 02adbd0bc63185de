"""Golden tokenizer fixtures from the reference implementations.

Ids come from the Rust `tokenizers` package (Tokenizer.from_file on the bundled tokenizer.json),
rendered chat templates from `transformers` (apply_chat_template on the bundled
tokenizer_config.json). The TypeScript test (test/unit/inference/tokenizer-fixtures.test.ts)
compares the project's tokenizers against these committed files; CI does not need Python.

    python3 -m venv /tmp/fxvenv
    /tmp/fxvenv/bin/pip install tokenizers==0.23.2 transformers==5.17.0 jinja2
    /tmp/fxvenv/bin/python scripts/tokenizer-fixtures.py [family ...]

Chat cases per family: plain turns, `<think>` in assistant content and `reasoning_content` (each
alone and in an earlier assistant turn), a tools list and assistant `tool_calls` with `tool`
results in whichever forms the template renders (probed on the reference, recorded as
`template_support`), and the known difference for templates that ignore `tools`.

Reads the plain files that `atropos-edge tokenizers --json` materialises, so run that first.
"""

import json
import random
import subprocess
import sys
from pathlib import Path

import tokenizers
import transformers
from tokenizers import Tokenizer
from transformers import AutoTokenizer

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "test" / "fixtures" / "tokenizers"

BASE_TEXTS = [
    "Hello, world!",
    "hello world",
    " leading space",
    "trailing space ",
    "  two leading spaces",
    "tabs\tand\t\ttabs",
    "line\nbreak",
    "many\n\n\n\nnewlines",
    "\n",
    " ",
    "    ",
    "         nine spaces",
    "\r\nwindows\r\nlines\r\n",
    "mixed \t \n \t whitespace",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll see they've gone; we'd've known, it's HE'LL and SHE'D.",
    "ALL CAPS SENTENCE WITH NUMBERS 12345",
    "camelCaseIdentifier snake_case_identifier kebab-case-identifier",
    "1234567890",
    "3.14159265358979 2.71828 -42 +7 1e-10 0x1F",
    "Prices: $1,234.56, €99, £5, ¥1000.",
    "2024-05-17T12:34:56Z",
    "def f(x):\n    return x * 2\n",
    "for (let i = 0; i < n; i++) {\n\tsum += a[i];\n}",
    "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }",
    "SELECT id, name FROM users WHERE age > 21 ORDER BY name;",
    "<div class=\"x\">Hello &amp; goodbye</div>",
    "{\"key\": [1, 2, {\"nested\": null}], \"ok\": true}",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
    "    indented code\n        more indented\n",
    "x = [i**2 for i in range(10) if i % 2 == 0]",
    "https://example.com/path?query=1&other=two#frag",
    "user@example.org",
    "数学很有趣。",
    "日本語のテキストとカタカナ、ひらがな。",
    "한국어 문장입니다.",
    "中文、English、日本語 mixed",
    "Привет, мир! Как дела?",
    "Ελληνικά γράμματα",
    "مرحبا بالعالم",
    "שלום עולם",
    "हिन्दी पाठ",
    "ภาษาไทย",
    "Tiếng Việt có dấu",
    "café naïve résumé Ångström",
    "cafe\u0301 (decomposed e-acute)",
    "ﬁ ligature and ＦＵＬＬＷＩＤＴＨ",
    "emoji 🙂😀🎉🚀",
    "family 👨‍👩‍👧‍👦 and flags 🇯🇵🇺🇸",
    "skin tones 👍🏽👍🏿",
    "math ∑∫∂√∞ ≠ ≤ ≥ ± × ÷",
    "arrows → ← ↑ ↓ ⇒",
    "box ┌─┐│└┘",
    "zero\u200bwidth\u200djoiner",
    "nbsp\u00a0here",
    "\u3000ideographic space",
    "The answer is \\boxed{42}.",
    "$$\\frac{a}{b} + \\sqrt{x^2 + y^2}$$",
    "<think>\nLet me think step by step.\n</think>\n\nThe answer is 4.",
    "<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"x\": 1}}\n</tool_call>",
    "a" * 50,
    "ab" * 40,
    "!!!???...,,,;;;",
    "----------",
    "==========",
    "__init__.py",
    "''' triple quotes \"\"\"",
    "`backticks` and ```fenced```",
    "~!@#$%^&*()_+{}|:\"<>?",
    "Mr. O'Neil's dog's bone",
    "don't DON'T Don't",
    "12th 1st 2nd 3rd",
    "A.B.C. U.S.A.",
    "e.g., i.e., etc.",
    "",
]

CJK_PIECES = ["你好", "世界", "学习", "東京", "こんにちは", "カタカナ", "漢字", "한글"]
EMOJI_PIECES = ["🙂", "🎉", "👩‍💻", "🇫🇷", "❤️", "🤖", "⭐"]
WORDS = ["alpha", "Beta", "GAMMA", "delta", "epsilon", "token", "ize", "r", "x", "42", "0.5"]
PUNCT = [",", ".", "!", "?", ":", ";", "(", ")", "[", "]", "{", "}", "'", '"', "-", "_", "/"]
SPACES = [" ", "  ", "\t", "\n", "\n\n", " \n", "   "]


def generated_texts(rng: random.Random, specials: list[str], count: int) -> list[str]:
    pools = [CJK_PIECES, EMOJI_PIECES, WORDS, WORDS, PUNCT, SPACES, specials or WORDS]
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 12)):
            parts.append(rng.choice(rng.choice(pools)))
            if rng.random() < 0.4:
                parts.append(rng.choice(SPACES))
        texts.append("".join(parts))
    return texts


def special_texts(specials: list[str]) -> list[str]:
    texts = []
    for token in specials[:8]:
        texts += [token, f"before{token}after", f" {token} ", f"{token}\n{token}", f"x {token}y"]
    return texts


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name"}},
                "required": ["city"],
            },
        },
    }
]


HERMES_TOOL_PROMPT = (
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    "{signatures}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}}\n</tool_call>"
)


def with_hermes_tool_prompt(messages: list[dict], tools: list[dict]) -> list[dict]:
    """What our renderer does for templates that ignore `tools` (chat-template.ts): the tool
    signatures go into the system message. Rendered by the reference to check that path exactly."""
    signatures = "\n".join(json.dumps(tool, ensure_ascii=False, separators=(",", ":")) for tool in tools)
    instructions = HERMES_TOOL_PROMPT.format(signatures=signatures)
    if messages and messages[0]["role"] == "system":
        first = messages[0]
        existing = first["content"] if isinstance(first["content"], str) else ""
        return [{**first, "content": f"{existing}\n\n{instructions}"}, *messages[1:]]
    return [{"role": "system", "content": instructions}, *messages]


SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "What is 2+2? Answer briefly. 数学 🙂"}
WEATHER = {"role": "user", "content": "Weather in Paris?"}
REASONING = "The user asks for 2+2.\nAdding gives 4."


def tool_call(call_id: str, city: str, form: str) -> dict:
    # Hugging Face's convention is a dict; DeepSeek V3's template concatenates a JSON string.
    arguments = {"city": city} if form == "dict" else json.dumps({"city": city})
    return {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}


def call_turn(calls: list[dict], form: str, **extra) -> dict:
    # DeepSeek V3 renders tool calls only for an assistant turn whose content is None.
    return {"role": "assistant", "content": None if form == "string" else "", "tool_calls": calls, **extra}


def tool_result(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def round_trip(form: str) -> list[dict]:
    return [WEATHER, call_turn([tool_call("call0000a", "Paris", form)], form), tool_result("call0000a", "{\"temp\": 21}")]


def reasoning_cases() -> list[dict]:
    """`<think>` as content and as `reasoning_content`, alone and in an earlier assistant turn."""
    think_answer = {"role": "assistant", "content": f"<think>\n{REASONING}\n</think>\n\n4"}
    reasoned = {"role": "assistant", "content": "4", "reasoning_content": REASONING}
    follow_up = {"role": "user", "content": "Thanks!  Now   spaces\n\nand newlines."}
    return [
        {"kind": "think_content", "messages": [USER, think_answer], "add_generation_prompt": False},
        {"kind": "think_content", "messages": [SYSTEM, USER, think_answer, follow_up]},
        {"kind": "reasoning_content", "messages": [USER, reasoned], "add_generation_prompt": False},
        {"kind": "reasoning_content", "messages": [SYSTEM, USER, reasoned, follow_up]},
        {
            "kind": "reasoning_content",
            "messages": [USER, reasoned, follow_up, {**reasoned, "content": "Noted."}],
            "add_generation_prompt": False,
        },
    ]


def tool_cases(support: dict) -> list[dict]:
    cases = []
    form = support["tool_call_arguments"]
    tools = TOOLS if support["tools"] else None
    if support["tools"]:
        cases.append({"kind": "tools", "messages": [WEATHER], "tools": TOOLS})
        cases.append({"kind": "tools", "messages": [SYSTEM, WEATHER], "tools": TOOLS})
    if form:
        trip = round_trip(form)
        answer = {"role": "assistant", "content": "It is 21 °C in Paris."}
        again = {"role": "user", "content": "And in Tokyo?"}
        cases.append({"kind": "tool_calls", "messages": trip, "tools": tools})
        cases.append({"kind": "tool_calls", "messages": [SYSTEM, *trip, answer, again], "tools": tools})
        parallel = [
            WEATHER,
            call_turn([tool_call("call0000a", "Paris", form), tool_call("call0000b", "Tokyo", form)], form),
            tool_result("call0000a", "{\"temp\": 21}"),
            tool_result("call0000b", "{\"temp\": 17}"),
        ]
        cases.append({"kind": "tool_calls", "messages": parallel, "tools": tools})
        if support["reasoning_content"]:
            thinking_call = call_turn([tool_call("call0000a", "Paris", form)], form, reasoning_content="Need the weather tool.")
            cases.append(
                {
                    "kind": "tool_calls",
                    "messages": [WEATHER, thinking_call, tool_result("call0000a", "{\"temp\": 21}")],
                    "tools": tools,
                }
            )
    else:
        # Our renderer still passes the messages through; the template decides what remains.
        cases.append({"kind": "tool_calls_unsupported", "messages": round_trip("dict")})
    if not support["tools"]:
        # The template ignores `tools`: the reference drops them, we add a Hermes system prompt.
        cases.append({"kind": "tools_unsupported", "messages": [WEATHER], "tools": TOOLS})
        cases.append({"kind": "tools_unsupported", "messages": [SYSTEM, WEATHER], "tools": TOOLS})
    return cases


def chat_cases(family: str, support: dict) -> list[dict]:
    cases = [
        {"kind": "plain", "messages": [USER]},
        {"kind": "plain", "messages": [SYSTEM, USER]},
        {"kind": "plain", "messages": [USER], "add_generation_prompt": False},
        {
            "kind": "plain",
            "messages": [SYSTEM, USER, {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3+3?"}],
        },
    ]
    if family == "qwen3":
        cases.append({"kind": "enable_thinking", "messages": [USER], "enable_thinking": False})
        cases.append({"kind": "enable_thinking", "messages": [SYSTEM, USER], "enable_thinking": True})
    return cases + reasoning_cases() + tool_cases(support)


def render(hf, messages: list[dict], tools: list[dict] | None = None, **kwargs) -> str:
    return hf.apply_chat_template(messages, tools=tools, tokenize=False, date_string="26 Jul 2024", **kwargs)


def probe_support(hf) -> dict:
    """What the family's template renders, asked of the reference rather than guessed from its text."""
    support = {"tools": False, "tool_call_arguments": None, "reasoning_content": False}
    try:
        support["tools"] = render(hf, [WEATHER], TOOLS) != render(hf, [WEATHER])
    except Exception:
        pass
    for form in ("dict", "string"):
        try:
            text = render(hf, round_trip(form))
        except Exception:
            continue
        if "get_weather" in text and "temp" in text:
            support["tool_call_arguments"] = form
            break
    probe = {"role": "assistant", "content": "4", "reasoning_content": "PROBE-REASONING"}
    try:
        support["reasoning_content"] = "PROBE-REASONING" in render(hf, [USER, probe])
    except Exception:
        pass
    return support


TINY_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def write_tiny() -> None:
    """A 400-token byte-level BPE with a ChatML template, for loader tests (directory, URL, R2)."""
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tiny = Tokenizer(models.BPE())
    tiny.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tiny.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tiny.train_from_iterator(BASE_TEXTS * 3, trainer)
    directory = OUT / "tiny"
    directory.mkdir(parents=True, exist_ok=True)
    tiny.save(str(directory / "tokenizer.json"))
    config = {"eos_token": "<|im_end|>", "bos_token": None, "chat_template": TINY_TEMPLATE}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    hf = AutoTokenizer.from_pretrained(str(directory))
    messages = [{"role": "user", "content": "Hello, world! 数学 🙂"}]
    rendered = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    golden = {
        "texts": [{"text": t, "ids": tiny.encode(t, add_special_tokens=False).ids} for t in BASE_TEXTS[:20]],
        "chats": [{"messages": messages, "text": rendered, "ids": tiny.encode(rendered).ids}],
    }
    (OUT / "tiny.json").write_text(json.dumps(golden, ensure_ascii=False) + "\n")
    print(f"tiny: {tiny.get_vocab_size()} tokens -> {directory.relative_to(ROOT)}")


def main() -> None:
    write_tiny()
    if sys.argv[1:] == ["tiny"]:
        return
    listing = json.loads(
        subprocess.run(
            ["npx", "tsx", "src/cli/main.ts", "tokenizers", "--json"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    wanted = set(sys.argv[1:])
    OUT.mkdir(parents=True, exist_ok=True)
    for entry in listing:
        family = entry["name"]
        if wanted and family not in wanted:
            continue
        directory = str(Path(entry["tokenizer_json"]).parent)
        rust = Tokenizer.from_file(entry["tokenizer_json"])
        hf = AutoTokenizer.from_pretrained(directory)
        specials = [t.content for t in rust.get_added_tokens_decoder().values() if t.special]
        rng = random.Random(f"fixtures-{family}")
        texts = BASE_TEXTS + special_texts(specials) + generated_texts(rng, specials, 120)
        text_cases = []
        for text in texts:
            ids = rust.encode(text, add_special_tokens=False).ids
            text_cases.append({"text": text, "ids": ids, "decoded": rust.decode(ids, skip_special_tokens=False)})
        # With special tokens (the post-processor's BOS policy). Rust, not transformers: 5.17's
        # LlamaTokenizer swaps DeepSeek V3's pre-tokenizer for Metaspace (different ids).
        with_special = [{"text": t, "ids": rust.encode(t).ids} for t in BASE_TEXTS[:30]]
        support = probe_support(hf)
        chats = []
        for case in chat_cases(family, support):
            kwargs = {"add_generation_prompt": case.pop("add_generation_prompt", True)}
            if "enable_thinking" in case:
                kwargs["enable_thinking"] = case.pop("enable_thinking")
            # Templates that read strftime_now would otherwise render today's date.
            kwargs["date_string"] = "26 Jul 2024"
            if case.get("tools") is None:
                case.pop("tools", None)
            try:
                rendered = hf.apply_chat_template(
                    case["messages"], tools=case.get("tools"), tokenize=False, **kwargs
                )
            except Exception as error:  # the template refuses these messages (raise_exception)
                chats.append({**case, "kwargs": kwargs, "error": str(error)})
                continue
            entry = {**case, "kwargs": kwargs, "text": rendered}
            entry["ids"] = rust.encode(rendered, add_special_tokens=False).ids
            if case["kind"] == "tools_unsupported":
                hermes = hf.apply_chat_template(
                    with_hermes_tool_prompt(case["messages"], case["tools"]), tokenize=False, **kwargs
                )
                entry["ours"] = {"text": hermes, "ids": rust.encode(hermes, add_special_tokens=False).ids}
            chats.append(entry)
        fixture = {
            "family": family,
            "generator": f"tokenizers {tokenizers.__version__}, transformers {transformers.__version__}",
            "template_support": support,
            "texts": text_cases,
            "with_special_tokens": with_special,
            "chats": chats,
        }
        path = OUT / f"{family}.json"
        path.write_text(json.dumps(fixture, ensure_ascii=False) + "\n")
        print(f"{family}: {len(text_cases)} texts, {len(chats)} chats -> {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
