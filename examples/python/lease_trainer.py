"""An exactly-once Python trainer loop against atropos-edge (the atropos_edge package, stdlib only).

    pip install ./python    # or run from a checkout: this script finds ../../python itself
    python3 examples/python/lease_trainer.py [API_URL] [STEPS] [BATCH_SIZE] [--run RUN]

Registers as Atropos' trainers do, then per step: lease a batch, read each group's policy version
(staleness) and scores, train (left to you), announce the new policy version; the loop acks the
batch when its body ends. An unacked lease lapses and its batch is delivered again, so a crash
loses nothing. Run `npm start` or `npm run dev` plus an env (`npx atropos-edge serve --env
letter_counting`).
"""

import argparse
import os
import sys
from pathlib import Path

try:
    from atropos_edge import TrainerClient
except ImportError:  # a checkout without `pip install ./python`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    from atropos_edge import TrainerClient


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("api", nargs="?", default="http://127.0.0.1:8787")
    ap.add_argument("steps", nargs="?", type=int, default=3)
    ap.add_argument("batch_size", nargs="?", type=int, default=32)
    ap.add_argument("--run", default="default", help="the run to train (default: Atropos' root paths)")
    ap.add_argument("--token", default=os.environ.get("ATROPOS_EDGE_TOKEN"), help="a trainer token")
    ap.add_argument("--wait", type=float, default=300, help="seconds to wait for each batch")
    args = ap.parse_args()

    client = TrainerClient(args.api, token=args.token, run=args.run)
    client.register(batch_size=args.batch_size, max_token_len=2048, num_steps=args.steps)
    batches = client.batches(lease_seconds=120, max_batches=args.steps, timeout=args.wait, poll_interval=0.5)
    for version, batch in enumerate(batches, start=1):
        scores = batch.scores()
        print(
            f"step {batch.step}: {batch.num_sequences} sequences, "
            f"max staleness {max(batch.staleness(version - 1))}, "
            f"mean score {sum(scores) / len(scores):.3f}",
            flush=True,
        )
        # ... train on batch.groups (or batch.to_tensors(pad_token_id) with the [torch] extra) ...
        # Versions only move forward; this trainer counts from 0, so its first announcement says
        # it restarted (the run may remember a higher version from an earlier trainer).
        client.set_policy_version(version, reset=version == 1)
        # Leaving the body acks the batch; an exception here would leave it to be redelivered.


if __name__ == "__main__":
    main()
