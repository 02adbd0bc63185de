"""The GRPO loss and the weight push (atropos_edge.grpo), on small hand-made tensors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from atropos_edge import Batch, group_advantages
from atropos_edge.grpo import WeightPusher, batch_loss, clipped_policy_loss, token_logprobs


def test_advantages_are_normalized_within_each_group() -> None:
    adv = group_advantages({"tokens": [[1, 2], [1, 2], [1, 2], [1, 2]], "scores": [1.0, 0.0, 0.0, 1.0]})
    per_seq = [a[0] for a in adv]
    assert per_seq == pytest.approx([1.0, -1.0, -1.0, 1.0])
    assert sum(per_seq) == pytest.approx(0.0)


def test_ratio_is_against_the_given_inference_logprobs() -> None:
    logp = torch.tensor([[0.0, -1.0, -2.0]], requires_grad=True)
    mask = torch.tensor([[False, True, True]])
    adv = torch.tensor([[0.0, 1.0, 1.0]])
    on_policy, stats = clipped_policy_loss(logp, logp.detach(), adv, mask)
    assert on_policy.item() == pytest.approx(-1.0)
    assert stats.mean_ratio == pytest.approx(1.0)
    # The sampler gave these tokens less probability than the trainer now does: ratio > 1.
    shifted = logp.detach() - torch.tensor([[0.0, 0.1, 0.1]])
    off_policy, stats = clipped_policy_loss(logp, shifted, adv, mask)
    assert off_policy.item() == pytest.approx(-float(torch.exp(torch.tensor(0.1))))
    assert stats.mean_ratio == pytest.approx(float(torch.exp(torch.tensor(0.1))))
    assert stats.clip_fraction == 0.0


def test_ratio_is_clipped_at_one_plus_and_minus_epsilon() -> None:
    logp = torch.tensor([[0.0, -1.0, -1.0]], requires_grad=True)
    mask = torch.tensor([[False, True, True]])
    old = torch.tensor([[0.0, -2.0, -2.0]])  # ratio e ≈ 2.72 on both tokens
    loss, stats = clipped_policy_loss(logp, old, torch.tensor([[0.0, 1.0, 1.0]]), mask, clip_epsilon=0.2)
    assert loss.item() == pytest.approx(-1.2)  # A > 0: min(2.72 A, 1.2 A)
    assert stats.clip_fraction == 1.0
    loss.backward()
    assert logp.grad is not None and float(logp.grad.abs().sum()) == 0.0  # clipped: no gradient
    # A < 0: the pessimistic term is the unclipped one, which keeps its gradient.
    logp2 = logp.detach().clone().requires_grad_(True)
    loss2, _ = clipped_policy_loss(logp2, old, torch.tensor([[0.0, -1.0, -1.0]]), mask)
    assert loss2.item() == pytest.approx(float(torch.exp(torch.tensor(1.0))))
    loss2.backward()
    assert logp2.grad is not None and float(logp2.grad.abs().sum()) > 0


def test_masked_and_padding_positions_do_not_count() -> None:
    logp = torch.tensor([[-1.0, -1.0, -50.0]], requires_grad=True)
    mask = torch.tensor([[False, True, False]])
    old = torch.tensor([[9.0, -1.0, 9.0]])
    loss, stats = clipped_policy_loss(logp, old, torch.tensor([[5.0, 1.0, 5.0]]), mask)
    assert loss.item() == pytest.approx(-1.0)
    assert stats.tokens == 1


class Uniform(torch.nn.Module):
    """A 'causal LM' whose logits are one learned vector: log p is the same at every position."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(vocab))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Any:
        logits = self.bias.expand(*input_ids.shape, -1)
        return type("Out", (), {"logits": logits})()


def leased(inference_logprobs: list[list[float]]) -> Batch:
    return Batch.from_lease(
        {
            "batch_id": "b",
            "lease_id": "l",
            "step": 1,
            "batch": [
                {
                    "tokens": [[1, 2, 3], [1, 3, 2]],
                    "masks": [[-100, 2, 3], [-100, 3, 2]],
                    "scores": [1.0, 0.0],
                    "inference_logprobs": inference_logprobs,
                }
            ],
            "groups": [{"policy_version": 0, "env_id": 0}],
        }
    )


def test_batch_loss_uses_the_batchs_logprobs() -> None:
    model = Uniform(4)
    on_policy = [[1.0, -1.3862944, -1.3862944], [1.0, -1.3862944, -1.3862944]]  # log 1/4
    loss, stats = batch_loss(model, leased(on_policy).to_tensors(pad_token_id=0))
    assert stats.mean_ratio == pytest.approx(1.0, abs=1e-6)
    assert stats.tokens == 4
    stale = [[1.0, -2.0, -2.0], [1.0, -1.3862944, -1.3862944]]
    changed, stats2 = batch_loss(model, leased(stale).to_tensors(pad_token_id=0))
    assert changed.item() != pytest.approx(loss.item())
    assert stats2.mean_ratio > 1.0
    assert token_logprobs(model, torch.tensor([[1, 2]]), torch.ones(1, 2))[0, 0].item() == 0.0


def test_weight_pusher_saves_converts_loads_and_announces(tmp_path: Path) -> None:
    saved: list[Path] = []
    posts: list[tuple[str, dict[str, Any]]] = []
    announced: list[tuple[int, bool]] = []

    class Model:
        def save_pretrained(self, path: Path, safe_serialization: bool) -> None:
            Path(path).mkdir(parents=True, exist_ok=True)
            saved.append(Path(path))

    class Client:
        def set_policy_version(self, version: int, reset: bool = False) -> dict[str, Any]:
            announced.append((version, reset))
            return {"policy_version": version}

    def convert(hf: Path, out: Path) -> None:
        out.write_text(f"gguf of {hf.name}")

    def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
        posts.append((url, body))
        return {"success": True}

    pusher = WeightPusher("http://engine:1/", tmp_path, convert, Client(), post=post)  # type: ignore[arg-type]
    pusher.push(Model(), 2)
    pusher.push(Model(), 4)
    assert [p[0] for p in posts] == ["http://engine:1/update_weights_from_disk"] * 2
    assert posts[1][1] == {"model_path": str(tmp_path / "policy-4.gguf"), "weight_version": 4}
    assert announced == [(2, True), (4, False)]
    assert not (tmp_path / "policy-2.gguf").exists()  # the replaced file is removed
    assert (tmp_path / "policy-4.gguf").exists()
