"""An exactly-once Python trainer loop against atropos-edge (stdlib only).

    python3 examples/python/lease_trainer.py [API_URL] [STEPS] [BATCH_SIZE]

Registers as Atropos' trainers do, then per step: lease a batch, read each group's policy version
from the lease's "groups" list (staleness), train (left to you), announce the new policy version,
ack. An unacked lease expires and its batch is delivered again, so a crash loses nothing.
Run `npm start` or `npm run dev` plus an env (`npx atropos-edge serve --env letter_counting`).
"""
import json
import sys
import time
import urllib.request

API = sys.argv[1].rstrip("/") if len(sys.argv) > 1 else "http://127.0.0.1:8787"
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
BATCH_SIZE = int(sys.argv[3]) if len(sys.argv) > 3 else 32
RUN = "default"


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(API + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as res:
        raw = res.read()
        return res.status, (json.loads(raw) if raw else None)


call("POST", "/register", {
    "wandb_group": "demo", "wandb_project": "demo", "batch_size": BATCH_SIZE, "max_token_len": 2048,
    "checkpoint_dir": "ckpt", "save_checkpoint_interval": 0, "starting_step": 0, "num_steps": STEPS,
})
version = 0
for step in range(STEPS):
    for _ in range(600):  # bounded: give up after ~5 minutes without data
        status, leased = call("POST", f"/v1/runs/{RUN}/batches/lease", {"lease_seconds": 120})
        if status == 200:
            break
        time.sleep(0.5)  # 204: no batch yet (the X-Atropos-Edge-Reason header says why)
    else:
        raise SystemExit("no batch within 5 minutes: is an env submitting groups?")
    staleness = [version - g["policy_version"] for g in leased["groups"]]
    seqs = sum(len(g["tokens"]) for g in leased["batch"])
    print(f"step {leased['step']}: {seqs} sequences, max staleness {max(staleness)}", flush=True)
    # ... compute advantages from g["scores"], train on g["tokens"] / g["masks"] ...
    version += 1
    # Versions only move forward; this trainer counts from 0, so its first announcement says it
    # restarted (the run may remember a higher version from an earlier trainer).
    call("POST", f"/v1/runs/{RUN}/policy", {"version": version, "reset": version == 1})
    call("POST", f"/v1/runs/{RUN}/batches/{leased['batch_id']}/ack", {"lease_id": leased["lease_id"]})
