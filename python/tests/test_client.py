"""TrainerClient against a scripted loopback server: the wire, typed errors, retries, the iterator."""

from __future__ import annotations

import socket

import pytest

from atropos_edge import (
    ApiConnectionError,
    BadRequestError,
    Batch,
    BatchTimeoutError,
    ConflictError,
    RateLimitError,
    ServerError,
    TrainerClient,
    ValidationError,
)
from atropos_edge.http import HttpTransport

from conftest import Answer, FakeApi, lease_answer, make_group


def client(api: FakeApi, **kw: object) -> tuple[TrainerClient, list[float]]:
    slept: list[float] = []
    c = TrainerClient(api.url, run=str(kw.pop("run", "default")), sleep=slept.append, **kw)  # type: ignore[arg-type]
    return c, slept


def test_register_fills_atropos_fields_and_uses_the_runs_path(api: FakeApi) -> None:
    api.script = [Answer(200, {"uuid": "u1"}), Answer(200, {"uuid": "u2"})]
    c, _ = client(api)
    assert c.register(8, 2048, num_steps=3, wandb_project="mine") == {"uuid": "u1"}
    assert api.seen[0].path == "/register"
    assert api.seen[0].body == {
        "wandb_group": "atropos-edge",
        "wandb_project": "mine",
        "checkpoint_dir": "checkpoints",
        "save_checkpoint_interval": -1,
        "starting_step": 0,
        "batch_size": 8,
        "max_token_len": 2048,
        "num_steps": 3,
    }
    c2, _ = client(api, run="math v2", token="aet_x")
    c2.register(4, 512)
    assert api.seen[1].path == "/runs/math%20v2/register"
    assert api.seen[1].headers["authorization"] == "Bearer aet_x"


def test_lease_asks_for_gzip_and_merges_each_groups_policy_version(api: FakeApi) -> None:
    groups = [make_group(1), make_group(2)]
    api.script = [Answer(200, lease_answer(groups, versions=[3, 5]), gzip=True)]
    c, _ = client(api, run="r1")
    batch = c.lease(lease_seconds=30, max_staleness=2)
    assert batch is not None
    seen = api.seen[0]
    assert (seen.method, seen.path) == ("POST", "/v1/runs/r1/batches/lease")
    assert seen.body == {"lease_seconds": 30, "max_staleness": 2}
    assert "gzip" in seen.headers["accept-encoding"]
    assert (batch.batch_id, batch.lease_id, batch.step, batch.redelivered) == ("b1", "l1", 1, False)
    assert [g["policy_version"] for g in batch.groups] == [3, 5]
    assert batch.groups[0]["tokens"] == groups[0]["tokens"]
    assert batch.num_sequences == 8
    assert batch.staleness(6) == [3, 1]


def test_no_batch_is_none_with_the_servers_reason(api: FakeApi) -> None:
    api.script = [Answer(204, headers={"X-Atropos-Edge-Reason": "queue has 3 of 8 sequences"})]
    c, _ = client(api)
    assert c.lease() is None
    assert c.last_reason == "queue has 3 of 8 sequences"


def test_ack_sends_the_lease_id_and_a_409_is_a_conflict_with_message_and_request_id(api: FakeApi) -> None:
    api.script = [
        Answer(200, lease_answer([make_group(1)], batch_id="b/7", lease_id="lease-9")),
        Answer(
            409,
            {
                "detail": "lease expired",
                "error": {
                    "code": "CONFLICT",
                    "message": "lease lease-9 expired; batch b/7 was leased again",
                    "request_id": "rid-1",
                },
            },
        ),
    ]
    c, slept = client(api)
    batch = c.lease()
    assert batch is not None
    with pytest.raises(ConflictError) as info:
        batch.ack()
    assert api.seen[1].path == "/v1/runs/default/batches/b%2F7/ack"
    assert api.seen[1].body == {"lease_id": "lease-9"}
    err = info.value
    assert (err.status, err.code, err.request_id) == (409, "CONFLICT", "rid-1")
    assert "batch b/7 was leased again" in str(err) and "rid-1" in str(err)
    assert slept == []  # a 4xx is not retried
    assert not batch.acked


def test_422_is_a_validation_error_with_fastapi_detail(api: FakeApi) -> None:
    detail = [
        {
            "type": "value_error",
            "loc": ["body", "lease_seconds"],
            "msg": "lease_seconds must be between 1 and 86400",
        }
    ]
    api.script = [
        Answer(
            422,
            {
                "detail": detail,
                "error": {
                    "code": "VALIDATION_FAILED",
                    "message": "lease_seconds must be between 1 and 86400",
                    "request_id": "r2",
                },
            },
        )
    ]
    c, _ = client(api)
    with pytest.raises(ValidationError) as info:
        c.lease(lease_seconds=0)
    assert info.value.body["detail"] == detail
    assert "lease_seconds must be between 1 and 86400" in str(info.value)


