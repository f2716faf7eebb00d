"""``modelyard serve``: one instance process serving a model repository."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
from pathlib import Path

import structlog
import uvicorn

from modelyard.gateway.grpc import DEFAULT_MAX_MESSAGE_BYTES, GrpcServer, start_grpc_server
from modelyard.gateway.http import DEFAULT_MAX_BODY_BYTES, HttpFrontend
from modelyard.governance.runtime import Governance
from modelyard.logging import configure_logging
from modelyard.metrics import serve_metrics
from modelyard.server.dataplane import DataPlane
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.server.repository import ModelRepository

log = structlog.get_logger("modelyard.serve")


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-repository", type=Path, required=True, metavar="DIR")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--http-port", type=int, default=8000)
    parser.add_argument(
        "--grpc-port", type=int, default=8001, help="gRPC port (0: any free port, -1: no gRPC)"
    )
    parser.add_argument(
        "--model-control-mode",
        choices=[m.value for m in ControlMode],
        default=ControlMode.NONE.value,
    )
    parser.add_argument("--repository-poll-secs", type=float, default=15.0)
    parser.add_argument(
        "--load-model",
        action="append",
        default=[],
        metavar="NAME",
        help="in explicit mode, load this model at start ('*' for all); repeatable",
    )
    parser.add_argument(
        "--trusted-repository",
        action="store_true",
        help="allow pickle-based model files (model.pkl, model.joblib) in this repository",
    )
    parser.add_argument(
        "--trust-model",
        action="append",
        default=[],
        metavar="NAME",
        help="allow pickle-based model files for this model only; repeatable",
    )
    parser.add_argument("--http-max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    parser.add_argument(
        "--grpc-max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help="largest gRPC message received or sent",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=8002,
        help="Prometheus /metrics port (0: any free port, -1: no metrics)",
    )
    parser.add_argument(
        "--max-queue-size",
        type=int,
        default=1000,
        help="queue cap per model version when its config sets none (0: unbounded)",
    )
    parser.add_argument(
        "--http-max-connections",
        type=int,
        default=4096,
        help="concurrent HTTP connections and requests before answering 503",
    )
    parser.add_argument(
        "--service-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="service file with auth, rate limits and breakers; reloaded on change",
    )
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument("--log-level", default="info")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def serve(args: argparse.Namespace) -> None:
    repository = ModelRepository(args.model_repository.resolve())
    manager = ModelManager(
        repository,
        ControlMode(args.model_control_mode),
        poll_secs=args.repository_poll_secs,
        startup_models=args.load_model,
        trusted_repository=args.trusted_repository,
        trusted_models=args.trust_model,
        default_max_queue_size=args.max_queue_size,
    )
    dataplane = DataPlane(manager)
    governance = Governance.from_file(args.service_config) if args.service_config else None
    app = HttpFrontend(dataplane, max_body_bytes=args.http_max_body_bytes, governance=governance)
    await manager.start()
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.http_port,
        http="httptools",
        loop="none",
        lifespan="off",
        access_log=False,
        log_level="warning",
        timeout_keep_alive=30,
        limit_concurrency=args.http_max_connections,
    )
    server = uvicorn.Server(config)
    auth_on = governance is not None and governance.config.auth.enabled
    if not _is_loopback(args.host) and not auth_on:
        log.warning(
            "listening_beyond_loopback_without_auth",
            host=args.host,
            hint="anyone who can reach this address can infer, load and unload models",
        )

    grpc_server: GrpcServer | None = None
    metrics_port = (
        serve_metrics(manager, args.host, args.metrics_port) if args.metrics_port >= 0 else None
    )

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.05)
        ports = [s.getsockname()[1] for srv in server.servers for s in srv.sockets]
        port = ports[0] if ports else args.http_port
        log.info(
            "server_ready",
            http=f"http://{args.host}:{port}",
            grpc=f"{args.host}:{grpc_server.port}" if grpc_server else None,
            metrics=f"http://{args.host}:{metrics_port}/metrics" if metrics_port else None,
            models=[f"{mv.name}/{mv.version}" for mv in manager.ready_versions()],
            ready=manager.is_ready(),
            service=governance.service if governance else None,
        )

    announcer: asyncio.Task[None] | None = None
    watcher: asyncio.Task[None] | None = None
    try:
        if args.grpc_port >= 0:
            grpc_server = await start_grpc_server(
                dataplane,
                args.host,
                args.grpc_port,
                max_message_bytes=args.grpc_max_message_bytes,
                governance=governance,
            )
        announcer = asyncio.create_task(announce())
        if governance is not None:
            watcher = asyncio.create_task(governance.watch())
        await server.serve()
    finally:
        if announcer is not None:
            announcer.cancel()
        if watcher is not None:
            watcher.cancel()
        if governance is not None:
            await governance.aclose()
        if grpc_server is not None:
            await grpc_server.stop()
        await manager.stop()


def run_serve(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    try:
        import uvloop

        uvloop.run(serve(args))
    except ImportError:
        asyncio.run(serve(args))
    return 0
