"""``modelyard gateway``: the V2 HTTP and gRPC API in front of a whole service.

The gateway resolves ``--service`` in ``--registry`` and forwards every request
through the client SDK, so callers without the SDK get discovery, balancing and
failover. It serves no model itself.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

import structlog

from modelyard.cli.in_process import HttpServer, InProcessServer
from modelyard.cli.registry_option import add_registry_argument
from modelyard.cli.runtime import (
    add_http_arguments,
    add_listen_arguments,
    connection_limits,
    http_config,
    run_event_loop,
)
from modelyard.dataplane import DataPlane
from modelyard.discovery import open_registry, require_registry
from modelyard.frontdoors.grpc import DEFAULT_MAX_MESSAGE_BYTES, GrpcServer, start_grpc_server
from modelyard.frontdoors.http import DEFAULT_MAX_BODY_BYTES, HttpFrontend
from modelyard.hardware.memory import freeze_startup_objects
from modelyard.logging import configure_logging

log = structlog.get_logger("modelyard.gateway")


def add_gateway_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--service", required=True, help="the service to forward to, e.g. com.example.ranker"
    )
    add_registry_argument(parser)
    add_listen_arguments(parser)
    parser.add_argument(
        "--transport",
        choices=["http", "grpc"],
        default="http",
        help="how the gateway talks to the instances",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds a forwarded request may take, retries included, when the caller sets "
        "no gRPC deadline (default: the client's, 30)",
    )
    parser.add_argument(
        "--attempt-timeout",
        type=float,
        default=None,
        metavar="SECS",
        help="seconds one instance may take before the request is tried on another (an "
        "instance whose host stops answering); default: an attempt may take the whole timeout",
    )
    parser.add_argument(
        "--data-center",
        default=None,
        metavar="DC",
        help="forward to the instances of this data centre (their --data-center) while one "
        "of them is healthy, to the others when none is",
    )
    parser.add_argument(
        "--max-attempts", type=int, default=3, help="tries per request, the first included"
    )
    parser.add_argument("--http-max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    parser.add_argument("--grpc-max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES)
    add_http_arguments(parser)
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error", "critical"]
    )


class GatewayServer(InProcessServer):
    """The gateway in this process (see ``in_process``): a registry handle, the client
    that forwards, the front doors. ``args``: the gateway command's flags."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.grpc_port: int | None = None  # once started

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        # the client's HTTP stack costs every other command's start-up: import it here
        from modelyard.client import AsyncClient
        from modelyard.gateway.forward import ForwardingDataPlane

        args = self.args
        options: dict[str, Any] = {"timeout": args.timeout} if args.timeout is not None else {}
        registry = open_registry(args.registry)
        parts.push_async_callback(registry.aclose)
        client = AsyncClient(
            args.service,
            registry,
            transport=args.transport,
            attempt_timeout=args.attempt_timeout,
            data_center=args.data_center,
            max_attempts=args.max_attempts,
            max_message_bytes=args.grpc_max_message_bytes,
            **options,
        )
        require_registry(args.registry)  # the service's instances register into one
        forwarding = ForwardingDataPlane(client)
        dataplane: DataPlane = forwarding
        app = HttpFrontend(dataplane, max_body_bytes=args.http_max_body_bytes)
        config = http_config(app, args.host, args.http_port, connection_limits(args))
        http_socket = self.listen(parts, args.host, args.http_port)
        parts.push_async_callback(forwarding.aclose)  # also after a failed start
        await forwarding.start()
        freeze_startup_objects()
        grpc_server: GrpcServer | None = None
        if args.grpc_port >= 0:
            grpc_server = await start_grpc_server(
                dataplane,
                args.host,
                args.grpc_port,
                max_message_bytes=args.grpc_max_message_bytes,
            )
            parts.push_async_callback(grpc_server.stop)
            self.grpc_port = grpc_server.port
        await self._serve_http(parts, HttpServer(config), [http_socket])
        log.info(
            "gateway_ready",
            service=args.service,
            registry=args.registry,
            http=f"http://{args.host}:{self.http_port}",
            grpc=f"{args.host}:{self.grpc_port}" if grpc_server else None,
            instances=len(client.instances()),
            models=sorted({row["name"] for row in forwarding.manager.index(ready_only=True)}),
        )


async def gateway(args: argparse.Namespace) -> None:
    """Forward until a signal: each part, once started, is stopped in reverse order."""
    async with GatewayServer(args) as server:
        await server.wait()


def gateway_args(argv: list[str]) -> argparse.Namespace:
    """The gateway command's flags as ``modelyard gateway`` reads them, for a
    ``GatewayServer`` started in process."""
    parser = argparse.ArgumentParser(prog="modelyard gateway")
    add_gateway_arguments(parser)
    return parser.parse_args(argv)


def run_gateway(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    run_event_loop(gateway(args))
    return 0
