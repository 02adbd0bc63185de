"""Batch.to_tensors: HF's layout, padding, advantages and logprobs per token."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the [torch] extra; the venv npm test builds has it

from atropos_edge import Batch  # noqa: E402

from conftest import lease_answer  # noqa: E402


def test_layout_labels_advantages_and_logprobs() -> None:
    g1 = {
        "tokens": [[5, 6, 7, 8], [5, 6, 9]],
        "masks": [[-100, -100, 7, 8], [-100, 6, 9]],
        "scores": [1.0, -1.0],
        "inference_logprobs": [[1.0, 1.0, -0.5, -0.25], [1.0, -1.5, -2.0]],
        "overrides": [None, {"set_advantage_to_zero": True}],
    }
    g2 = {
        "tokens": [[1, 2]],
        "masks": [[-100, 2]],
        "scores": [0.5],
        "advantages": [[0.0, 0.75]],
        "inference_logprobs": None,
    }
    t = Batch.from_lease(lease_answer([g1, g2])).to_tensors(pad_token_id=0)
    assert t["input_ids"].tolist() == [[5, 6, 7, 8], [5, 6, 9, 0], [1, 2, 0, 0]]
    assert t["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]]
    assert t["labels"].tolist() == [[-100, -100, 7, 8], [-100, 6, 9, -100], [-100, 2, -100, -100]]
    # Standardized scores (+1/-1), the second zeroed by its override; the env's own advantages.
    assert t["advantages"].tolist() == [[1.0] * 4, [0.0] * 4, [0.0, 0.75, 0.0, 0.0]]
    assert t["inference_logprobs"].tolist() == [[1.0, 1.0, -0.5, -0.25], [1.0, -1.5, -2.0, 0.0], [0.0] * 4]
    assert t["has_inference_logprobs"].tolist() == [True, True, False]
    cut = Batch.from_lease(lease_answer([g1])).to_tensors(pad_token_id=0, max_length=2)
    assert cut["input_ids"].tolist() == [[5, 6], [5, 6]]
    assert cut["labels"].tolist() == [[-100, -100], [-100, 6]]
