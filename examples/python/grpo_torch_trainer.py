"""A GRPO trainer on PyTorch (CPU) that leases batches from atropos-edge and really steps a model.

    examples/python/install_torch.sh          # once: a venv with CPU PyTorch, prints its python
    VENV_PYTHON examples/python/grpo_torch_trainer.py --api http://127.0.0.1:8787 --steps 3

The model is a tiny causal transformer built from a config with random weights (no download), so
the code path is a real trainer's: lease → inputs/labels/advantages from tokens, masks and scores
→ GRPO policy-gradient loss → AdamW step → announce the new policy version → ack. Swap
`TinyCausalLM` for a real model (and its tokenizer's vocabulary) to train for real.

Token ids are hashed into the toy's vocabulary (`id % vocab`): Qwen3 ids reach ~151k and a full
output layer over them would dominate CPU time for a model that only shows the loop works.
"""
import argparse
import hashlib
import json
import math
import sys
import time
import urllib.request
import warnings

# This venv has no NumPy; PyTorch warns about it at import, and nothing here needs it.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
from torch import nn  # noqa: E402

STD_FLOOR = 1e-8  # as Atropos' example trainer: (s - mean) / max(std, 1e-8)


class TinyCausalLM(nn.Module):
    """A decoder-only transformer: token + position embeddings, pre-norm blocks, causal mask."""

    def __init__(self, vocab, d_model, layers, heads, max_len):
        super().__init__()
        self.vocab = vocab
        self.max_len = max_len
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        block = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, ids):
        n = ids.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(n)
        x = self.tok(ids) + self.pos(torch.arange(n))
        return self.head(self.norm(self.blocks(x, mask=causal, is_causal=True)))


def group_advantages(group):
    """Per-sequence lists of per-token advantages (same length as tokens) for one Atropos group.

    The env's own `advantages` (a per-token list for every sequence) win when present; else
    GRPO's standardized scores.
    `overrides[i].set_advantage_to_zero` zeroes a sequence, as in Atropos' example trainer.
    """
    tokens, scores = group["tokens"], group["scores"]
    given = group.get("advantages")
    if given and len(given) == len(tokens):
        per_token = [[float(a) for a in adv] + [0.0] * (len(seq) - len(adv))
                     for seq, adv in zip(tokens, given)]
    else:
        mean = sum(scores) / len(scores)
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
        norm = [(s - mean) / max(std, STD_FLOOR) if len(scores) > 1 else float(s) for s in scores]
        per_token = [[a] * len(seq) for a, seq in zip(norm, tokens)]
    for i, o in enumerate(group.get("overrides") or []):
        if o and o.get("set_advantage_to_zero"):
            per_token[i] = [0.0] * len(per_token[i])
    return per_token


def build_inputs(batch, vocab, max_len):
    """Right-padded inputs = tokens[:-1], labels = masks[1:] (-100: no loss), advantages[1:]."""
    rows = []
    for group in batch:
        for seq, mask, adv in zip(group["tokens"], group["masks"], group_advantages(group)):
            seq, mask, adv = seq[:max_len + 1], mask[:max_len + 1], adv[:max_len + 1]
            rows.append((seq[:-1], mask[1:], adv[1:]))
    width = max(1, max(len(r[0]) for r in rows))
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    labels = torch.zeros(len(rows), width, dtype=torch.long)
    trainable = torch.zeros(len(rows), width, dtype=torch.bool)
    advantages = torch.zeros(len(rows), width)
    for r, (inp, lab, adv) in enumerate(rows):
        n = len(inp)
        ids[r, :n] = torch.tensor(inp, dtype=torch.long) % vocab
        lab_t = torch.tensor(lab, dtype=torch.long)
        trainable[r, :n] = lab_t != -100
        labels[r, :n] = torch.where(lab_t == -100, 0, lab_t % vocab)
        advantages[r, :n] = torch.tensor(adv[:n] + [0.0] * (n - len(adv)))
    return ids, labels, trainable, advantages


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
    ap.add_argument("--run", default="default")
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
    api = args.api.rstrip("/")
    base = f"{api}/v1/runs/{args.run}"
    register_url = api if args.run == "default" else f"{api}/runs/{args.run}"

    def call(method, url, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as res:
            raw = res.read()
            return res.status, (json.loads(raw) if raw else None)

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small tensors: threads cost more than they give on a shared box
    model = TinyCausalLM(args.vocab, args.d_model, args.layers, args.heads, args.max_len)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    print(f"model: {sum(p.numel() for p in model.parameters())} parameters, "
          f"checksum {checksum(model)}", flush=True)

    call("POST", f"{register_url}/register", {
        "wandb_group": "torch", "wandb_project": "torch", "batch_size": args.batch_size,
        "max_token_len": args.max_len, "checkpoint_dir": "ckpt", "save_checkpoint_interval": 0,
        "starting_step": 0, "num_steps": args.steps,
    })
    version = 0
    for _ in range(args.steps):
        deadline = time.monotonic() + args.wait
        while True:
            status, leased = call("POST", f"{base}/batches/lease", {"lease_seconds": 120})
            if status == 200:
                break
            if time.monotonic() > deadline:  # 204: the X-Atropos-Edge-Reason header says why
                raise SystemExit(f"no batch within {args.wait:g} s: is an env submitting groups?")
            time.sleep(0.5)
        batch = leased["batch"]
        ids, labels, trainable, advantages = build_inputs(batch, args.vocab, args.max_len)
        model.train()
        opt.zero_grad()
        label_logp = label_logprobs(model, ids, labels)
        loss = grpo_loss(label_logp, trainable, advantages)
        margin_before = margin(label_logp.detach(), trainable, advantages)
        if not math.isfinite(loss.item()):
            raise SystemExit(f"step {leased['step']}: loss is {loss.item()}, not stepping")
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        with torch.no_grad():  # the same batch after the step
            margin_after = margin(label_logprobs(model, ids, labels), trainable, advantages)
        staleness = max(version - g["policy_version"] for g in leased["groups"])
        # The weights changed: announce them before acking, so groups sampled from now on are
        # stamped with the new version. A fresh trainer's first announcement resets the run's.
        version += 1
        announce = {"version": version, **({"reset": True} if version == 1 else {})}
        call("POST", f"{base}/policy", announce)
        call("POST", f"{base}/batches/{leased['batch_id']}/ack", {"lease_id": leased["lease_id"]})
        env_adv = sum(1 for g in batch if g.get("advantages"))
        print(f"step {leased['step']}: {ids.shape[0]} sequences, {int(trainable.sum())} trainable "
              f"tokens, {env_adv} groups with env advantages, "
              f"loss {loss.item():.6f}, grad norm {grad_norm:.6f}, "
              f"logp margin {margin_before:.6f} -> {margin_after:.6f}, "
              f"max staleness {staleness}", flush=True)
    print(f"done: {args.steps} steps, checksum {checksum(model)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
