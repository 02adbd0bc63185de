"""Behaves like Atropos' BaseEnv client (stdlib only): register-env loop, GET /info,
GET /status-env with a JSON body, POST /scored_data gzipped when >= 1024 bytes.
Prints a JSON report of what it sent on stdout."""
import gzip
import json
import sys
import time
import urllib.request

BASE = sys.argv[1].rstrip("/")
GROUPS = int(sys.argv[2])
GROUP_SIZE = 4


def call(method, path, body=None, headers=None):
    data = None
    hdrs = dict(headers or {})
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(BASE + path, data=data, headers=hdrs, method=method)
    with urllib.request.urlopen(req, timeout=30) as res:
        raw = res.read()
        if res.headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        return res.status, json.loads(raw)


def make_group(seed, length):
    tokens = [[(seed * 31 + s * 7 + i) % 5000 for i in range(length)] for s in range(GROUP_SIZE)]
    return {
        "tokens": tokens,
        "masks": [[-100 if i < 2 else t for i, t in enumerate(seq)] for seq in tokens],
        "scores": [1.0 if (seed + s) % 2 == 0 else -1.0 for s in range(GROUP_SIZE)],
        "inference_logprobs": [[1.0 if i < 2 else -0.25 for i in range(length)] for _ in tokens],
        "overrides": [{"seed": seed, "seq": s} for s in range(GROUP_SIZE)],
    }


# Atropos polls /register-env until the trainer has registered.
while True:
    _, reg = call("POST", "/register-env", {
        "max_token_length": 2048, "desired_name": "py_env", "weight": 1.0, "group_size": GROUP_SIZE,
    })
    if reg.get("status") == "success":
        break
    time.sleep(0.2)
env_id = reg["env_id"]
_, info = call("GET", "/info")
# Atropos sends the env id as a JSON body on a GET.
_, status = call("GET", "/status-env", {"env_id": env_id})

sent, gzipped = [], 0
for seed in range(GROUPS):
    group = make_group(seed + 1, 4 if seed % 2 == 0 else 120)
    group["env_id"] = env_id
    body = json.dumps(group).encode()
    headers = {"Content-Type": "application/json"}
    if len(body) >= 1024:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
        gzipped += 1
    code, answer = call("POST", "/scored_data", body, headers)
    assert code == 200 and answer["status"] in ("received", "buffered"), answer
    sent.append(group)

print(json.dumps({"env_id": env_id, "info": info, "status": status, "gzipped": gzipped, "sent": sent}))
