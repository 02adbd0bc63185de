"""The engine tests' model and their independent reference (PyTorch, no llama.cpp).

    python engine_reference.py serve   # one JSON request per line in, one answer per line out:
      {"op": "make", "out": DIR, "tokenizer": DIR, "arch": "qwen2", "seed": 0}  -> random tiny model
      {"op": "train", "model": DIR, "out": DIR, "steps": 60}                   -> trained copy
      {"op": "convert", "model": DIR, "out": FILE}                             -> GGUF (f32)
      {"op": "score", "model": DIR, "sequences": [[ids...], ...]}              -> logprobs

`make` builds the model from a config (random init, seeded; no download) and copies the
tokenizer files beside it; `convert` is src/engine/python/hf_to_gguf.py's; `score` answers, per
sequence, the logprob of every token after the first under a float32 forward pass. One process
serves them all: torch and transformers are imported once.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config


def make(out_dir: str, tokenizer_dir: str, arch: str, seed: int = 0) -> None:
    out = Path(out_dir)
    vocab = json.loads(
        (Path(tokenizer_dir) / "tokenizer.json").read_text(encoding="utf-8")
    )
    size = len(vocab["model"]["vocab"]) + len(
        [
            t
            for t in vocab.get("added_tokens", [])
            if t["id"] >= len(vocab["model"]["vocab"])
        ]
    )
    common = {
        "vocab_size": size,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": arch != "llama",
    }
    config = {"qwen2": Qwen2Config, "qwen3": Qwen3Config, "llama": LlamaConfig}[arch](
        **common
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    # Larger than the 0.02 default init: a nearly uniform model would hide mistakes in the
    # conversion (swapped Q/K rows give the same logprobs when attention is flat).
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() > 1:
                param.normal_(0.0, 0.3)
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(tokenizer_dir) / name, out / name)


def train(src: str, out: str, steps: int) -> None:
    """A briefly trained model: Adam on fixed random sequences until it is far from uniform."""
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    model.train()
    generator = torch.Generator().manual_seed(1)
    vocab = model.config.vocab_size
    data = torch.randint(3, vocab, (8, 48), generator=generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        loss = model(data, labels=data).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(src) / name, Path(out) / name)


def score(model: torch.nn.Module, sequences: list[list[int]]) -> list[list[float]]:
    results: list[list[float]] = []
    with torch.no_grad():
        for ids in sequences:
            logits = model(torch.tensor([ids])).logits[0].to(torch.float64)
            logprobs = torch.log_softmax(logits, dim=-1)
            results.append([float(logprobs[i - 1, ids[i]]) for i in range(1, len(ids))])
    return results


def serve() -> None:
    sys.path.insert(
        0, str(Path(__file__).resolve().parents[3] / "src" / "engine" / "python")
    )
    from hf_to_gguf import convert

    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        answer: object
        if op == "make":
            make(
                request["out"],
                request["tokenizer"],
                request["arch"],
                int(request.get("seed", 0)),
            )
            answer = "ok"
        elif op == "train":
            train(request["model"], request["out"], int(request["steps"]))
            answer = "ok"
        elif op == "convert":
            answer = str(convert(request["model"], request["out"]).path)
        elif op == "score":
            # Loaded per request: a test may rewrite a checkpoint between two calls.
            model = AutoModelForCausalLM.from_pretrained(
                request["model"], dtype=torch.float32
            )
            model.eval()
            answer = score(model, request["sequences"])
        else:
            raise SystemExit(f"unknown op {op}")
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        raise SystemExit("usage: engine_reference.py serve")
    serve()
