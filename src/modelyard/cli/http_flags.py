"""The flags of every command that serves HTTP (serve, gateway): where it listens and
what one connection may hold. Light: a command's argument errors load no server."""

from __future__ import annotations

import argparse

from modelyard.frontdoors.bounds import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEADER_BYTES,
)


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
