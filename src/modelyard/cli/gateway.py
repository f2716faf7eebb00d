"""``modelyard gateway``: the V2 HTTP and gRPC API in front of a whole service.

The gateway resolves ``--service`` in ``--registry`` and forwards every request
through the client SDK, so callers without the SDK get discovery, balancing and
failover. It serves no model itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time
from pathlib import Path
from typing import Any

import structlog

from modelyard import error_rules
from modelyard.cli.gateway_flags import add_gateway_arguments
from modelyard.cli.in_process import HttpServer, InProcessServer
from modelyard.cli.runtime import connection_limits, http_config, run_event_loop
from modelyard.dataplane import DataPlane
from modelyard.discovery import open_registry, require_registry
from modelyard.errors import ConfigError
from modelyard.frontdoors.grpc import start_grpc_server
from modelyard.frontdoors.http import HttpFrontend
from modelyard.gateway.handover import ClosingApp, hand_over
from modelyard.hardware.memory import freeze_startup_objects
from modelyard.logging import configure_logging

log = structlog.get_logger("modelyard.gateway")


class GatewayServer(InProcessServer):
    """The gateway in this process (see ``in_process``): a registry handle, the client
    that forwards, the front doors. ``args``: the gateway command's flags."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.grpc_port: int | None = None  # once started
        self.status_port: int | None = None  # this process's own port, if asked
        self.shared_port: int | None = None  # the service's port, once this process serves it
        self._promoting: set[asyncio.Future[None]] = set()

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        # the client's HTTP stack costs every other command's start-up: import it here
        from modelyard.client import AsyncClient
        from modelyard.client.instances_cache import default_cache_path
        from modelyard.gateway.forward import ForwardingDataPlane

        args = self.args
        options: dict[str, Any] = {"timeout": args.timeout} if args.timeout is not None else {}
        attempts = dict(args.interface_attempts)  # over the service file's
        cache: Path | None = Path(args.instances_cache)
        if args.instances_cache == "off":
            cache = None
        elif args.instances_cache == "auto":
            cache = default_cache_path(args.service, args.registry)
        registry = open_registry(args.registry)
        parts.push_async_callback(registry.aclose)
        client = AsyncClient(
            args.service,
            registry,
            transport=args.transport,
            attempt_timeout=args.attempt_timeout,
            hedge=args.hedge,
            attempts=attempts,
            service_config=args.service_config,
            data_center=args.data_center,
            max_attempts=args.max_attempts,
            wait_on_rate_limit=False,  # a rate limit's refusal is the caller's, at once
            max_message_bytes=args.grpc_max_message_bytes,
            instances_cache=cache,
            **options,
        )
        require_registry(args.registry)  # the service's instances register into one
        forwarding = ForwardingDataPlane(client)
        dataplane: DataPlane = forwarding
        self.app = ClosingApp(
            HttpFrontend(
                dataplane,
                max_body_bytes=args.http_max_body_bytes,
                embedding_model=args.embedding_model,
            )
        )
        config = http_config(self.app, args.host, args.http_port, connection_limits(args))
        if args.standby and args.status_port < 0:
            raise ConfigError.of(
                error_rules.STANDBY,
                "a standby gateway answers only on its status port until it takes the "
                "service's: it needs one",
            )
        sockets = []
        if not args.standby:
            sockets.append(self.listen(parts, args.host, args.http_port, args.reuse_port))
        if args.status_port >= 0:
            sockets.append(self.listen(parts, "127.0.0.1", args.status_port))
            self.status_port = sockets[-1].getsockname()[1]
        self.forwarding = forwarding
        forwarding.standby = args.standby
        parts.push_async_callback(forwarding.aclose)  # also after a failed start
        await forwarding.start()
        freeze_startup_objects()
        if not args.standby:
            await self._start_grpc(parts)
        http = HttpServer(config, before_exit=lambda: self._hand_over(forwarding))
        if args.standby:  # before its status port answers: a supervisor may signal at once
            self._parts = parts
            asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, self._promote_soon)
        await self._serve_http(parts, http, sockets)
        if not args.standby:
            self.shared_port = self.http_port
        log.info(
            "gateway_standby" if args.standby else "gateway_ready",
            service=args.service,
            registry=args.registry,
            http=f"http://{args.host}:{self.shared_port or args.http_port}",
            grpc=f"{args.host}:{self.grpc_port}" if self.grpc_port else None,
            status=f"http://127.0.0.1:{self.status_port}" if self.status_port else None,
            instances=len(client.instances()),
            models=sorted({row["name"] for row in forwarding.manager.index(ready_only=True)}),
            attempt_timeout=client.attempt_timeout,
            cached_instances_age_s=client.cached_age,
        )

    async def _start_grpc(self, parts: contextlib.AsyncExitStack) -> None:
        args = self.args
        if args.grpc_port < 0:
            return
        grpc_server = await start_grpc_server(
            self.forwarding,
            args.host,
            args.grpc_port,
            max_message_bytes=args.grpc_max_message_bytes,
            reuse_port=args.reuse_port,
        )
        parts.push_async_callback(grpc_server.stop)
        self.grpc_port = grpc_server.port

    def _promote_soon(self) -> None:
        task = asyncio.ensure_future(self._promote())
        self._promoting.add(task)
        task.add_done_callback(self._promoting.discard)

    async def _promote(self) -> None:
        """SIGUSR1 on a standby: take the service's port (beside its other processes)."""
        args, forwarding = self.args, self.forwarding
        while self._http is None:  # the signal came as it started
            await asyncio.sleep(0.01)
        await self._http.up.wait()
        if not forwarding.standby:
            return
        started = time.monotonic()
        try:
            sock = self.listen(self._parts, args.host, args.http_port, args.reuse_port)
            await self._http.serve_socket(sock)
            self.shared_port = sock.getsockname()[1]
            await self._start_grpc(self._parts)
        except Exception as exc:  # it cannot serve: exit, and its supervisor starts another
            log.error("gateway_promotion_failed", error=f"{type(exc).__name__}: {exc}")
            self._http.begin_exit()
            return
        forwarding.standby = False
        log.info(
            "gateway_promoted",
            service=args.service,
            http=f"http://{args.host}:{self.shared_port}",
            after_s=round(time.monotonic() - started, 3),
        )

    async def _hand_over(self, forwarding: Any) -> None:
        """On SIGTERM: readiness goes false, the port passes to another process (``handover``),
        then uvicorn drains what is in flight."""
        forwarding.draining = True
        assert self._http is not None
        # SIGTERM asks for a successor; SIGINT (a terminal, platform up's own stop) does not
        asked = self._http.exit_signal in (signal.SIGTERM, None)
        await hand_over(
            self._http,
            self.app,
            self.shared_port,
            own_listeners=1,
            successor_wait=self.args.successor_wait if asked and self.shared_port else 0.0,
            drain_grace=self.args.drain_grace,
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
