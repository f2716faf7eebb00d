"""``modelyard serve``: one instance process serving a model repository."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
from pathlib import Path

import structlog
import uvicorn

from modelyard.gateway.http import DEFAULT_MAX_BODY_BYTES, HttpFrontend
from modelyard.logging import configure_logging
from modelyard.server.dataplane import DataPlane
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.server.repository import ModelRepository

log = structlog.get_logger("modelyard.serve")


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model-repository", type=Path, required=True, metavar="DIR")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--http-port", type=int, default=8000)
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
    )
    dataplane = DataPlane(manager)
    app = HttpFrontend(dataplane, max_body_bytes=args.http_max_body_bytes)
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
    )
    server = uvicorn.Server(config)
    if not _is_loopback(args.host):
        log.warning(
            "listening_beyond_loopback_without_auth",
            host=args.host,
            hint="anyone who can reach this address can infer, load and unload models",
        )

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.05)
        ports = [s.getsockname()[1] for srv in server.servers for s in srv.sockets]
        port = ports[0] if ports else args.http_port
        log.info(
            "server_ready",
            http=f"http://{args.host}:{port}",
            models=[f"{mv.name}/{mv.version}" for mv in manager.ready_versions()],
            ready=manager.is_ready(),
        )

    announcer = asyncio.create_task(announce())
    try:
        await server.serve()
    finally:
        announcer.cancel()
        await manager.stop()


def run_serve(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    try:
        import uvloop

        uvloop.run(serve(args))
    except ImportError:
        asyncio.run(serve(args))
    return 0
