"""Starts the original Atropos API server as its `run-api` does, and says what it runs on.

`uvicorn.run("atroposlib.api:app", host=..., port=...)` with uvicorn's defaults (loop "auto",
http "auto": uvloop and httptools when installed, as `uvicorn[standard]` installs them). The only
difference is a Server subclass that prints, from inside the server's own process, one JSON line
once it listens (the running event loop's class, the HTTP protocol class) and one once it has
served a connection (that connection's protocol class), so bench:api can refuse a weaker baseline.

    PYTHONPATH=ATROPOS_CHECKOUT python bench/atropos_server.py PORT
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys

import uvicorn


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class _FirstConnection(set[asyncio.Protocol]):
    """uvicorn's set of open connections; says which protocol class served the first one."""

    reported = False

    def add(self, protocol: asyncio.Protocol) -> None:
        if not self.reported:
            self.reported = True
            print(json.dumps({"connection": {"http": _name(type(protocol))}}), flush=True)
        super().add(protocol)


class ReportingServer(uvicorn.Server):
    """uvicorn.Server that reports the loop and the protocol it actually uses."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.server_state.connections = _FirstConnection()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        loop = asyncio.get_running_loop()
        line = {"loop": _name(type(loop)), "http": _name(self.config.http_protocol_class)}
        print(json.dumps({"started": line}), flush=True)


def main() -> None:
    port = int(sys.argv[1])
    # uvicorn's defaults otherwise, as run-api: info logging with the access log on.
    config = uvicorn.Config("atroposlib.api:app", host="127.0.0.1", port=port)
    ReportingServer(config).run()


if __name__ == "__main__":
    main()