def test_400_without_the_projects_error_body_still_carries_the_header_request_id(api: FakeApi) -> None:
    api.script = [Answer(400, {"detail": "body is not JSON"}, headers={"X-Request-Id": "hdr-3"})]
    c, slept = client(api)
    with pytest.raises(BadRequestError) as info:
        c.set_policy_version(1)
    assert (info.value.message, info.value.request_id) == ("body is not JSON", "hdr-3")
    assert slept == []


def test_5xx_and_dropped_connections_are_retried_with_backoff_then_succeed(api: FakeApi) -> None:
    api.script = [Answer(503, {"detail": "busy"}), Answer(drop=True), Answer(200, {"policy_version": 4})]
    c, slept = client(api, backoff=0.5, max_backoff=1.0)
    assert c.set_policy_version(4, reset=True) == {"policy_version": 4}
    assert [s.body for s in api.seen] == [{"version": 4, "reset": True}] * 3
    # One request id for every attempt, so the server's log lines of the retries go together.
    assert len({s.headers["x-request-id"] for s in api.seen}) == 1
    assert len(slept) == 2
    assert 0.25 <= slept[0] <= 0.5 and 0.5 <= slept[1] <= 1.0  # exponential with jitter, capped


def test_retries_are_bounded_and_the_last_status_is_raised(api: FakeApi) -> None:
    api.script = [
        Answer(502),
        Answer(502),
        Answer(500, {"error": {"code": "INTERNAL", "message": "boom", "request_id": "r9"}}),
    ]
    c, slept = client(api, attempts=3)
    with pytest.raises(ServerError) as info:
        c.lease()
    assert (info.value.status, info.value.request_id) == (500, "r9")
    assert len(api.seen) == 3 and len(slept) == 2


def test_429_honours_retry_after_then_raises_rate_limit(api: FakeApi) -> None:
    api.script = [Answer(429, {"detail": "slow down"}, headers={"Retry-After": "2"})] * 2
    c, slept = client(api, attempts=2, max_backoff=10)
    with pytest.raises(RateLimitError):
        c.stats()
    assert slept == [2.0]


def test_unreachable_api_is_a_connection_error_after_the_attempts() -> None:
    # Bound but not listening for the whole test: connections are refused, and no one else
    # can take the port meanwhile.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        slept: list[float] = []
        c = TrainerClient(f"http://127.0.0.1:{port}", attempts=3, sleep=slept.append)
        with pytest.raises(ApiConnectionError) as info:
            c.lease()
    assert info.value.attempts == 3 and len(slept) == 2
    assert "npm run dev" in str(info.value)


def test_batches_acks_after_a_normal_body_and_not_after_a_raise(api: FakeApi) -> None:
    leases = iter(
        [
            lease_answer([make_group(1)], batch_id="b1", lease_id="l1", step=1),
            lease_answer([make_group(2)], batch_id="b2", lease_id="l2", step=2),
            lease_answer([make_group(2)], batch_id="b2", lease_id="l3", step=2),
        ]
    )

    def route(seen):  # type: ignore[no-untyped-def]
        if seen.path.endswith("/lease"):
            return Answer(200, next(leases))
        return Answer(200, {"status": "acked"})

    api.route = route
    c, _ = client(api)
    steps = []
    with pytest.raises(RuntimeError, match="step 2 failed"):
        for batch in c.batches(max_batches=5):
            steps.append(batch.step)
            if batch.step == 2:
                raise RuntimeError("step 2 failed")
    acks = [(s.path, s.body) for s in api.seen if s.path.endswith("/ack")]
    assert steps == [1, 2]
    assert acks == [("/v1/runs/default/batches/b1/ack", {"lease_id": "l1"})]

    # Bounded by max_batches; a batch the body acked itself is not acked again.
    api.seen.clear()
    got = []
    for batch in c.batches(max_batches=1):
        got.append(batch.batch_id)
        batch.ack()
    assert got == ["b2"]
    assert [s.body for s in api.seen if s.path.endswith("/ack")] == [{"lease_id": "l3"}]


def test_waiting_for_a_batch_polls_and_times_out_with_the_reason(api: FakeApi) -> None:
    api.route = lambda seen: Answer(204, headers={"X-Atropos-Edge-Reason": "no groups queued"})
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    c = TrainerClient(api.url, sleep=sleep, clock=lambda: now[0])
    with pytest.raises(BatchTimeoutError) as info:
        next(c.batches(timeout=5, poll_interval=1))
    assert info.value.reason == "no groups queued"
    assert len(api.seen) == 6  # t = 0, 1, …, 5


def test_a_request_that_is_not_safe_to_repeat_is_sent_once(api: FakeApi) -> None:
    api.script = [Answer(drop=True), Answer(200, {})]
    slept: list[float] = []
    transport = HttpTransport(api.url, sleep=slept.append)
    with pytest.raises(ApiConnectionError) as info:
        transport.request("POST", "/scored_data", {"tokens": []}, idempotent=False)
    assert info.value.attempts == 1 and len(api.seen) == 1 and slept == []


def test_a_batch_not_leased_through_a_client_cannot_be_acked() -> None:
    batch = Batch.from_lease(lease_answer([make_group(1)]))
    with pytest.raises(RuntimeError, match="not leased through a TrainerClient"):
        batch.ack()
