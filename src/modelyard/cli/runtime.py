"""What every long-running command shares: the event loop and the HTTP server settings
(their flags: ``http_flags``)."""

from __future__ import annotations

import argparse
import asyncio
import errno
import resource
import socket
import sys
from collections.abc import Coroutine
from typing import Any

import uvicorn

from modelyard import error_rules
from modelyard.cli.serve_flags import DEFAULT_GIL_SWITCH_INTERVAL_US, MAX_GIL_SWITCH_INTERVAL_US
from modelyard.errors import ConfigError, listen_failure
from modelyard.frontdoors.http_connections import (
    BoundedHttpProtocol,
    ConnectionLimits,
    DirectAnswer,
)


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop where it is installed, else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)


def set_gil_switch_interval(microseconds: int) -> None:
    """How long a thread may keep the GIL while another waits for it."""
    if not 0 < microseconds <= MAX_GIL_SWITCH_INTERVAL_US:
        raise ConfigError.of(
            error_rules.GIL_SWITCH_INTERVAL,
            f"--gil-switch-interval-us must be between 1 and {MAX_GIL_SWITCH_INTERVAL_US} "
            f"microseconds, got {microseconds}",
            where=f"modelyard serve --gil-switch-interval-us "
            f"(default {DEFAULT_GIL_SWITCH_INTERVAL_US})",
        )
    sys.setswitchinterval(microseconds / 1e6)


def connection_limits(args: argparse.Namespace) -> ConnectionLimits:
    return ConnectionLimits(
        max_connections=args.http_max_connections,
        idle_timeout_s=args.http_idle_timeout,
        header_timeout_s=args.http_header_timeout,
        body_timeout_s=args.http_body_timeout,
        max_header_bytes=args.http_max_header_bytes,
    )


def raise_open_file_limit(connections: int) -> None:
    """Let the process hold ``connections`` sockets and its own files (up to the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 1024  # model files, registry, gRPC, logs
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def listen_http(
    host: str, port: int, reuse_port: bool = False, service: str = "HTTP", where: str | None = None
) -> socket.socket:
    """The HTTP port's socket, bound here so a port in use gets its error line (naming
    ``service`` and ``where`` its port is set, for a front door other than the V2 one); with
    ``reuse_port``, shared with the other processes that ask the same (SO_REUSEPORT: the
    kernel spreads new connections over them, and one that exits leaves the others; a
    gateway's processes, tritonserver's --reuse-http-port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        in_use = exc.errno == errno.EADDRINUSE
        raise ConfigError.of(
            error_rules.HTTP_PORT,
            listen_failure(service, address, in_use, exc.strerror or str(exc)),
            where=where,
        ) from None
    return sock


def http_config(
    app: Any,
    host: str,
    port: int,
    limits: ConnectionLimits | None = None,
    direct: DirectAnswer | None = None,
) -> uvicorn.Config:
    """uvicorn as modelyard serves V2: httptools bounded by ``limits``, our loop, no extras;
    ``direct``: the front door's direct path for infer calls (None: all take ``app``)."""
    limits = limits or ConnectionLimits()
    raise_open_file_limit(limits.max_connections)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=BoundedHttpProtocol.with_limits(limits, direct),
        ws="none",
        loop="none",
        lifespan="off",
        access_log=False,
        log_level="warning",
        timeout_keep_alive=limits.idle_timeout_s,  # type: ignore[arg-type]  # a float serves
        proxy_headers=False,
        server_header=False,
        date_header=False,
    )
