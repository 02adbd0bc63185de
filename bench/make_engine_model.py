"""A Qwen2.5-0.5B-shaped checkpoint with random weights, for `npm run bench:engine` without a
download (speed and memory do not depend on the weights' values), written as GGUF.

    python bench/make_engine_model.py TOKENIZER_DIR OUT_DIR [f32|f16]   # -> OUT_DIR/model.gguf
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, Qwen2Config

sys.path.insert(
    0, str(Path(__file__).resolve().parents[1] / "src" / "engine" / "python")
)
from hf_to_gguf import convert


def main(tokenizer_dir: str, out_dir: str, dtype: str = "f16") -> None:
    out = Path(out_dir)
    config = Qwen2Config(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        rope_theta=1000000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(out / "hf", safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(tokenizer_dir) / name, out / "hf" / name)
    result = convert(out / "hf", out / "model.gguf", dtype)
    print(result.path)


if __name__ == "__main__":
    main(*sys.argv[1:])
