"""A leased batch: Atropos' group dicts, their policy versions, per-token advantages, ack."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the tensors need torch, an optional extra
    from .tensors import BatchTensors

#: As Atropos' example trainer: advantages are (s - mean) / max(std, 1e-8) within a group.
STD_FLOOR = 1e-8


def group_advantages(group: dict[str, Any]) -> list[list[float]]:
    """Per sequence, one advantage per token (same length as ``tokens``) for one Atropos group.

    The env's own ``advantages`` (a per-token list for every sequence) win when present, padded
    with zeros; else the group's scores standardized within the group, as Atropos' example
    trainer does (a group of one keeps its raw score). ``overrides[i].set_advantage_to_zero``
    zeroes sequence ``i``.
    """
    tokens: list[list[int]] = group["tokens"]
    scores: list[float] = [float(s) for s in group.get("scores") or [0.0] * len(tokens)]
    given = group.get("advantages")
    if given and len(given) == len(tokens):
        per_token = [
            [float(a) for a in adv[: len(seq)]] + [0.0] * (len(seq) - len(adv))
            for seq, adv in zip(tokens, given, strict=True)
        ]
    else:
        mean = sum(scores) / len(scores) if scores else 0.0
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores)) if scores else 0.0
        norm = [(s - mean) / max(std, STD_FLOOR) if len(scores) > 1 else s for s in scores]
        per_token = [[a] * len(seq) for a, seq in zip(norm, tokens, strict=False)]
    for i, override in enumerate(group.get("overrides") or []):
        if i < len(per_token) and isinstance(override, dict) and override.get("set_advantage_to_zero"):
            per_token[i] = [0.0] * len(per_token[i])
    return per_token


@dataclass(frozen=True)
class Row:
    """One sequence of a batch, every list aligned with ``tokens``.

    ``masks`` is Atropos' (the token id, or -100 where no loss is taken: prompt, tool output);
    ``inference_logprobs`` is the sampler's log-probability of each token (``None`` when the env
    sent none; prompt positions carry a placeholder).
    """

    tokens: list[int]
    masks: list[int]
    advantages: list[float]
    inference_logprobs: list[float] | None
    score: float
    group_index: int
    policy_version: int


@dataclass
class Batch:
    """A batch leased from ``POST /v1/runs/{run}/batches/lease``.

    Attributes:
        batch_id: the batch's id (acks name it).
        lease_id: this lease; the ack sends it, so a lapsed lease cannot complete the batch.
        step: the run's step this batch is.
        redelivered: a lease on it lapsed before; it is the same batch again.
        lease_expires_at: when the lease lapses (epoch seconds) unless acked.
        groups: Atropos' group dicts (``tokens``, ``masks``, ``scores``, ``inference_logprobs``,
            ``overrides``, ``advantages``…), each with ``policy_version``: the version it was
            sampled under.
        manifest: the API's per-group record (``group_id``, ``env_id``, ``policy_version``,
            ``num_seqs``, ``replayed``), in the order of ``groups``.
    """

    batch_id: str
    lease_id: str
    step: int
    redelivered: bool
    lease_expires_at: float
    groups: list[dict[str, Any]]
    manifest: list[dict[str, Any]] = field(default_factory=list)
    _ack: Callable[[Batch], dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    acked: bool = field(default=False, compare=False)

    @classmethod
    def from_lease(cls, data: dict[str, Any], ack: Callable[[Batch], dict[str, Any]] | None = None) -> Batch:
        """Builds a batch from the lease answer (the wire shape of docs/API.md)."""
        manifest: list[dict[str, Any]] = list(data.get("groups") or [])
        groups: list[dict[str, Any]] = []
        for i, group in enumerate(data.get("batch") or []):
            entry = manifest[i] if i < len(manifest) else {}
            groups.append({**group, "policy_version": int(entry.get("policy_version", 0))})
        return cls(
            batch_id=str(data["batch_id"]),
            lease_id=str(data["lease_id"]),
            step=int(data["step"]),
            redelivered=bool(data.get("redelivered", False)),
            lease_expires_at=float(data.get("lease_expires_at", 0)),
            groups=groups,
            manifest=manifest,
            _ack=ack,
        )

    @property
    def num_sequences(self) -> int:
        """Sequences in the batch (what ``batch_size`` counts)."""
        return sum(len(g["tokens"]) for g in self.groups)

    def staleness(self, policy_version: int) -> list[int]:
        """Per group, how many policy versions ``policy_version`` is ahead of its sampler's."""
        return [policy_version - int(g["policy_version"]) for g in self.groups]

    def scores(self) -> list[float]:
        """Every sequence's score, in batch order."""
        return [float(s) for g in self.groups for s in g.get("scores") or []]

    def rows(self) -> list[Row]:
        """Every sequence with its per-token advantages and logprobs (see :func:`group_advantages`)."""
        out: list[Row] = []
        for gi, group in enumerate(self.groups):
            logprobs: Sequence[Sequence[float]] | None = group.get("inference_logprobs") or None
            scores = group.get("scores") or [0.0] * len(group["tokens"])
            for si, (seq, mask, adv) in enumerate(
                zip(group["tokens"], group["masks"], group_advantages(group), strict=True)
            ):
                lp = None
                if logprobs is not None and si < len(logprobs) and logprobs[si]:
                    lp = [float(x) for x in logprobs[si][: len(seq)]]
                    lp += [0.0] * (len(seq) - len(lp))
                out.append(
                    Row(
                        tokens=[int(t) for t in seq],
                        masks=[int(m) for m in mask],
                        advantages=adv,
                        inference_logprobs=lp,
                        score=float(scores[si]),
                        group_index=gi,
                        policy_version=int(group["policy_version"]),
                    )
                )
        return out

    def ack(self) -> dict[str, Any]:
        """Completes the batch (``POST …/batches/{id}/ack`` with this lease id); idempotent.

        Raises:
            ConflictError: the lease lapsed and the batch went to another trainer.
        """
        if self._ack is None:
            raise RuntimeError("this Batch was not leased through a TrainerClient; nothing to ack")
        answer = self._ack(self)
        self.acked = True
        return answer

    def to_tensors(self, pad_token_id: int, max_length: int | None = None) -> BatchTensors:
        """Right-padded torch tensors (needs the ``[torch]`` extra); see :mod:`atropos_edge.tensors`."""
        from .tensors import batch_to_tensors

        return batch_to_tensors(self, pad_token_id, max_length=max_length)
