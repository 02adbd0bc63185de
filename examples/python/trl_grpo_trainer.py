"""TRL's GRPOTrainer on batches leased from atropos-edge (CPU works; a GPU is used when present).

    pip install './python[trl]'
    python examples/python/trl_grpo_trainer.py --api http://127.0.0.1:8787 --run default --steps 3

By default the model is a tiny Qwen2 built from a config with random weights and the repository's
400-token test tokenizer (nothing is downloaded), so it trains only on groups whose token ids fit
that vocabulary; `--model DIR` loads a local Hugging Face checkpoint and its tokenizer instead (the
one your env workers sample from). Per optimizer step AtroposGRPOTrainer leases one batch, takes
TRL's GRPO loss with the batch's inference_logprobs as the old policy, steps, announces the new
policy version and acks (docs/PYTHON.md, "TRL").
"""

import argparse
import hashlib
import os
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast, Qwen2Config

try:
    from atropos_edge import TrainerClient
except ImportError:  # a checkout without `pip install './python[trl]'`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    from atropos_edge import TrainerClient
from atropos_edge.trl import AtroposGRPOTrainer, atropos_grpo_config

TINY_TOKENIZER = Path(__file__).resolve().parents[2] / "test" / "fixtures" / "tokenizers" / "tiny"


def tiny_model(seed: int):
    """A 2-layer Qwen2 with random weights over the 400-token test tokenizer."""
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(TINY_TOKENIZER / "tokenizer.json"),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
    )
    return AutoModelForCausalLM.from_config(config), tok


def checksum(model) -> str:
    """A short hash of every parameter: tells whether training changed the weights."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--api", default="http://127.0.0.1:8787")
    ap.add_argument("--run", default="default", help="the run to train")
    ap.add_argument("--token", default=os.environ.get("ATROPOS_EDGE_TOKEN"), help="a trainer token")
    ap.add_argument("--model", help="a local HF checkpoint directory (default: a tiny random Qwen2)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8, help="sequences per batch (registered)")
    ap.add_argument("--grad-accum", type=int, default=1, help="micro-batches per batch")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--loss-type", default="dapo", help="TRL's loss_type (dapo, grpo, cispo…)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wait", type=float, default=300, help="seconds to wait for each batch")
    ap.add_argument("--output-dir", default="trl-atropos-out")
    args = ap.parse_args()

    if args.model:
        model = AutoModelForCausalLM.from_pretrained(args.model)
        tok = AutoTokenizer.from_pretrained(args.model)
    else:
        model, tok = tiny_model(args.seed)
    print(
        f"model: {sum(p.numel() for p in model.parameters())} parameters, checksum {checksum(model)}",
        flush=True,
    )

    client = TrainerClient(args.api, token=args.token, run=args.run)
    client.register(
        batch_size=args.batch_size,
        max_token_len=2048,
        num_steps=args.steps,
        wandb_group="trl",
        wandb_project="trl",
    )
    config = atropos_grpo_config(
        batch_size=args.batch_size,
        gradient_accumulation_steps=args.grad_accum,
        max_steps=args.steps,
        learning_rate=args.lr,
        loss_type=args.loss_type,
        logging_steps=1,
        seed=args.seed,
        output_dir=args.output_dir,
        disable_tqdm=True,
        use_cpu=not torch.cuda.is_available(),
    )

    def show(batch) -> None:
        scores = batch.scores()
        print(
            f"leased step {batch.step}: {batch.num_sequences} sequences, "
            f"mean score {sum(scores) / len(scores):.4f}",
            flush=True,
        )

    trainer = AtroposGRPOTrainer(
        model,
        client,
        config,
        tok,
        lease_seconds=120,
        wait_seconds=args.wait,
        poll_interval=0.5,
        on_batch=show,
    )
    trainer.train()
    for h in trainer.state.log_history:
        if "loss" in h:
            print(
                f"step {h['step']}: loss {h['loss']:.6f}, reward {h['reward']:.4f}, "
                f"grad norm {h['grad_norm']:.6f}, policy version {trainer.version_offset + h['step']}",
                flush=True,
            )
    print(f"done: {trainer.state.global_step} steps, checksum {checksum(model)}", flush=True)


if __name__ == "__main__":
    main()
