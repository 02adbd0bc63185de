"""A GRPO trainer on PyTorch (CPU) that leases batches from atropos-edge and really steps a model.

    pip install './python[torch]'   # CPU PyTorch: see examples/python/README.md
    python examples/python/grpo_torch_trainer.py --api http://127.0.0.1:8787 --run default --steps 3

The model is a tiny causal transformer built from a config with random weights (no download), so
the code path is a real trainer's: lease → inputs/labels/advantages from tokens, masks and scores
→ GRPO policy-gradient loss → AdamW step → announce the new policy version → ack. Swap
`TinyCausalLM` for a real model (and its tokenizer's vocabulary) to train for real.

Token ids are hashed into the toy's vocabulary (`id % vocab`): Qwen3 ids reach ~151k and a full
output layer over them would dominate CPU time for a model that only shows the loop works.
"""

import argparse
import hashlib
import math
import os
import sys
import warnings
from pathlib import Path

# A venv without NumPy makes PyTorch warn at import; nothing here needs NumPy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
from torch import nn  # noqa: E402

try:
    from atropos_edge import TrainerClient
except ImportError:  # a checkout without `pip install './python[torch]'`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    from atropos_edge import TrainerClient


class TinyCausalLM(nn.Module):
    """A decoder-only transformer: token + position embeddings, pre-norm blocks, causal mask."""

    def __init__(self, vocab, d_model, layers, heads, max_len):
        super().__init__()
        self.vocab = vocab
        self.max_len = max_len
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        block = nn.TransformerEncoderLayer(
            d_model, heads, 4 * d_model, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, ids):
        n = ids.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(n)
        x = self.tok(ids) + self.pos(torch.arange(n))
        return self.head(self.norm(self.blocks(x, mask=causal, is_causal=True)))


def build_inputs(batch, vocab, max_len):
    """inputs = tokens[:-1], labels = masks[1:] (-100: no loss), advantages[1:], right-padded.

    Batch.to_tensors gives HF's unshifted layout (labels and per-token advantages aligned with
    the tokens: the env's own advantages, else scores standardized within the group); the shift
    here is the causal-LM one. Ids are hashed into the toy's vocabulary.
    """
    t = batch.to_tensors(pad_token_id=0, max_length=max_len + 1)
    ids = t["input_ids"][:, :-1] % vocab
    labels = t["labels"][:, 1:]
    trainable = labels != -100
    labels = torch.where(trainable, labels % vocab, 0)
    return ids, labels, trainable, t["advantages"][:, 1:]


def label_logprobs(model, ids, labels):
    """log p(label) at every position of the (hashed) vocabulary."""
    logp = torch.log_softmax(model(ids).float(), dim=-1)
    return logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)


def grpo_loss(label_logp, trainable, advantages):
    """Token-level GRPO policy gradient: -A * log p(label), mean over trainable tokens.

    On-policy (one step per batch, no importance ratio): the toy's logprobs have nothing to do
    with the inference server's, so a ratio against `inference_logprobs` would be meaningless.
    """
    weight = trainable.float()
    return -(advantages * label_logp * weight).sum() / weight.sum().clamp(min=1.0)


def margin(label_logp, trainable, advantages):
    """Mean log p of tokens with A > 0 minus that of tokens with A < 0: a step should raise it."""
    pos, neg = trainable & (advantages > 0), trainable & (advantages < 0)
    if not pos.any() or not neg.any():
        return 0.0
    return (label_logp[pos].mean() - label_logp[neg].mean()).item()


def checksum(model):
    """A short hash of every parameter's bytes: tells whether a step changed the weights."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(bytes(p.detach().flatten().contiguous().view(torch.uint8).tolist()))
    return h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--api", default="http://127.0.0.1:8787")
    ap.add_argument("--run", default="default", help="the run to train")
    ap.add_argument("--token", default=os.environ.get("ATROPOS_EDGE_TOKEN"), help="a trainer token")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32, help="sequences per batch (registered)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=4096, help="toy vocabulary; ids are hashed in")
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--max-len", type=int, default=512, help="longer sequences are truncated")
    ap.add_argument("--wait", type=float, default=300, help="seconds to wait for a batch")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small tensors: threads cost more than they give on a shared box
    model = TinyCausalLM(args.vocab, args.d_model, args.layers, args.heads, args.max_len)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    print(
        f"model: {sum(p.numel() for p in model.parameters())} parameters, checksum {checksum(model)}",
        flush=True,
    )

    client = TrainerClient(args.api, token=args.token, run=args.run)
    client.register(
        batch_size=args.batch_size,
        max_token_len=args.max_len,
        num_steps=args.steps,
        wandb_group="torch",
        wandb_project="torch",
    )
    batches = client.batches(lease_seconds=120, max_batches=args.steps, timeout=args.wait, poll_interval=0.5)
    version = 0
    for batch in batches:
        ids, labels, trainable, advantages = build_inputs(batch, args.vocab, args.max_len)
        model.train()
        opt.zero_grad()
        label_logp = label_logprobs(model, ids, labels)
        loss = grpo_loss(label_logp, trainable, advantages)
        margin_before = margin(label_logp.detach(), trainable, advantages)
        if not math.isfinite(loss.item()):
            # Raising leaves the batch unacked: its lease lapses and it is delivered again.
            raise SystemExit(f"step {batch.step}: loss is {loss.item()}, not stepping")
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        with torch.no_grad():  # the same batch after the step
            margin_after = margin(label_logprobs(model, ids, labels), trainable, advantages)
        staleness = max(batch.staleness(version))
        # The weights changed: announce them before the loop acks, so groups sampled from now on
        # are stamped with the new version. A fresh trainer's first announcement resets the run's.
        version += 1
        client.set_policy_version(version, reset=version == 1)
        env_adv = sum(1 for g in batch.groups if g.get("advantages"))
        scores = batch.scores()
        print(
            f"step {batch.step}: {ids.shape[0]} sequences, {int(trainable.sum())} trainable "
            f"tokens, {env_adv} groups with env advantages, "
            f"mean score {sum(scores) / len(scores):.4f}, "
            f"loss {loss.item():.6f}, grad norm {grad_norm:.6f}, "
            f"logp margin {margin_before:.6f} -> {margin_after:.6f}, "
            f"max staleness {staleness}",
            flush=True,
        )
    print(f"done: {args.steps} steps, checksum {checksum(model)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
