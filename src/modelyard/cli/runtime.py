"""What every long-running command shares: the event loop and the HTTP server settings."""

from __future__ import annotations

import argparse
import asyncio
import resource
import socket
import sys
from collections.abc import Coroutine
from typing import Any

import uvicorn

from modelyard.errors import Code, ConfigError
from modelyard.frontdoors.http_connections import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEADER_BYTES,
    BoundedHttpProtocol,
    ConnectionLimits,
    DirectAnswer,
)

# A model's instance thread takes the GIL around each batch (assembling it, and
# again for onnxruntime's outputs) while the event loop, busy with requests,
# holds it; it waits until the holder is asked to let go. At Python's 5 ms the
# MLP of bench/batching.py waited 0.66 ms before each 4.4 ms execution; at
# 100 us, 0.34 ms, and the served rows/s rose 3-8 % (bench/RESULTS.md).
DEFAULT_GIL_SWITCH_INTERVAL_US = 100
# Python keeps the interval in microseconds in a C long: far larger values wrap
# (1e14 s reads back as 0), and nothing is gained past a second
MAX_GIL_SWITCH_INTERVAL_US = 1_000_000


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
        raise ConfigError(
            f"--gil-switch-interval-us must be between 1 and {MAX_GIL_SWITCH_INTERVAL_US} "
            f"microseconds, got {microseconds}",
            code=Code.INVALID_ARGUMENT,
            rule="serve/gil-switch-interval",
            where=f"modelyard serve --gil-switch-interval-us "
            f"(default {DEFAULT_GIL_SWITCH_INTERVAL_US})",
        )
    sys.setswitchinterval(microseconds / 1e6)


def add_listen_arguments(parser: argparse.ArgumentParser) -> None:
    """The address and the HTTP and gRPC ports a serving command listens on."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--http-port", type=int, default=8000)
    parser.add_argument(
        "--grpc-port", type=int, default=8001, help="gRPC port (0: any free port, -1: no gRPC)"
    )


def add_http_arguments(parser: argparse.ArgumentParser) -> None:
    """The HTTP port's bounds on connections, shared by every command that serves HTTP."""
    parser.add_argument(
        "--http-max-connections",
        type=int,
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help="open HTTP connections before a new one is answered 503 and closed",
    )
    parser.add_argument(
        "--http-idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT_S,
        metavar="S",
        help="seconds a connection may wait for its next request before it is closed",
    )
    parser.add_argument(
        "--http-header-timeout",
        type=float,
        default=DEFAULT_HEADER_TIMEOUT_S,
        metavar="S",
        help="seconds from a request's first byte to the end of its headers (408 past it)",
    )
    parser.add_argument(
        "--http-body-timeout",
        type=float,
        default=DEFAULT_BODY_TIMEOUT_S,
        metavar="S",
        help="seconds from a request's headers to the end of its body (408 past it)",
    )
    parser.add_argument(
        "--http-max-header-bytes",
        type=int,
        default=DEFAULT_MAX_HEADER_BYTES,
        metavar="N",
        help="largest request line and header block (431 past it)",
    )
    parser.add_argument(
        "--embedding-model",
        default=None,
        metavar="NAME",
        help="the text model text-embeddings-inference's POST /embed uses (OpenAI's "
        "POST /v1/embeddings names its model itself)",
    )


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


def listen_http(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    """The HTTP port's socket, bound here so a port in use gets its error line; with
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
        raise ConfigError(
            f"cannot listen for HTTP on {address}: {exc.strerror or exc}",
            code=Code.UNAVAILABLE,
            rule="config/http-port",
            where="--http-port (another process may hold it)",
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
