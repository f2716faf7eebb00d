"""A gateway process that stops hands its port over instead of closing it on its callers.

A service's gateway runs as several processes sharing one port (SO_REUSEPORT):
the kernel spreads new connections over the processes that listen, and one
that exits leaves the others listening. On SIGTERM a process

1. waits (``successor_wait``) until another process listens on its port
   (``listeners``, read from the kernel's socket table), so the port is never
   without a listener;
2. stops accepting, and answers every request on its open connections with
   ``Connection: close`` (``ClosingApp``), so each caller's next request opens a
   connection that lands on a process that stays; a connection idle for the
   whole ``drain_grace`` is closed afterwards;
3. lets the calls in flight finish, then exits.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import structlog
import uvicorn

log = structlog.get_logger("modelyard.gateway")

LISTEN = "0A"  # the kernel's TCP state number for a listening socket


def listeners(port: int, tables: tuple[str, ...] = ("/proc/net/tcp", "/proc/net/tcp6")) -> int:
    """How many sockets listen on TCP ``port`` in this network namespace (any address)."""
    count = 0
    for table in tables:
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if (
                len(fields) > 3
                and fields[3] == LISTEN
                and int(fields[1].rsplit(":", 1)[1], 16) == port
            ):
                count += 1
    return count


class ClosingApp:
    """The front door, asked to say ``Connection: close`` on every answer once draining."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.draining = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if not self.draining or scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def closing(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", ()), (b"connection", b"close")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, closing)


async def hand_over(
    server: uvicorn.Server,
    app: ClosingApp,
    port: int | None,
    own_listeners: int,
    successor_wait: float,
    drain_grace: float,
) -> None:
    """Steps 1 and 2 above; uvicorn's own shutdown then closes what is idle and waits for
    the calls in flight. ``own_listeners``: the sockets this process holds on ``port`` (None:
    it serves none, a standby)."""
    started = time.monotonic()
    deadline = started + successor_wait
    while port is not None and listeners(port) <= own_listeners and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    others = listeners(port) - own_listeners if port is not None else 0
    if port is None or successor_wait <= 0:
        pass  # nothing to hand over, or told not to wait (SIGINT)
    elif others > 0:
        log.info("gateway_handing_over", port=port, others_listening=others,
                 waited_s=round(time.monotonic() - started, 3))  # fmt: skip
    else:
        log.warning("gateway_closing_port", port=port, waited_s=round(successor_wait, 3),
                    hint="no other process listens on the port: new connections are refused "
                    "until one does")  # fmt: skip
    for listening in server.servers:
        listening.close()
    app.draining = True
    for connection in list(server.server_state.connections):
        cycle = getattr(connection, "cycle", None)
        if cycle is not None and not cycle.response_complete:
            cycle.keep_alive = False
    deadline = time.monotonic() + drain_grace
    while server.server_state.connections and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
