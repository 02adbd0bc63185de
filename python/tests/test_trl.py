"""AtroposGRPOTrainer: TRL's loss on leased batches, one batch per optimizer step (CPU, tiny model)."""

from __future__ import annotations

import copy
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")  # the venv npm test builds has it; a core-only install skips
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, Qwen2Config  # noqa: E402

from atropos_edge import Batch, TrainerClient  # noqa: E402
from atropos_edge.trl import AtroposGRPOTrainer, atropos_grpo_config, grpo_inputs  # noqa: E402

from conftest import Answer, FakeApi, Seen, lease_answer  # noqa: E402

TOKENIZER = (
    Path(__file__).resolve().parents[2] / "test" / "fixtures" / "tokenizers" / "tiny" / "tokenizer.json"
)
warnings.filterwarnings("ignore", message=".*rollout_func.*")


def tiny_model_and_tokenizer(seed: int = 0) -> tuple[Any, Any]:
    """A randomly initialised 2-layer Qwen2 from a config and the bundled 400-token tokenizer."""
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER), eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=True,
    )
    return AutoModelForCausalLM.from_config(config), tok


def small_group(seed: int, size: int = 4, length: int = 10) -> dict[str, Any]:
    """Token ids inside the tiny vocabulary; half prompt; one tool-output token mid-completion."""
    tokens, masks, logprobs = [], [], []
    for s in range(size):
        seq = [3 + (seed * 31 + s * 7 + i * 13) % 390 for i in range(length)]
        tokens.append(seq)
        mask = [-100 if i < length // 2 or i == length - 2 else t for i, t in enumerate(seq)]
        masks.append(mask)
        logprobs.append([1.0 if m == -100 else -1.0 - ((seed + s + i) % 5) / 2 for i, m in enumerate(mask)])
    return {
        "tokens": tokens,
        "masks": masks,
        "scores": [1.0, -1.0, 0.5, -0.5][:size],
        "inference_logprobs": logprobs,
        "overrides": None,
        "advantages": None,
    }


def make_trainer(client: TrainerClient, *, steps: int = 3, ga: int = 1, **kw: Any) -> AtroposGRPOTrainer:
    model, tok = tiny_model_and_tokenizer()
    args = atropos_grpo_config(
        batch_size=8,
        gradient_accumulation_steps=ga,
        max_steps=steps,
        learning_rate=1e-2,
        logging_steps=1,
        use_cpu=True,
        seed=0,
        output_dir=tempfile.mkdtemp(),
        disable_tqdm=True,
    )
    return AtroposGRPOTrainer(model, client, args, tok, wait_seconds=5, poll_interval=0.01, **kw)


def test_inputs_split_prompt_and_completion_by_atropos_mask() -> None:
    batch = Batch.from_lease(lease_answer([small_group(1, size=2)]))
    out = grpo_inputs(batch, pad_token_id=0)
    g = small_group(1, size=2)
    assert out["prompt_ids"][0].tolist() == g["tokens"][0][:5]
    assert out["completion_ids"][0].tolist() == g["tokens"][0][5:]
    assert out["completion_mask"][0].tolist() == [1] * 5
    assert out["tool_mask"][0].tolist() == [1, 1, 1, 0, 1]  # the -100 mid-completion is not trained
    assert out["advantages"][0].tolist() == [1.0] * 5 and out["advantages"][1].tolist() == [-1.0] * 5
    assert out["old_per_token_logps"][0].tolist() == [
        g["inference_logprobs"][0][i] if i != 8 else 0.0 for i in range(5, 10)
    ]


def test_changing_a_batchs_inference_logprobs_changes_trls_loss() -> None:
    trainer = make_trainer(TrainerClient("http://127.0.0.1:9"))
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop, which this skips
    groups = [small_group(1), small_group(2)]
    shifted = copy.deepcopy(groups)
    for g in shifted:
        g["inference_logprobs"] = [[x - 0.5 for x in seq] for seq in g["inference_logprobs"]]

    def loss(gs: list[dict[str, Any]]) -> float:
        inputs = trainer.grpo_inputs(Batch.from_lease(lease_answer(gs)))
        return float(trainer.compute_loss(trainer.model, inputs).detach())

    base, moved = loss(groups), loss(shifted)
    assert torch.isfinite(torch.tensor([base, moved])).all()
    assert moved != pytest.approx(base, rel=1e-4)
    # Without sampler logprobs the model's own stand in (TRL's on-policy ratio 1): different again.
    for g in groups:
        g["inference_logprobs"] = None
    assert loss(groups) != pytest.approx(base, rel=1e-4)


class Run:
    """A fake run: 3 batches to lease, then none; records leases, policy announcements and acks."""

    def __init__(self, api: FakeApi, n: int = 3) -> None:
        self.batches = [
            lease_answer(
                [small_group(2 * i + 1), small_group(2 * i + 2)],
                batch_id=f"b{i + 1}",
                lease_id=f"l{i + 1}",
                step=i + 1,
            )
            for i in range(n)
        ]
        self.events: list[tuple[str, Any]] = []
        api.route = self.route

    def route(self, seen: Seen) -> Answer:
        if seen.path.endswith("/batches/lease"):
            if not self.batches:
                return Answer(204, headers={"X-Atropos-Edge-Reason": "drained"})
            b = self.batches.pop(0)
            self.events.append(("lease", b["batch_id"]))
            return Answer(200, b, gzip=True)
        if seen.path.endswith("/policy"):
            self.events.append(("policy", seen.body))
            return Answer(200, {"policy_version": seen.body["version"]})
        if seen.path.endswith("/ack"):
            self.events.append(("ack", (seen.path.split("/")[-2], seen.body["lease_id"])))
            return Answer(200, {"status": "acked", "already_acked": False})
        return Answer(404)


@pytest.mark.parametrize("ga", [1, 2])
def test_three_steps_from_three_leased_batches(api: FakeApi, ga: int) -> None:
    run = Run(api)
    trainer = make_trainer(TrainerClient(api.url, run="trl"), ga=ga)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    after = list(trainer.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))
    # One lease per optimizer step, then the new version, then the ack with that lease's id.
    assert run.events == [
        ("lease", "b1"),
        ("policy", {"version": 1, "reset": True}),
        ("ack", ("b1", "l1")),
        ("lease", "b2"),
        ("policy", {"version": 2}),
        ("ack", ("b2", "l2")),
        ("lease", "b3"),
        ("policy", {"version": 3}),
        ("ack", ("b3", "l3")),
    ]
    logged = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logged) == 3 and all("reward" in h and "atropos/step" in h for h in logged)


def test_a_step_that_raises_leaves_its_batch_unacked(api: FakeApi) -> None:
    run = Run(api, n=1)
    trainer = make_trainer(TrainerClient(api.url), steps=1)

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("out of memory")

    trainer.compute_loss = fail  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="out of memory"):
        trainer.train()
    assert run.events == [("lease", "b1")]


def test_settings_that_would_lease_more_than_once_per_step_are_refused() -> None:
    model, tok = tiny_model_and_tokenizer()
    args = atropos_grpo_config(batch_size=8, max_steps=1, use_cpu=True)
    args.num_iterations = 2
    with pytest.raises(ValueError, match="num_iterations must be 1"):
        AtroposGRPOTrainer(model, TrainerClient("http://127.0.0.1:9"), args, tok)
