"""Behaves like Atropos' example trainer (stdlib only).
  register URL BATCH_SIZE   POST /register
  drain URL                 GET /batch until {"batch": null} (asking for gzip, as requests does);
                            check the keys a trainer indexes; print every received group as JSON."""
import gzip
import json
import sys
import urllib.request

MODE, BASE = sys.argv[1], sys.argv[2].rstrip("/")
KEYS = ("tokens", "masks", "scores", "overrides", "inference_logprobs")


gzipped = 0


def call(method, path, body=None):
    global gzipped
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Accept-Encoding": "gzip"}
    if data:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=30) as res:
        raw = res.read()
        if res.headers.get("Content-Encoding") == "gzip":
            gzipped += 1
            raw = gzip.decompress(raw)
        return json.loads(raw)


if MODE == "register":
    answer = call("POST", "/register", {
        "wandb_group": "g", "wandb_project": "p", "batch_size": int(sys.argv[3]),
        "max_token_len": 2048, "checkpoint_dir": "ckpt", "save_checkpoint_interval": 10,
        "starting_step": 0, "num_steps": 10,
    })
    print(json.dumps(answer))
elif MODE == "drain":
    received, batches = [], 0
    for _ in range(1000):  # bounded
        batch = call("GET", "/batch")["batch"]
        if batch is None:
            break
        batches += 1
        for group in batch:
            for key in KEYS:
                if key not in group:
                    raise SystemExit(f"group lacks {key!r}: {sorted(group)}")
            n = len(group["tokens"])
            if not (len(group["masks"]) == len(group["scores"]) == len(group["inference_logprobs"]) == n):
                raise SystemExit("group lists do not line up")
            received.append(group)
    print(json.dumps({"batches": batches, "gzipped": gzipped, "received": received}))
