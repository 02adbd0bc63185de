"""Hugging Face checkpoint -> GGUF (f32 or f16), for the llama.cpp engine (`atropos-edge engine`).

llama.cpp's own convert_hf_to_gguf.py is not on PyPI; the `gguf` package gives the writer and the
tensor-name maps, and this file does the rest for the architectures it names (ARCHITECTURES).

    python src/engine/python/hf_to_gguf.py HF_DIR OUT.gguf [--dtype f32|f16]
    # or from a trainer, after save_pretrained(HF_DIR):
    sys.path.insert(0, "src/engine/python"); from hf_to_gguf import convert; convert(HF_DIR, OUT)

Tokenizers: byte-level BPE tokenizer.json files (Qwen2/Qwen3, Llama 3, GPT-2 style). The file is
written to a temporary name and renamed, so a server reloading from OUT never reads half a file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import torch
from safetensors import safe_open

# HF architecture -> (llama.cpp arch, whether Q/K rows need llama.cpp's rotary permutation).
# Qwen uses NeoX-style RoPE in llama.cpp (no permutation); Llama's GGUF expects interleaved rows.
ARCHITECTURES: dict[str, tuple[gguf.MODEL_ARCH, bool]] = {
    "Qwen2ForCausalLM": (gguf.MODEL_ARCH.QWEN2, False),
    "Qwen3ForCausalLM": (gguf.MODEL_ARCH.QWEN3, False),
    "LlamaForCausalLM": (gguf.MODEL_ARCH.LLAMA, True),
    "MistralForCausalLM": (gguf.MODEL_ARCH.LLAMA, True),
}

# llama.cpp's pre-tokenizer names, told apart by the split regex of tokenizer.json.
QWEN2_DIGITS = r"\p{N}| ?[^\s\p{L}\p{N}]+"
LLAMA3_DIGITS = r"\p{N}{1,3}"


class ConvertError(Exception):
    """A checkpoint this writer cannot convert; the message says what to change."""


@dataclass
class Result:
    path: Path
    arch: str
    vocab_size: int
    tensors: int


def _read_json(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def _tensors(hf_dir: Path) -> dict[str, torch.Tensor]:
    files = sorted(hf_dir.glob("*.safetensors"))
    if files:
        out: dict[str, torch.Tensor] = {}
        for file in files:
            with safe_open(str(file), framework="pt") as f:
                for name in f.keys():  # noqa: SIM118 (safe_open has no __iter__)
                    out[name] = f.get_tensor(name)
        return out
    bins = sorted(hf_dir.glob("pytorch_model*.bin"))
    if bins:
        out = {}
        for file in bins:
            out.update(torch.load(file, map_location="cpu", weights_only=True))
        return out
    raise ConvertError(f"{hf_dir}: no *.safetensors or pytorch_model*.bin weights")


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's Q/K row order for Llama-style (non-NeoX) rotary embeddings."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def _rope_theta(config: dict[str, Any]) -> float:
    params = config.get("rope_parameters") or {}
    return float(config.get("rope_theta") or params.get("rope_theta") or 10000.0)


def _rope_scaling(config: dict[str, Any]) -> dict[str, Any]:
    scaling = config.get("rope_scaling") or config.get("rope_parameters") or {}
    return scaling if isinstance(scaling, dict) else {}


def _llama3_rope_factors(config: dict[str, Any], head_dim: int) -> np.ndarray | None:
    """Llama 3.1+ frequency factors, as llama.cpp's converter writes them (rope_freqs.weight)."""
    scaling = _rope_scaling(config)
    if scaling.get("rope_type", scaling.get("type")) != "llama3":
        return None
    base = _rope_theta(config)
    factor = float(scaling.get("factor", 8.0))
    low = float(scaling.get("low_freq_factor", 1.0))
    high = float(scaling.get("high_freq_factor", 4.0))
    old_len = float(scaling.get("original_max_position_embeddings", 8192))
    factors = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi * base ** (i / head_dim)
        if wavelen < old_len / high:
            factors.append(1.0)
        elif wavelen > old_len / low:
            factors.append(factor)
        else:
            smooth = (old_len / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def _pre_tokenizer(tokenizer: dict[str, Any]) -> str:
    text = json.dumps(tokenizer.get("pre_tokenizer"))
    pattern = json.loads(text) if text != "null" else None
    regexes = _find_regexes(pattern)
    joined = "\n".join(regexes)
    if LLAMA3_DIGITS in joined:
        return "llama-bpe"
    if QWEN2_DIGITS in joined:
        return "qwen2"
    if not regexes and '"ByteLevel"' in text and '"use_regex": true' in text:
        return "gpt-2"
    raise ConvertError(
        "unknown pre-tokenizer (tokenizer.json pre_tokenizer): this writer knows Qwen2/Qwen3, "
        "Llama 3 and GPT-2 byte-level BPE; pass pre='…' (a llama.cpp pre-tokenizer name) to force one"
    )


def _find_regexes(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["Regex"]] if isinstance(node.get("Regex"), str) else []
        for value in node.values():
            found += _find_regexes(value)
        return found
    if isinstance(node, list):
        return [r for item in node for r in _find_regexes(item)]
    return []


def _chat_template(hf_dir: Path, tokenizer_config: dict[str, Any]) -> str | None:
    # transformers 5 writes the template beside the config
    jinja = hf_dir / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    template = tokenizer_config.get("chat_template")
    if isinstance(template, list):  # named templates: the default one
        named = {
            t.get("name"): t.get("template") for t in template if isinstance(t, dict)
        }
        template = named.get("default") or next(iter(named.values()), None)
    return template if isinstance(template, str) else None


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):
        content = value.get("content")
        return content if isinstance(content, str) else None
    return value if isinstance(value, str) else None


