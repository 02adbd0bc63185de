"""The engine tests' model and their independent reference (PyTorch, no llama.cpp).

    python engine_reference.py make OUT_DIR TOKENIZER_DIR ARCH [SEED]  # random tiny model, as HF
    python engine_reference.py score HF_DIR < sequences.json      # log p(token_i | tokens_<i)

`make` builds the model from a config (random init, seeded; no download) and copies the
tokenizer files beside it. `score` reads `[[ids...], ...]` and writes, per sequence, the logprob
of every token after the first under a float32 forward pass.
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
    vocab = json.loads((Path(tokenizer_dir) / "tokenizer.json").read_text(encoding="utf-8"))
    size = len(vocab["model"]["vocab"]) + len(
        [t for t in vocab.get("added_tokens", []) if t["id"] >= len(vocab["model"]["vocab"])]
    )
    common = dict(
        vocab_size=size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        rms_norm_eps=1e-6,
        tie_word_embeddings=arch != "llama",
    )
    config = {"qwen2": Qwen2Config, "qwen3": Qwen3Config, "llama": LlamaConfig}[arch](**common)
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


def score(hf_dir: str) -> None:
    sequences: list[list[int]] = json.load(sys.stdin)
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32)
    model.eval()
    results: list[list[float]] = []
    with torch.no_grad():
        for ids in sequences:
            logits = model(torch.tensor([ids])).logits[0].to(torch.float64)
            logprobs = torch.log_softmax(logits, dim=-1)
            results.append([float(logprobs[i - 1, ids[i]]) for i in range(1, len(ids))])
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    elif command == "score":
        score(sys.argv[2])
    else:
        raise SystemExit(f"unknown command {command}")
