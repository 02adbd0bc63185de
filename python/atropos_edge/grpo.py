"""GRPO on leased batches with PyTorch (the ``[torch]`` extra): the loss and the weight push.

The loss is the token-level clipped surrogate of PPO/GRPO. Per trainable token ``t`` (Atropos'
mask is not -100) of a sequence with advantage ``A`` (group-normalized scores, or the env's own
per-token advantages: :func:`~atropos_edge.batch.group_advantages`)::

    ratio_t = exp(logp_new_t - inference_logprob_t)
    loss    = -mean_t min(ratio_t * A_t, clip(ratio_t, 1 - eps, 1 + eps) * A_t)

``inference_logprob_t`` is the batch's: the probability the inference server gave the token when
it sampled it, under the weights it served then (older than the trainer's when the batch is
stale). So the ratio corrects for off-policy lag and the clip bounds how far one step moves a
token's probability. A sequence whose env sent no logprobs is treated as on-policy (ratio 1).

:class:`WeightPusher` sends the trainer's weights back to the server that samples: save_pretrained →
GGUF (the llama.cpp engine's converter) → ``POST /update_weights_from_disk`` (SGLang's route,
which the engine answers) → the API's policy version, so groups sampled from then on say so.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from .tensors import BatchTensors
    from .trainer import TrainerClient

#: PPO's and GRPO's usual clip range.
CLIP_EPSILON = 0.2


def token_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """log p(token_t | tokens_<t) under ``model`` (a Hugging Face causal LM), aligned with the
    tokens: column ``t`` scores ``input_ids[:, t]``; column 0 (no context) is 0."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    picked = torch.log_softmax(logits, dim=-1).gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return torch.nn.functional.pad(picked, (1, 0))


@dataclass
class LossStats:
    """What one loss computation saw (for logs and metrics)."""

    tokens: int
    mean_ratio: float
    clip_fraction: float
    max_abs_log_ratio: float


def clipped_policy_loss(
    logp: torch.Tensor,
    inference_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_epsilon: float = CLIP_EPSILON,
) -> tuple[torch.Tensor, LossStats]:
    """The clipped surrogate (module docstring), averaged over the tokens where ``mask`` is true.

    Every tensor is ``(sequences, length)``; ``logp`` carries the gradient.
    """
    weight = mask.float()
    count = weight.sum().clamp(min=1.0)
    log_ratio = (logp - inference_logprobs) * weight
    ratio = torch.exp(log_ratio)
    clipped = torch.clamp(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon)
    surrogate = torch.minimum(ratio * advantages, clipped * advantages)
    loss = -(surrogate * weight).sum() / count
    with torch.no_grad():
        was_clipped = ((ratio - clipped).abs() > 0) & mask
        stats = LossStats(
            tokens=int(mask.sum()),
            mean_ratio=float((ratio * weight).sum() / count),
            clip_fraction=float(was_clipped.float().sum() / count),
            max_abs_log_ratio=float(log_ratio.abs().max()) if mask.any() else 0.0,
        )
    return loss, stats


def batch_loss(
    model: Any, tensors: BatchTensors, clip_epsilon: float = CLIP_EPSILON
) -> tuple[torch.Tensor, LossStats]:
    """:func:`clipped_policy_loss` for a batch's tensors (``Batch.to_tensors``).

    Trainable tokens are those Atropos' mask trains (labels != -100) after the first position;
    rows without inference logprobs use the current ones, detached (on-policy, ratio 1).
    """
    logp = token_logprobs(model, tensors["input_ids"], tensors["attention_mask"])
    mask = tensors["labels"] != -100
    mask[:, 0] = False
    has = tensors["has_inference_logprobs"].unsqueeze(-1)
    old = torch.where(has, tensors["inference_logprobs"], logp.detach())
    return clipped_policy_loss(logp, old, tensors["advantages"], mask, clip_epsilon)


def checksum(model: torch.nn.Module) -> str:
    """A short hash of every parameter: tells whether a step changed the weights."""
    import hashlib

    digest = hashlib.sha256()
    for param in model.parameters():
        digest.update(param.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def post_json(url: str, body: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
    """POST a JSON body, return the JSON answer (raises urllib's HTTPError on >= 400)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer: dict[str, Any] = json.loads(response.read() or b"{}")
    return answer


@dataclass
class WeightPush:
    version: int
    gguf: Path
    seconds: float


class WeightPusher:
    """Sends a model's weights to the inference engine and announces them as a policy version.

    Args:
        engine_url: the engine's base URL (``http://127.0.0.1:PORT``, no ``/v1``).
        workdir: where checkpoints are written (one HF directory, GGUF files by version).
        convert: HF directory → GGUF file (``hf_to_gguf.convert`` of the engine; vLLM/SGLang
            load the HF directory itself and need no conversion: pass ``None``).
        client: announces each pushed version (``set_policy_version``); ``None`` to skip.
        post: the HTTP seam (tests record the calls).
    """

    def __init__(
        self,
        engine_url: str,
        workdir: str | Path,
        convert: Callable[[Path, Path], object] | None,
        client: TrainerClient | None = None,
        post: Callable[[str, dict[str, Any]], dict[str, Any]] = post_json,
    ) -> None:
        self.engine_url = engine_url.rstrip("/")
        self.workdir = Path(workdir)
        self.convert = convert
        self.client = client
        self.post = post
        self.pushes: list[WeightPush] = []

    def push(self, model: Any, version: int, tokenizer_dir: str | Path | None = None) -> WeightPush:
        """save_pretrained → GGUF → /update_weights_from_disk → policy version ``version``."""
        import shutil
        import time

        started = time.monotonic()
        hf_dir = self.workdir / "hf"
        model.save_pretrained(hf_dir, safe_serialization=True)
        if tokenizer_dir is not None:
            for name in ("tokenizer.json", "tokenizer_config.json"):
                if (Path(tokenizer_dir) / name).is_file():
                    shutil.copy(Path(tokenizer_dir) / name, hf_dir / name)
        path = hf_dir
        if self.convert is not None:
            path = self.workdir / f"policy-{version}.gguf"
            self.convert(hf_dir, path)
        answer = self.post(
            f"{self.engine_url}/update_weights_from_disk",
            {"model_path": str(path), "weight_version": version},
        )
        if answer.get("success") is False:
            raise RuntimeError(f"the engine refused the weights: {answer.get('message')}")
        # The previous file is no longer served: keep the disk bounded.
        if self.pushes and self.pushes[-1].gguf != path and self.pushes[-1].gguf.suffix == ".gguf":
            self.pushes[-1].gguf.unlink(missing_ok=True)
        if self.client is not None:
            self.client.set_policy_version(version, reset=not self.pushes)
        push = WeightPush(version=version, gguf=path, seconds=time.monotonic() - started)
        self.pushes.append(push)
        return push
