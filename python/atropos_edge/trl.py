"""Train with TRL's ``GRPOTrainer`` on batches leased from atropos-edge (the ``[trl]`` extra).

TRL generates its own completions, or takes them from a ``rollout_func``; either way it applies
an importance ratio against the sampler's logprobs only when ``use_vllm`` is on. Here the env
workers have already sampled and scored: :class:`AtroposGRPOTrainer` replaces TRL's generation
and scoring step (``_generate_and_score_completions``) with a lease and keeps everything after it
— TRL's loss (``loss_type``, clipping, ``beta``), its metrics and logging, its optimizer and
scheduler, gradient accumulation, checkpoints.

Per optimizer step: one batch is leased; each sequence splits at its first trained token into
prompt and completion (Atropos' mask, -100 elsewhere, becomes the completion mask); advantages
are per token (the env's own, else scores standardized within the group); and the batch's
``inference_logprobs`` become TRL's ``old_per_token_logps``, so the clipped ratio
``π_θ / π_sampler`` is taken against the policy that actually sampled the batch (off-policy and
stale groups are corrected, not silently trained as on-policy). Rows whose env sent no logprobs
fall back to the model's own (ratio 1 at the first micro-step, TRL's on-policy default). After
the optimizer step a callback announces the new policy version and acks the batch; a step that
raises leaves the batch unacked, so its lease lapses and it is delivered again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from datasets import Dataset
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from trl.trainer.grpo_config import GRPOConfig
from trl.trainer.grpo_trainer import GRPOTrainer

from .batch import Batch
from .trainer import TrainerClient

__all__ = ["AtroposGRPOTrainer", "atropos_grpo_config", "grpo_inputs"]


def atropos_grpo_config(batch_size: int, gradient_accumulation_steps: int = 1, **kwargs: Any) -> GRPOConfig:
    """A ``GRPOConfig`` that trains one leased batch of ``batch_size`` sequences per optimizer step.

    ``steps_per_generation`` equals ``gradient_accumulation_steps`` and ``num_iterations`` is 1,
    so each optimizer step consumes exactly one batch, split into ``gradient_accumulation_steps``
    micro-batches. Other ``GRPOConfig`` fields pass through (``max_steps``, ``learning_rate``,
    ``loss_type``, ``beta``, ``epsilon``, ``output_dir``, ``report_to``…).
    """
    if batch_size < 2 or batch_size % gradient_accumulation_steps:
        raise ValueError(
            f"batch_size ({batch_size}) must be at least 2 and divisible by gradient_accumulation_steps "
            f"({gradient_accumulation_steps})"
        )
    kwargs.setdefault("output_dir", "atropos-grpo")
    kwargs.setdefault("report_to", "none")
    kwargs.setdefault("save_strategy", "no")
    return GRPOConfig(
        per_device_train_batch_size=batch_size // gradient_accumulation_steps,
        gradient_accumulation_steps=gradient_accumulation_steps,
        steps_per_generation=gradient_accumulation_steps,
        num_iterations=1,
        # TRL's generation settings are unused (the envs sampled); num_generations only has to
        # divide the generation batch.
        num_generations=batch_size,
        **kwargs,
    )


def _split(masks: list[int]) -> int:
    """Index of the first trained token (never 0: the first token has nothing to predict it)."""
    for i, m in enumerate(masks):
        if m >= 0:
            return max(1, i)
    return len(masks)


def grpo_inputs(batch: Batch, pad_token_id: int, device: torch.device | str = "cpu") -> dict[str, Any]:
    """TRL's per-batch inputs from a leased batch.

    Returns ``prompt_ids``/``prompt_mask`` (left-padded), ``completion_ids``/``completion_mask``
    (right-padded; the mask covers every real completion token, for attention), ``tool_mask``
    (Atropos' trained tokens: 0 on tool output and other -100 positions after the prompt, which
    TRL multiplies into the loss mask), ``advantages`` (per completion token),
    ``old_per_token_logps`` (the batch's ``inference_logprobs`` of the completion tokens) and
    ``has_inference_logprobs`` (per row).
    """
    rows = batch.rows()
    if not rows:
        raise ValueError(f"batch {batch.batch_id} has no sequences")
    splits = [_split(r.masks) for r in rows]
    p_width = max(1, max(splits))
    c_width = max(1, max(len(r.tokens) - p for r, p in zip(rows, splits, strict=True)))
    n = len(rows)
    prompt_ids = torch.full((n, p_width), pad_token_id, dtype=torch.long)
    prompt_mask = torch.zeros((n, p_width), dtype=torch.long)
    completion_ids = torch.full((n, c_width), pad_token_id, dtype=torch.long)
    completion_mask = torch.zeros((n, c_width), dtype=torch.long)
    tool_mask = torch.ones((n, c_width), dtype=torch.long)
    advantages = torch.zeros((n, c_width), dtype=torch.float32)
    logps = torch.zeros((n, c_width), dtype=torch.float32)
    has_logps = torch.zeros(n, dtype=torch.bool)
    for i, (row, p) in enumerate(zip(rows, splits, strict=True)):
        c = len(row.tokens) - p
        prompt_ids[i, p_width - p :] = torch.tensor(row.tokens[:p], dtype=torch.long)
        prompt_mask[i, p_width - p :] = 1
        if c == 0:
            continue
        completion_ids[i, :c] = torch.tensor(row.tokens[p:], dtype=torch.long)
        completion_mask[i, :c] = 1
        trained = torch.tensor([m >= 0 for m in row.masks[p:]], dtype=torch.bool)
        tool_mask[i, :c] = trained.long()
        advantages[i, :c] = torch.tensor(row.advantages[p:], dtype=torch.float32)
        if row.inference_logprobs is not None:
            # Untrained positions may carry placeholders: 0 keeps the ratio finite there.
            lp = torch.tensor(row.inference_logprobs[p:], dtype=torch.float32)
            logps[i, :c] = torch.where(trained, lp, torch.zeros_like(lp))
            has_logps[i] = True
    out = {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
        "advantages": advantages,
        "old_per_token_logps": logps,
        "has_inference_logprobs": has_logps,
    }
    return {k: v.to(device) for k, v in out.items()}


def atropos_score(*args: Any, **kwargs: Any) -> list[float | None]:
    """Stands in for TRL's reward functions: the envs scored the batch before it was leased."""
    raise RuntimeError("AtroposGRPOTrainer takes rewards from leased batches; this is never called")


class _AnnounceAndAck(TrainerCallback):
    """After each optimizer step: announce the new policy version, then ack the step's batch."""

    def __init__(self, trainer: AtroposGRPOTrainer) -> None:
        self.trainer = trainer

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.trainer._finish_step(state.global_step)


class AtroposGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` fed by ``client``'s leased batches (see the module docstring).

    Args:
        model: a model or model id, as ``GRPOTrainer`` takes it.
        client: the :class:`~atropos_edge.TrainerClient` of the run to train.
        args: a ``GRPOConfig`` with ``num_iterations=1``, ``steps_per_generation ==
            gradient_accumulation_steps`` and ``max_steps > 0``; :func:`atropos_grpo_config`
            makes one.
        processing_class: the tokenizer (its ``pad_token_id`` pads).
        lease_seconds, max_staleness: passed to each lease.
        wait_seconds: how long to wait for each batch (``None``: indefinitely).
        poll_interval: seconds between leases while none is ready.
        version_offset: the policy version announced after step ``n`` is ``version_offset + n``.
        reset_policy_version: the first announcement says ``reset`` (a trainer that starts its
            numbering afresh; see docs/API.md).
        on_batch: called with each leased batch (logging, tests).
        kwargs: passed to ``GRPOTrainer`` (``callbacks``, ``optimizers``, ``peft_config``…).
    """

    def __init__(
        self,
        model: Any,
        client: TrainerClient,
        args: GRPOConfig,
        processing_class: Any,
        *,
        lease_seconds: float = 300,
        max_staleness: int | None = None,
        wait_seconds: float | None = None,
        poll_interval: float = 1.0,
        version_offset: int = 0,
        reset_policy_version: bool = True,
        on_batch: Callable[[Batch], None] | None = None,
        **kwargs: Any,
    ) -> None:
        problems = []
        if args.num_iterations != 1:
            problems.append(f"num_iterations must be 1 (is {args.num_iterations})")
        if args.steps_per_generation != args.gradient_accumulation_steps:
            problems.append(
                f"steps_per_generation ({args.steps_per_generation}) must equal gradient_accumulation_steps "
                f"({args.gradient_accumulation_steps})"
            )
        if args.max_steps <= 0:
            problems.append("max_steps must be set (> 0): the number of batches to train on")
        if args.use_vllm:
            problems.append("use_vllm must be off: the env workers sample, not TRL")
        if problems:
            raise ValueError(
                "AtroposGRPOTrainer leases one batch per optimizer step: "
                + "; ".join(problems)
                + " (atropos_grpo_config() sets these)"
            )
        # TRL's dataloader drives the step count; its rows are placeholders (the batch is leased).
        placeholder = Dataset.from_dict({"prompt": [""] * int(args.generation_batch_size or 1)})
        super().__init__(
            model=model,
            reward_funcs=[atropos_score],
            args=args,
            train_dataset=placeholder,
            processing_class=processing_class,
            **kwargs,
        )
        self.atropos = client
        self.lease_seconds = lease_seconds
        self.max_staleness = max_staleness
        self.wait_seconds = wait_seconds
        self.poll_interval = poll_interval
        self.version_offset = version_offset
        self.reset_policy_version = reset_policy_version
        self.on_batch = on_batch
        self.policy_version: int | None = None
        self._pending: Batch | None = None
        self._steps_per_generation = int(args.steps_per_generation or 1)
        self.add_callback(_AnnounceAndAck(self))

    def _pad_token_id(self) -> int:
        tok: Any = getattr(self.processing_class, "tokenizer", self.processing_class)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if pad is None:
            raise ValueError("the tokenizer has neither a pad nor an eos token to pad with")
        return int(pad)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """Leases the step's batch instead of generating (TRL calls this once per step)."""
        if self.model is None or not self.model.training:
            raise NotImplementedError("AtroposGRPOTrainer trains only; evaluate with the envs' evals")
        if self._pending is not None:
            raise RuntimeError(
                f"batch {self._pending.batch_id} is not acked yet: one batch per optimizer step "
                "(steps_per_generation must equal gradient_accumulation_steps)"
            )
        batch = self.atropos.wait_for_batch(
            self.lease_seconds,
            self.max_staleness,
            timeout=self.wait_seconds,
            poll_interval=self.poll_interval,
        )
        self._pending = batch
        if self.on_batch is not None:
            self.on_batch(batch)
        return self.grpo_inputs(batch)

    def grpo_inputs(self, batch: Batch) -> dict[str, Any]:
        """The inputs TRL's loss takes for ``batch`` (what a generation step would have made)."""
        device = self.accelerator.device
        out = grpo_inputs(batch, self._pad_token_id(), device)
        splits = self._steps_per_generation
        if out["prompt_ids"].shape[0] % splits:
            raise ValueError(
                f"batch {batch.batch_id} has {out['prompt_ids'].shape[0]} sequences, not divisible into "
                f"{splits} micro-batches: register a batch_size divisible by gradient_accumulation_steps"
            )
        vocab = self.accelerator.unwrap_model(self.model).config.get_text_config().vocab_size
        top = int(max(out["prompt_ids"].max(), out["completion_ids"].max()))
        if top >= vocab:
            raise ValueError(
                f"batch {batch.batch_id} has token id {top}, outside the model's vocabulary ({vocab})"
            )
        has_logps = out.pop("has_inference_logprobs")
        ids = torch.cat([out["prompt_ids"], out["completion_ids"]], dim=1)
        attention = torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1)
        logits_to_keep = out["completion_ids"].shape[1]
        if not bool(has_logps.all()) or self.beta != 0.0:
            with torch.no_grad():
                own, _, _ = self._get_per_token_logps_and_entropies(
                    self.model, ids, attention, logits_to_keep, self.args.per_device_train_batch_size
                )
                # No sampler logprobs: the model's own (ratio 1 before the step, TRL's default).
                out["old_per_token_logps"] = torch.where(
                    has_logps.unsqueeze(1), out["old_per_token_logps"], own
                )
                if self.beta != 0.0:
                    if self.ref_model is None:
                        raise ValueError("beta != 0 needs a reference model (not a PEFT adapter) here")
                    out["ref_per_token_logps"], _, _ = self._get_per_token_logps_and_entropies(
                        self.ref_model, ids, attention, logits_to_keep, self.args.per_device_train_batch_size
                    )
        # TRL's off-policy mask (off_policy_mask_threshold) compares against the sampler too.
        out["sampling_per_token_logps"] = out["old_per_token_logps"]
        loss_mask = out["completion_mask"] * out["tool_mask"]
        out["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        self._log_batch(batch, attention, loss_mask)
        return out

    def _log_batch(self, batch: Batch, attention: torch.Tensor, loss_mask: torch.Tensor) -> None:
        metrics = self._metrics["train"]
        scores = torch.tensor(batch.scores(), dtype=torch.float32)
        self.state.num_input_tokens_seen += int(attention.sum())
        metrics["num_tokens"] = [self.state.num_input_tokens_seen]
        metrics["completions/mean_length"].append(loss_mask.sum(1).float().mean().item())
        metrics["reward"].append(scores.mean().item())
        metrics["reward_std"].append(scores.std().item() if scores.numel() > 1 else 0.0)
        metrics["atropos/step"].append(float(batch.step))
        metrics["atropos/redelivered"].append(float(batch.redelivered))
        current = self.version_offset + self.state.global_step
        metrics["atropos/staleness_max"].append(float(max(batch.staleness(current), default=0)))

    def _finish_step(self, global_step: int) -> None:
        batch = self._pending
        if batch is None:
            return
        version = self.version_offset + global_step
        reset = self.reset_policy_version and self.policy_version is None
        self.atropos.set_policy_version(version, reset=reset)
        self.policy_version = version
        batch.ack()
        self._pending = None
