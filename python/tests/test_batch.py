"""Per-token advantages and rows, standard library only."""

from __future__ import annotations

import math

from atropos_edge import Batch, group_advantages

from conftest import lease_answer, make_group


def test_scores_are_standardized_within_the_group_as_atropos_does() -> None:
    g = {"tokens": [[1, 2], [3, 4, 5], [6], [7]], "scores": [1.0, -1.0, 1.0, -1.0]}
    adv = group_advantages(g)
    assert adv == [[1.0, 1.0], [-1.0, -1.0, -1.0], [1.0], [-1.0]]
    # Equal scores: zero, not a division by zero.
    assert group_advantages({"tokens": [[1], [2]], "scores": [0.5, 0.5]}) == [[0.0], [0.0]]
    # A group of one keeps its score.
    assert group_advantages({"tokens": [[1, 2]], "scores": [0.7]}) == [[0.7, 0.7]]


def test_env_advantages_win_and_set_advantage_to_zero_is_honoured() -> None:
    g = {
        "tokens": [[1, 2, 3], [4, 5, 6]],
        "scores": [1.0, -1.0],
        "advantages": [[0.1, 0.2], [0.3, 0.4, 0.5]],
        "overrides": [{"set_advantage_to_zero": True}, {}],
    }
    assert group_advantages(g) == [[0.0, 0.0, 0.0], [0.3, 0.4, 0.5]]
    g2 = {
        "tokens": [[1], [2], [3]],
        "scores": [3.0, 1.0, 2.0],
        "overrides": [None, {"set_advantage_to_zero": True}],
    }
    std = math.sqrt(2 / 3)
    assert group_advantages(g2) == [[1 / std], [0.0], [0.0]]


def test_rows_align_tokens_masks_advantages_and_logprobs() -> None:
    groups = [make_group(1, size=2), {**make_group(2, size=2), "inference_logprobs": None}]
    batch = Batch.from_lease(lease_answer(groups, versions=[4, 6]))
    rows = batch.rows()
    assert len(rows) == 4
    assert [r.policy_version for r in rows] == [4, 4, 6, 6]
    assert rows[0].tokens == groups[0]["tokens"][0] and rows[0].masks == groups[0]["masks"][0]
    assert rows[0].inference_logprobs == groups[0]["inference_logprobs"][0]
    assert rows[2].inference_logprobs is None
    assert all(len(r.advantages) == len(r.tokens) for r in rows)
    assert batch.scores() == [s for g in groups for s in g["scores"]]
