"""A real GRPO trainer on CPU: the weights the llama.cpp engine serves, trained and sent back.

    # a tiny model from a config (random init, no download) with a bundled tokenizer
    python examples/python/grpo_real_trainer.py make --tokenizer test/fixtures/tokenizers/tiny --out M
    # optional supervised warm start on the env's training split (JSONL of {"prompt", "completion"})
    python examples/python/grpo_real_trainer.py warmstart --model M --data train.jsonl --lr 3e-3 \\
        --steps 1500 --until-accuracy 0.3
    # serve M as GGUF (`atropos-edge engine convert M M.gguf`, then `atropos-edge start --engine M.gguf
    # --trainer-command ...`), and train: lease → clipped GRPO step → every N steps push → ack
    python examples/python/grpo_real_trainer.py train --model M --engine http://127.0.0.1:PORT \\
        --api "$ATROPOS_EDGE_API_URL" --steps 40 --push-every 2

`train` leases batches (atropos_edge.TrainerClient), takes one AdamW step per batch on the clipped
token-level GRPO loss against the batch's own inference logprobs (atropos_edge.grpo), and every
`--push-every` steps writes the weights (save_pretrained → GGUF) and has the engine load them
(`POST /update_weights_from_disk`), then announces the step as the run's policy version: groups
sampled later say which weights made them, so staleness is the real lag in trainer steps. Each
step prints one JSON line (`--metrics-out` keeps them) and reports them to the run's metrics
store, so the dashboard draws them.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from transformers import AutoModelForCausalLM, Qwen2Config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
try:
    from atropos_edge import TrainerClient
    from atropos_edge.grpo import WeightPusher, batch_loss, checksum
except ImportError:  # a checkout without `pip install './python[torch]'`
    sys.path.insert(0, str(ROOT / "python"))
    from atropos_edge import TrainerClient
    from atropos_edge.grpo import WeightPusher, batch_loss, checksum

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def vocab_size(tokenizer_dir: Path) -> int:
    return int(
        Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json")).get_vocab_size(with_added_tokens=True)
    )


def make(args: argparse.Namespace) -> None:
    """A Qwen2-architecture model from a config, random weights (seeded), tokenizer beside it."""
    tokenizer_dir = Path(args.tokenizer)
    config = Qwen2Config(
        vocab_size=vocab_size(tokenizer_dir),
        hidden_size=args.hidden,
        intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=True,
    )
    torch.manual_seed(args.seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(args.out, safe_serialization=True)
    for name in TOKENIZER_FILES:
        shutil.copy(tokenizer_dir / name, Path(args.out) / name)
    print(json.dumps({"made": args.out, "parameters": sum(p.numel() for p in model.parameters())}))


def load(model_dir: str) -> Any:
    torch.set_num_threads(1)  # tiny tensors: more threads cost more than they give on a shared box
    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)


def save(model: Any, src: str, out: str) -> None:
    model.save_pretrained(out, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if Path(src, name).is_file() and Path(src).resolve() != Path(out).resolve():
            shutil.copy(Path(src, name), Path(out, name))


def greedy_accuracy(model: Any, pairs: list[tuple[list[int], list[int]]]) -> float:
    """Exact greedy completions (as many tokens as each answer has), prompts batched by length."""
    model.eval()
    right = 0
    by_length: dict[tuple[int, int], list[tuple[list[int], list[int]]]] = {}
    for p, c in pairs:
        by_length.setdefault((len(p), len(c)), []).append((p, c))
    with torch.no_grad():
        for (_, width), group in by_length.items():
            ids = torch.tensor([p for p, _ in group])
            for _ in range(width):
                ids = torch.cat([ids, model(input_ids=ids).logits[:, -1].argmax(-1, keepdim=True)], 1)
            right += sum(got == c for got, (_, c) in zip(ids[:, -width:].tolist(), group, strict=True))
    model.train()
    return right / max(1, len(pairs))


def warmstart(args: argparse.Namespace) -> None:
    """Supervised steps on prompt → completion pairs (loss on the completion only).

    With --until-accuracy the warm start stops once greedy accuracy on 200 of its own pairs reaches
    that value (checked every 10 steps; the learning rate decays over --steps, which caps it): a
    partly trained model whatever the seed, so RL's groups have mixed rewards."""
    tokenizer = Tokenizer.from_file(str(Path(args.model) / "tokenizer.json"))
    pairs = [json.loads(line) for line in Path(args.data).read_text().splitlines() if line.strip()]
    encoded = [(tokenizer.encode(p["prompt"]).ids, tokenizer.encode(p["completion"]).ids) for p in pairs]
    model = load(args.model)
    model.train()
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    until = args.until_accuracy
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1 - i / args.steps)
    probe = rng.sample(encoded, min(200, len(encoded)))
    started = time.monotonic()
    accuracy = None
    for step in range(1, args.steps + 1):
        chosen = rng.sample(encoded, min(args.batch, len(encoded)))
        width = max(len(p) + len(c) for p, c in chosen)
        ids = torch.zeros((len(chosen), width), dtype=torch.long)
        labels = torch.full((len(chosen), width), -100, dtype=torch.long)
        attention = torch.zeros((len(chosen), width), dtype=torch.long)
        for i, (p, c) in enumerate(chosen):
            seq = p + c
            ids[i, : len(seq)] = torch.tensor(seq)
            labels[i, len(p) : len(seq)] = torch.tensor(c)
            attention[i, : len(seq)] = 1
        loss = model(input_ids=ids, attention_mask=attention, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if until and step % 10 == 0:
            accuracy = greedy_accuracy(model, probe)
            print(
                json.dumps({"warmstart_step": step, "loss": round(loss.item(), 4), "accuracy": accuracy}),
                flush=True,
            )
            if accuracy >= until:
                break
        elif step % 50 == 0 or step == args.steps:
            print(json.dumps({"warmstart_step": step, "loss": round(loss.item(), 4)}), flush=True)
    save(model, args.model, args.out or args.model)
    done = {
        "warmstart_steps": step,
        "accuracy": accuracy,
        "warmstart_seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(done), flush=True)


def converter() -> Any:
    sys.path.insert(0, str(ROOT / "src" / "engine" / "python"))
    from hf_to_gguf import convert

    return lambda hf_dir, out: convert(hf_dir, out)


def report(
    client: TrainerClient, env_ids: set[int], step: int, version: int, values: dict[str, float]
) -> None:
    """The step's trainer metrics into the run's metrics store (the dashboard's env metric charts)."""
    body = {"step": step, "kind": "env", "policy_version": version, "metrics": values}
    for env_id in sorted(env_ids):
        client.http.request("POST", f"/v1/runs/{client.run}/envs/{env_id}/metrics", body)


def train(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    model = load(args.model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    client = TrainerClient(args.api, token=args.token, run=args.run)
    workdir = Path(args.workdir or Path(args.model).parent / f"{Path(args.model).name}-pushes")
    workdir.mkdir(parents=True, exist_ok=True)
    pusher = WeightPusher(args.engine, workdir, converter(), client)
    client.register(batch_size=args.batch_size, max_token_len=args.max_len, num_steps=args.steps)
    out = open(args.metrics_out, "w") if args.metrics_out else None
    print(
        json.dumps({"start": checksum(model), "parameters": sum(p.numel() for p in model.parameters())}),
        flush=True,
    )
    # The engine serves the starting weights as version 0 until the first push.
    version = 0
    client.set_policy_version(0, reset=True)
    started = time.monotonic()
    acked: list[str] = []
    step = 0
    for batch in client.batches(
        lease_seconds=args.lease_seconds, max_batches=args.steps, timeout=args.wait, poll_interval=0.2
    ):
        step += 1
        tensors = batch.to_tensors(pad_token_id=0, max_length=args.max_len)
        model.train()
        loss, stats = batch_loss(model, tensors, args.clip)
        if not torch.isfinite(loss):
            # Raising leaves the batch unacked: its lease lapses and it is delivered again.
            raise SystemExit(f"step {step}: loss is {loss.item()}, not stepping")
        opt.zero_grad()
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        # Optimizer steps between the weights that sampled each group and the ones trained now.
        stale = batch.staleness(step - 1)
        scores = batch.scores()
        pushed = None
        if step % args.push_every == 0 or step == args.steps:
            push = pusher.push(model, step, tokenizer_dir=args.model)
            version = step
            pushed = round(push.seconds, 2)
        record = {
            "step": step,
            "batch_id": batch.batch_id,
            "redelivered": batch.redelivered,
            "sequences": batch.num_sequences,
            "reward_mean": sum(scores) / len(scores),
            "accuracy": sum(1 for s in scores if s >= 1) / len(scores),
            "staleness_mean": sum(stale) / len(stale),
            "staleness_max": max(stale),
            "loss": loss.item(),
            "grad_norm": grad_norm,
            "tokens": stats.tokens,
            "mean_ratio": stats.mean_ratio,
            "clip_fraction": stats.clip_fraction,
            "max_abs_log_ratio": stats.max_abs_log_ratio,
            "weight_version": version,
            "push_seconds": pushed,
            "seconds": round(time.monotonic() - started, 2),
        }
        env_ids = {int(g["env_id"]) for g in batch.manifest if g.get("env_id") is not None}
        report(
            client,
            env_ids,
            batch.step,
            version,
            # `…_mean` names: the dashboard's Curves page draws one chart per such env metric.
            {
                "trainer/loss_mean": record["loss"],
                "trainer/clip_fraction_mean": stats.clip_fraction,
                "trainer/importance_ratio_mean": stats.mean_ratio,
                "trainer/weight_version_mean": float(version),
                **({"trainer/push_seconds_mean": float(pushed)} if pushed is not None else {}),
            },
        )
        line = json.dumps(record)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
        acked.append(batch.batch_id)  # the loop acks it when this body ends
    if out:
        out.close()
    # The last batch was acked when the loop asked for one more; none was left unacked.
    print(
        json.dumps({"done": step, "end": checksum(model), "acked": len(acked), "unique": len(set(acked))}),
        flush=True,
    )
    if args.save:
        save(model, args.model, args.save)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make", help="a random tiny model from a config")
    m.add_argument("--tokenizer", required=True, help="a directory with tokenizer.json")
    m.add_argument("--out", required=True)
    m.add_argument("--hidden", type=int, default=128)
    m.add_argument("--layers", type=int, default=2)
    m.add_argument("--seed", type=int, default=0)
    w = sub.add_parser("warmstart", help="supervised steps on {prompt, completion} JSONL")
    w.add_argument("--model", required=True)
    w.add_argument("--data", required=True)
    w.add_argument("--out", help="default: overwrite --model")
    w.add_argument("--steps", type=int, default=400)
    w.add_argument("--batch", type=int, default=64)
    w.add_argument("--lr", type=float, default=1e-2)
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--until-accuracy", type=float, default=None, help="stop at this train accuracy")
    t = sub.add_parser("train", help="GRPO on leased batches, weights pushed to the engine")
    t.add_argument("--model", required=True, help="the HF directory the engine's GGUF came from")
    t.add_argument("--engine", required=True, help="the engine's URL (no /v1)")
    t.add_argument("--api", default=None, help="default: $ATROPOS_EDGE_API_URL")
    t.add_argument("--run", default="default")
    t.add_argument("--token", default=None)
    t.add_argument("--steps", type=int, default=40)
    t.add_argument("--batch-size", type=int, default=64, help="sequences per batch (registered)")
    t.add_argument("--push-every", type=int, default=2)
    t.add_argument("--lr", type=float, default=5e-4)
    t.add_argument("--clip", type=float, default=0.2)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--max-len", type=int, default=256)
    t.add_argument("--lease-seconds", type=float, default=120)
    t.add_argument("--wait", type=float, default=120, help="seconds to wait for a batch")
    t.add_argument("--workdir", help="checkpoints and GGUF files (default: beside --model)")
    t.add_argument("--metrics-out", help="also write the per-step JSON lines here")
    t.add_argument("--save", help="save the final weights here (HF directory)")
    args = ap.parse_args(argv)
    if args.command == "make":
        make(args)
    elif args.command == "warmstart":
        warmstart(args)
    else:
        import os

        args.api = args.api or os.environ.get("ATROPOS_EDGE_API_URL") or "http://127.0.0.1:8787"
        train(args)


if __name__ == "__main__":
    main()
