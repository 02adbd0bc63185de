"""Torch tensors from a leased batch (the ``[torch]`` extra).

Layout (every tensor ``(sequences, length)``, right-padded, positions aligned with ``tokens``, as
Hugging Face causal LMs take them):

- ``input_ids``: the tokens; ``pad_token_id`` after the end.
- ``attention_mask``: 1 on tokens, 0 on padding.
- ``labels``: the token where Atropos' mask trains it, -100 elsewhere (prompt, tool output,
  padding). The model predicts position ``t`` from ``t - 1``: shift as HF's loss does
  (``logits[:, :-1]`` against ``labels[:, 1:]``).
- ``advantages``: per token (the env's own when it sent them, else scores standardized within
  the group; ``set_advantage_to_zero`` honoured), 0 on padding.
- ``inference_logprobs``: the sampler's log-probability of each token; 0 on padding and for
  sequences whose env sent none (``has_inference_logprobs`` says which rows have them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import torch

if TYPE_CHECKING:
    from .batch import Batch

IGNORE_INDEX = -100


class BatchTensors(TypedDict):
    """What :meth:`Batch.to_tensors` returns."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor
    advantages: torch.Tensor
    inference_logprobs: torch.Tensor
    has_inference_logprobs: torch.Tensor


def batch_to_tensors(batch: Batch, pad_token_id: int, max_length: int | None = None) -> BatchTensors:
    """Pads every sequence of ``batch`` to the longest (or cuts at ``max_length`` tokens)."""
    rows = batch.rows()
    if not rows:
        raise ValueError(f"batch {batch.batch_id} has no sequences")
    lengths = [len(r.tokens) if max_length is None else min(len(r.tokens), max_length) for r in rows]
    width = max(1, max(lengths))
    n = len(rows)
    input_ids = torch.full((n, width), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((n, width), dtype=torch.long)
    labels = torch.full((n, width), IGNORE_INDEX, dtype=torch.long)
    advantages = torch.zeros((n, width), dtype=torch.float32)
    logprobs = torch.zeros((n, width), dtype=torch.float32)
    has_logprobs = torch.zeros(n, dtype=torch.bool)
    for i, (row, length) in enumerate(zip(rows, lengths, strict=True)):
        if length == 0:
            continue
        input_ids[i, :length] = torch.tensor(row.tokens[:length], dtype=torch.long)
        attention_mask[i, :length] = 1
        labels[i, :length] = torch.tensor(row.masks[:length], dtype=torch.long)
        advantages[i, :length] = torch.tensor(row.advantages[:length], dtype=torch.float32)
        if row.inference_logprobs is not None:
            logprobs[i, :length] = torch.tensor(row.inference_logprobs[:length], dtype=torch.float32)
            has_logprobs[i] = True
    # Atropos masks carry the token id where trained and -100 elsewhere: train the token itself.
    labels = torch.where(labels < 0, IGNORE_INDEX, input_ids)
    return BatchTensors(
        input_ids=input_ids,
        attention_mask=attention_mask,
        labels=labels,
        advantages=advantages,
        inference_logprobs=logprobs,
        has_inference_logprobs=has_logprobs,
    )
