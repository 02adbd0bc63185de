"""TrainerClient: the trainer side of the atropos-edge rollout API (standard library only).

Exactly-once delivery: lease a batch, train on it, announce the new policy version, ack. A lease
that is not acked lapses and its batch is delivered again (to this trainer or another), so a
trainer that crashes mid-step loses nothing. The wire is docs/API.md ("Pulling batches").
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from .batch import Batch
from .errors import BatchTimeoutError
from .http import HttpTransport

#: Atropos' /register fields this client fills in when not given.
REGISTRATION_DEFAULTS: dict[str, Any] = {
    "wandb_group": "atropos-edge",
    "wandb_project": "atropos-edge",
    "checkpoint_dir": "checkpoints",
    "save_checkpoint_interval": -1,
    "starting_step": 0,
}


class TrainerClient:
    """A trainer of one run of an atropos-edge API.

    Args:
        base_url: the API, e.g. ``http://127.0.0.1:8787`` (``npm run dev``) or a deployment.
        token: a ``trainer`` (or admin) token; ``None`` for an open local API.
        run: the run to train (``"default"`` is Atropos' root paths).
        attempts, backoff, max_backoff, timeout: retry and timeout settings (see
            :class:`~atropos_edge.http.HttpTransport`).
        sleep, clock: seams for tests (waiting between retries and polls; measuring waits).

    Example::

        client = TrainerClient("http://127.0.0.1:8787", run="math")
        client.register(batch_size=32, max_token_len=2048, num_steps=100)
        for version, batch in enumerate(client.batches(max_batches=100), start=1):
            train_on(batch.to_tensors(pad_token_id=0))
            client.set_policy_version(version, reset=version == 1)
            # leaving the body normally acks the batch; an exception lets its lease lapse
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        run: str = "default",
        *,
        attempts: int = 4,
        backoff: float = 0.25,
        max_backoff: float = 5.0,
        timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.run = run
        self.http = HttpTransport(
            self.base_url,
            token,
            attempts=attempts,
            backoff=backoff,
            max_backoff=max_backoff,
            timeout=timeout,
            sleep=sleep,
        )
        self._sleep = sleep
        self._clock = clock
        #: Why the last lease found no batch (the API's ``X-Atropos-Edge-Reason``).
        self.last_reason: str | None = None

    @property
    def _atropos(self) -> str:
        """Atropos' paths: the root for run ``default``, ``/runs/{run}`` otherwise."""
        return "" if self.run == "default" else f"/runs/{urllib.parse.quote(self.run, safe='')}"

    @property
    def _v1(self) -> str:
        return f"/v1/runs/{urllib.parse.quote(self.run, safe='')}"

    def register(
        self, batch_size: int, max_token_len: int, num_steps: int = 1_000_000, **atropos_fields: Any
    ) -> dict[str, Any]:
        """``POST /register`` as Atropos' trainers do; returns the answer (``{"uuid": …}``).

        ``atropos_fields`` are Atropos' other registration fields (``wandb_group``,
        ``wandb_project``, ``checkpoint_dir``, ``save_checkpoint_interval``, ``starting_step``);
        unset ones get neutral defaults. Groups already queued in the run stay queued.
        """
        body = {
            **REGISTRATION_DEFAULTS,
            **atropos_fields,
            "batch_size": batch_size,
            "max_token_len": max_token_len,
            "num_steps": num_steps,
        }
        answer: dict[str, Any] = self.http.request("POST", f"{self._atropos}/register", body).data
        return answer

    def lease(self, lease_seconds: float = 300, max_staleness: int | None = None) -> Batch | None:
        """Leases the next batch, or returns ``None`` when none is ready (see :attr:`last_reason`).

        Args:
            lease_seconds: how long the batch stays this trainer's without an ack.
            max_staleness: only groups sampled at most this many policy versions ago.
        """
        body: dict[str, Any] = {"lease_seconds": lease_seconds}
        if max_staleness is not None:
            body["max_staleness"] = max_staleness
        res = self.http.request("POST", f"{self._v1}/batches/lease", body)
        if res.status == 204 or res.data is None:
            self.last_reason = res.headers.get("x-atropos-edge-reason", "no batch ready")
            return None
        self.last_reason = None
        return Batch.from_lease(res.data, ack=self._ack)

    def wait_for_batch(
        self,
        lease_seconds: float = 300,
        max_staleness: int | None = None,
        *,
        timeout: float | None = None,
        poll_interval: float = 1.0,
    ) -> Batch:
        """Leases, polling every ``poll_interval`` s until a batch is ready.

        Raises:
            BatchTimeoutError: none within ``timeout`` seconds (``None``: wait indefinitely).
        """
        started = self._clock()
        while True:
            batch = self.lease(lease_seconds, max_staleness)
            if batch is not None:
                return batch
            waited = self._clock() - started
            if timeout is not None and waited >= timeout:
                raise BatchTimeoutError(waited, self.last_reason or "no batch ready")
            self._sleep(poll_interval)

    def _ack(self, batch: Batch) -> dict[str, Any]:
        path = f"{self._v1}/batches/{urllib.parse.quote(batch.batch_id, safe='')}/ack"
        answer: dict[str, Any] = self.http.request("POST", path, {"lease_id": batch.lease_id}).data
        return answer

    def ack(self, batch: Batch) -> dict[str, Any]:
        """Completes ``batch`` (same as ``batch.ack()``); idempotent for the same lease."""
        return batch.ack() if batch._ack is not None else self._ack(batch)

    def set_policy_version(self, version: int, reset: bool = False) -> dict[str, Any]:
        """Announces the trainer's weights: groups sampled from now on carry ``version``.

        Versions only move forward; ``reset=True`` allows a lower one (a trainer that restarted
        its numbering says so on its first announcement). Returns ``{"policy_version": …}``.
        """
        body: dict[str, Any] = {"version": version}
        if reset:
            body["reset"] = True
        answer: dict[str, Any] = self.http.request("POST", f"{self._v1}/policy", body).data
        return answer

    def policy_version(self) -> int:
        """The run's current policy version (``GET /v1/runs/{run}/policy``)."""
        return int(self.http.request("GET", f"{self._v1}/policy").data["policy_version"])

    def stats(self) -> dict[str, Any]:
        """``GET /v1/runs/{run}/stats``: queue depth, rates, step, envs (docs/DASHBOARD.md)."""
        answer: dict[str, Any] = self.http.request("GET", f"{self._v1}/stats").data
        return answer

    def batches(
        self,
        max_staleness: int | None = None,
        lease_seconds: float = 300,
        max_batches: int | None = None,
        *,
        timeout: float | None = None,
        poll_interval: float = 1.0,
    ) -> Iterator[Batch]:
        """Leased batches, one per loop iteration, acked when the loop body finishes normally.

        When the body raises, the batch is not acked: its lease lapses after ``lease_seconds``
        and it is delivered again. ``break`` also leaves it unacked: call ``batch.ack()``
        before breaking out of a finished step. Waits for each batch (``timeout`` seconds at
        most per batch, ``None``: indefinitely) and stops after ``max_batches``.
        """
        delivered = 0
        while max_batches is None or delivered < max_batches:
            batch = self.wait_for_batch(
                lease_seconds, max_staleness, timeout=timeout, poll_interval=poll_interval
            )
            yield batch
            # Only reached when the consumer asks for the next batch: its body finished normally.
            if not batch.acked:
                batch.ack()
            delivered += 1