def _write_vocab(
    writer: gguf.GGUFWriter, hf_dir: Path, vocab_size: int, pre: str | None
) -> None:
    tokenizer = _read_json(hf_dir / "tokenizer.json")
    config_path = hf_dir / "tokenizer_config.json"
    tokenizer_config = _read_json(config_path) if config_path.is_file() else {}
    model = tokenizer.get("model", {})
    if model.get("type") != "BPE":
        raise ConvertError(
            f"tokenizer.json model type {model.get('type')!r}: only byte-level BPE is supported"
        )
    by_id: dict[int, tuple[str, int]] = {
        int(i): (t, gguf.TokenType.NORMAL) for t, i in model["vocab"].items()
    }
    for added in tokenizer.get("added_tokens", []):
        kind = (
            gguf.TokenType.CONTROL
            if added.get("special")
            else gguf.TokenType.USER_DEFINED
        )
        by_id[int(added["id"])] = (added["content"], kind)
    size = max(vocab_size, max(by_id) + 1)
    tokens = [by_id.get(i, (f"[PAD{i}]", gguf.TokenType.UNUSED)) for i in range(size)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    ids = {text: i for i, (text, _) in enumerate(tokens)}

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre or _pre_tokenizer(tokenizer))
    writer.add_token_list([t for t, _ in tokens])
    writer.add_token_types([int(k) for _, k in tokens])
    writer.add_token_merges(merges)
    eos = _token_text(tokenizer_config.get("eos_token"))
    bos = _token_text(tokenizer_config.get("bos_token"))
    pad = _token_text(tokenizer_config.get("pad_token"))
    if eos is None or eos not in ids:
        raise ConvertError(
            "tokenizer_config.json needs an eos_token from the vocabulary"
        )
    writer.add_eos_token_id(ids[eos])
    if bos is not None and bos in ids:
        writer.add_bos_token_id(ids[bos])
    if pad is not None and pad in ids:
        writer.add_pad_token_id(ids[pad])
    post = json.dumps(tokenizer.get("post_processor"))
    add_bos = tokenizer_config.get("add_bos_token")
    writer.add_add_bos_token(
        bool(add_bos) if add_bos is not None else bos is not None and bos in post
    )
    template = _chat_template(hf_dir, tokenizer_config)
    if template:
        writer.add_chat_template(template)


