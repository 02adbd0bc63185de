"""The atropos_edge package against a real API: errors in Python terms, the batches() loop.
package_client.py URL RUN   prints JSON: what was leased and acked, and the errors raised."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
from atropos_edge import ConflictError, TrainerClient, ValidationError

url, run = sys.argv[1], sys.argv[2]
client = TrainerClient(url, run=run)
out = {}
try:
    client.lease(lease_seconds=0)
except ValidationError as e:
    out["validation"] = {"status": e.status, "code": e.code, "message": e.message, "request_id": e.request_id}
client.set_policy_version(5, reset=True)
try:
    client.set_policy_version(2)
except ConflictError as e:
    out["conflict"] = {"status": e.status, "code": e.code, "message": e.message, "request_id": e.request_id}
leased = []
for batch in client.batches(max_batches=2, timeout=30, poll_interval=0.2):
    leased.append(
        {
            "step": batch.step,
            "sequences": batch.num_sequences,
            "versions": sorted({g["policy_version"] for g in batch.groups}),
            "scores": batch.scores(),
        }
    )
out["leased"] = leased
out["after"] = client.lease() is None and client.last_reason
print(json.dumps(out))