def convert(
    hf_dir: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    dtype: str = "f32",
    pre: str | None = None,
) -> Result:
    """Writes OUT (atomically) from the checkpoint in HF_DIR; returns what was written."""
    src = Path(hf_dir)
    out = Path(out_path)
    if dtype not in ("f32", "f16"):
        raise ConvertError(f"dtype {dtype!r}: use f32 or f16")
    if not (src / "config.json").is_file():
        raise ConvertError(
            f"{src}: no config.json (a directory written by save_pretrained)"
        )
    if not (src / "tokenizer.json").is_file():
        raise ConvertError(
            f"{src}: no tokenizer.json (save the tokenizer beside the model)"
        )
    config = _read_json(src / "config.json")
    hf_arch = (config.get("architectures") or ["?"])[0]
    if hf_arch not in ARCHITECTURES:
        raise ConvertError(
            f"architecture {hf_arch}: supported are {', '.join(ARCHITECTURES)}"
        )
    arch, permute = ARCHITECTURES[hf_arch]
    n_layer = int(config["num_hidden_layers"])
    n_head = int(config["num_attention_heads"])
    n_head_kv = int(config.get("num_key_value_heads") or n_head)
    hidden = int(config["hidden_size"])
    head_dim = int(config.get("head_dim") or hidden // n_head)
    vocab_size = int(config["vocab_size"])

    tmp = out.with_name(out.name + ".tmp")
    writer = gguf.GGUFWriter(str(tmp), gguf.MODEL_ARCH_NAMES[arch])
    writer.add_name(str(config.get("_name_or_path") or src.name))
    writer.add_context_length(int(config.get("max_position_embeddings", 4096)))
    writer.add_embedding_length(hidden)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(_rope_theta(config))
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    writer.add_vocab_size(vocab_size)
    file_type = (
        gguf.LlamaFileType.ALL_F32 if dtype == "f32" else gguf.LlamaFileType.MOSTLY_F16
    )
    writer.add_file_type(int(file_type))
    _write_vocab(writer, src, vocab_size, pre)

    names = gguf.get_tensor_name_map(arch, n_layer)
    tied = bool(config.get("tie_word_embeddings", False))
    count = 0
    factors = _llama3_rope_factors(config, head_dim)
    if factors is not None:
        writer.add_tensor(
            gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.ROPE_FREQS] + ".weight", factors
        )
        count += 1
    for name, tensor in _tensors(src).items():
        if name.endswith("rotary_emb.inv_freq") or (tied and name == "lm_head.weight"):
            continue
        new_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new_name is None:
            raise ConvertError(
                f"tensor {name}: no GGUF name for it in {gguf.MODEL_ARCH_NAMES[arch]}"
            )
        data = tensor.to(torch.float32).numpy()
        if permute and name.endswith("q_proj.weight"):
            data = _permute(data, n_head)
        elif permute and name.endswith("k_proj.weight"):
            data = _permute(data, n_head_kv)
        # llama.cpp keeps 1-D tensors (norms, biases) in f32 whatever the file type.
        if dtype == "f16" and data.ndim > 1:
            data = data.astype(np.float16)
        writer.add_tensor(new_name, np.ascontiguousarray(data))
        count += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    return Result(out, gguf.MODEL_ARCH_NAMES[arch], vocab_size, count)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Hugging Face checkpoint -> GGUF for llama.cpp"
    )
    parser.add_argument("hf_dir")
    parser.add_argument("out")
    parser.add_argument("--dtype", default="f32", choices=("f32", "f16"))
    parser.add_argument(
        "--pre", default=None, help="llama.cpp pre-tokenizer name (default: detected)"
    )
    args = parser.parse_args(argv)
    try:
        result = convert(args.hf_dir, args.out, args.dtype, args.pre)
    except ConvertError as error:
        print(f"convert: {error}", file=sys.stderr)
        return 2
    size = result.path.stat().st_size / 1e6
    print(
        f"wrote {result.path} ({result.arch}, {result.tensors} tensors, vocab {result.vocab_size}, {size:.1f} MB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
