"""``modelyard serve``: one instance process serving a model repository."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import ipaddress
import math
import socket
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from modelyard import __version__
from modelyard.cli.in_process import HttpServer, InProcessServer
from modelyard.cli.runtime import (
    DEFAULT_GIL_SWITCH_INTERVAL_US,
    add_http_arguments,
    add_listen_arguments,
    connection_limits,
    http_config,
    run_event_loop,
    set_gil_switch_interval,
)
from modelyard.cli.triton_flags import add_triton_arguments, apply_triton_flags
from modelyard.discovery import DEFAULT_REGISTRY_URL, open_registry
from modelyard.discovery.live_count import LiveInstanceCount
from modelyard.discovery.publisher import Publisher, models_from_index
from modelyard.discovery.registry import Instance, Registry
from modelyard.discovery.rules_store import open_rules_store
from modelyard.errors import Code, ConfigError
from modelyard.frontdoors.grpc import DEFAULT_MAX_MESSAGE_BYTES, GrpcServer, start_grpc_server
from modelyard.frontdoors.http import DEFAULT_MAX_BODY_BYTES, HttpFrontend
from modelyard.generation import Generation
from modelyard.governance.runtime import RulesSource, open_governance
from modelyard.hardware.memory import freeze_startup_objects, parse_size
from modelyard.logging import configure_logging
from modelyard.metrics import serve_metrics
from modelyard.modelfiles.repository import ModelRepository
from modelyard.protocol.shared_memory import SystemSharedMemory
from modelyard.server.dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from modelyard.server.residency import Residency
from modelyard.server.resource_limiter import ResourceLimiter
from modelyard.server.response_cache import ResponseCache
from modelyard.tracing import Tracing

log = structlog.get_logger("modelyard.serve")


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-repository",
        action="append",
        type=Path,
        metavar="DIR",
        help="a Triton model repository; repeatable (model names unique across them)",
    )
    parser.add_argument(
        "--id", default="modelyard", help="the server's name in its metadata (as tritonserver's)"
    )
    # the version server metadata gives: modelyard's, or Triton's under `tritonserver`
    parser.set_defaults(server_version=__version__)
    add_listen_arguments(parser)
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
        "--model-version",
        action="append",
        default=[],
        type=_pinned_version,
        metavar="MODEL=VERSION",
        help="serve exactly this version of the model, whatever its version_policy says "
        "(a release's canary); repeatable",
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
    add_http_arguments(parser)
    parser.add_argument(
        "--memory-budget",
        default=None,
        metavar="SIZE",
        help="host memory the loaded models may hold (e.g. 4G); loads over it are refused",
    )
    parser.add_argument(
        "--model-residency",
        choices=["off", "lru"],
        default="off",
        help="lru: every model of the repository is servable, loaded when first asked for, "
        "the least recently used idle ones unloaded to stay within --memory-budget",
    )
    parser.add_argument(
        "--service-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="service file with auth, rate limits and breakers; reloaded on change",
    )
    parser.add_argument(
        "--gil-switch-interval-us",
        type=int,
        default=DEFAULT_GIL_SWITCH_INTERVAL_US,
        metavar="US",
        help="how long a thread may keep the GIL while another waits for it, 1 to 1000000 "
        "(Python's own default is 5000); model instance threads wait for it around each batch",
    )
    parser.add_argument(
        "--log-format",
        choices=["console", "json", "default", "ISO8601"],
        default="console",
        help="console or json; tritonserver's default and ISO8601 are console lines",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error", "critical"]
    )
    add_triton_arguments(parser)
    discovery = parser.add_argument_group(
        "discovery (registers this instance when --service is set)"
    )
    discovery.add_argument("--service", default=None, help="service name, e.g. com.example.ranker")
    discovery.add_argument("--group", default=None, help="deployment group; needed with --service")
    discovery.add_argument(
        "--registry",
        default=DEFAULT_REGISTRY_URL,
        metavar="URL",
        help="embedded, embedded:///abs/path/registry.db or etcd://host:port[,host:port]",
    )
    discovery.add_argument(
        "--rules-source",
        choices=[s.value for s in RulesSource],
        default=RulesSource.AUTO.value,
        help="which governance rules win: the service's central rules in the registry or "
        "--service-config (auto: central once the service has any; auth is always local)",
    )
    discovery.add_argument("--data-center", default=None, metavar="DC")
    discovery.add_argument("--queue", default=None, metavar="Q")
    discovery.add_argument(
        "--template",
        default=None,
        metavar="NAME",
        help="the spec's template this instance was started from (the autoscaler scales each "
        "template on its own instances' load)",
    )
    discovery.add_argument(
        "--role",
        choices=("stable", "canary"),
        default=None,
        help="this instance's part in its group's release (a registry label)",
    )
    discovery.add_argument("--spec", default="", help="resource spec, e.g. 8C/32G")
    discovery.add_argument("--weight", type=float, default=1.0)
    discovery.add_argument(
        "--weight-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="read the weight from this file, re-read while serving (a release sets it)",
    )
    discovery.add_argument(
        "--instance-id", default=None, metavar="ID", help="default: advertised host:http-port"
    )
    discovery.add_argument(
        "--advertise-host", default=None, metavar="HOST", help="default: --host, or the hostname"
    )
    discovery.add_argument(
        "--registry-ttl",
        type=float,
        default=5.0,
        metavar="SECS",
        help="the entry expires this long after the last heartbeat (etcd: at least 2)",
    )
    discovery.add_argument(
        "--deregister-grace",
        type=float,
        default=0.5,
        metavar="SECS",
        help="on SIGTERM, keep serving this long after deregistering, so callers' registry "
        "views drop the instance before its port closes",
    )


def _residency(args: argparse.Namespace) -> Residency | None:
    """What --model-residency asks for; lru needs a budget to keep within."""
    if args.model_residency != "lru":
        return None
    if not args.memory_budget:
        raise ConfigError(
            "--model-residency lru keeps the loaded models within a memory budget, and none "
            "was given",
            code=Code.INVALID_ARGUMENT,
            rule="config/model-residency",
            where="modelyard serve --memory-budget SIZE (e.g. 2G) with --model-residency lru",
        )
    return Residency(parse_size(args.memory_budget))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _advertised_instance(
    args: argparse.Namespace, http_port: int, grpc_port: int | None
) -> Instance:
    host = args.advertise_host or args.host
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    http = f"[{host}]:{http_port}" if ":" in host else f"{host}:{http_port}"
    grpc = None
    if grpc_port is not None:
        grpc = f"[{host}]:{grpc_port}" if ":" in host else f"{host}:{grpc_port}"
    labels = {
        "data_center": args.data_center,
        "queue": args.queue,
        "template": args.template,
        "role": args.role,
    }
    return Instance(
        service=args.service,
        group=args.group,
        instance_id=args.instance_id or http,
        http=http,
        grpc=grpc,
        labels={k: v for k, v in labels.items() if v},
        spec=args.spec,
        weight=args.weight,
    )


def _pinned_version(text: str) -> tuple[str, int]:
    model, _, version = text.partition("=")
    if not model or not version.isdigit():
        raise argparse.ArgumentTypeError(f"expected MODEL=VERSION (a version number), got {text!r}")
    return model, int(version)


def _current_weight(path: Path | None, default: float) -> float:
    if path is None:
        return default
    try:
        return max(0.0, float(path.read_text().strip()))
    except (OSError, ValueError):
        return default


class InstanceServer(InProcessServer):
    """One instance in this process (see ``in_process``): registry handles, governance, the
    model manager, the front doors, metrics and the registry entry; deregistration first
    when it stops. ``args``: the serve command's flags (``serve_args``)."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.grpc_port: int | None = None  # once started
        self.metrics_port: int | None = None
        self.manager: ModelManager | None = None

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        args = self.args
        if args.service and not args.group:
            raise ConfigError(
                f"--service {args.service} needs --group",
                code=Code.INVALID_ARGUMENT,
                rule="discovery/group",
                where="pass --group GROUP (where it runs and who owns it)",
            )
        limits = connection_limits(args)
        rules_source = RulesSource(args.rules_source)
        registry: Registry | None = None
        live: LiveInstanceCount | None = None
        publisher: Publisher | None = None
        if args.service:
            registry = open_registry(args.registry)

            async def close_registry() -> None:
                if publisher is None:  # else the publisher closes it when it deregisters
                    await registry.aclose()

            parts.push_async_callback(close_registry)
            # a registry handle of its own: the publisher closes its handle when it deregisters
            live = LiveInstanceCount(open_registry(args.registry), args.service)
            parts.push_async_callback(live.aclose)
        rules_store = None
        if args.service and rules_source is not RulesSource.LOCAL:
            rules_store = open_rules_store(args.registry)
            parts.push_async_callback(rules_store.aclose)
        generation = Generation()  # one count the manager and governance bump (lanes' stamp)
        manager = ModelManager(
            ModelRepository(
                [path.resolve() for path in args.model_repository],
                args.model_config_name,
                namespacing=args.model_namespacing,
            ),
            ControlMode(args.model_control_mode),
            poll_secs=args.repository_poll_secs,
            startup_models=args.load_model,
            pinned_versions=dict(args.model_version),
            trusted_repository=args.trusted_repository,
            trusted_models=args.trust_model,
            default_max_queue_size=args.max_queue_size,
            memory_budget=parse_size(args.memory_budget) if args.memory_budget else None,
            residency=_residency(args),
            generation=generation,
            strict_readiness=args.strict_readiness,
            load_threads=args.model_load_thread_count,
            summary_quantiles=args.summary_quantiles,
            response_cache=ResponseCache(args.response_cache_bytes)
            if args.response_cache_bytes
            else None,
            rate_limiter=ResourceLimiter(args.rate_limit_resources)
            if args.rate_limit == "execution_count"
            else None,
            auto_complete=args.auto_complete,
            load_retries=args.model_load_retry_count,
        )
        dataplane = LocalDataPlane(
            manager, server_id=args.id, server_version=args.server_version
        )
        governance = await open_governance(
            args.service_config,
            args.service,
            generation=generation,
            rules_source=rules_source,
            store=rules_store,
            registry_url=args.registry if args.service else None,
            live_instances=live.count if live is not None else lambda: 1,
            limiting_locally=live.limiting_locally if live is not None else lambda: 0,
        )
        if governance is not None:
            parts.push_async_callback(governance.aclose)
            dataplane.authorize_call = governance.authorize_model_call(
                f"service '{governance.service}'"
            )  # checks only where auth is on, as it is at each call
        shared_memory = SystemSharedMemory(
            allowed=args.allow_client_shm, max_request_bytes=args.http_max_body_bytes
        )
        parts.callback(shared_memory.close)
        tracing = Tracing(**args.trace)
        parts.callback(tracing.shutdown)  # exports what the last requests left
        app = HttpFrontend(
            dataplane,
            max_body_bytes=args.http_max_body_bytes,
            governance=governance,
            shared_memory=shared_memory,
            tracing=tracing,
            header_forwarding=args.http_header_forwarding,
            embedding_model=args.embedding_model,
            restrictions=args.http_restrictions,
        )
        await manager.start()
        parts.push_async_callback(manager.stop)
        if args.exit_on_error:
            _exit_on_failed_loads(manager)
        freeze_startup_objects()

        async def deregister() -> None:
            if publisher is not None:
                await publisher.stop()
                # keep answering while callers' registry views drop this instance
                await asyncio.sleep(args.deregister_grace)

        http_host = args.http_address or args.host
        grpc_host = args.grpc_address or args.host
        metrics_host = args.metrics_address or args.host
        config = http_config(app, http_host, args.http_port, limits, direct=app.direct)
        if args.exit_timeout_secs is not None:
            config.timeout_graceful_shutdown = math.ceil(args.exit_timeout_secs)
        server = HttpServer(config, deregister)
        auth_on = governance is not None and governance.config.auth.enabled
        for host in {http_host, grpc_host}:
            if not _is_loopback(host) and not auth_on:
                log.warning(
                    "listening_beyond_loopback_without_auth",
                    host=host,
                    hint="anyone who can reach this address can infer, load and unload models",
                )
        http_sockets = (
            [self.listen(parts, http_host, args.http_port, bool(args.reuse_http_port))]
            if args.allow_http
            else []
        )
        if live is not None:
            live.start()
        metrics_port = None
        if args.metrics_port >= 0:
            metrics = serve_metrics(
                manager,
                metrics_host,
                args.metrics_port,
                governance,
                cpu_metrics=args.allow_cpu_metrics,
                counter_latencies=args.counter_latencies,
                gpu_metrics=args.allow_gpu_metrics,
            )
            parts.push_async_callback(asyncio.to_thread, metrics.close)
            metrics_port = metrics.port
        grpc_server: GrpcServer | None = None
        if args.grpc_port >= 0:
            grpc_server = await start_grpc_server(
                dataplane,
                grpc_host,
                args.grpc_port,
                max_message_bytes=args.grpc_max_message_bytes,
                governance=governance,
                shared_memory=shared_memory,
                tracing=tracing,
                tls=args.grpc_tls,
                header_forwarding=args.grpc_header_forwarding,
                keepalive_time_ms=args.grpc_keepalive_time,
                restrictions=args.grpc_restrictions,
                compression=args.grpc_compression,
                **args.grpc_connection,
            )
            grace = args.exit_timeout_secs
            parts.push_async_callback(
                grpc_server.stop if grace is None else functools.partial(grpc_server.stop, grace)
            )

        async def announce() -> None:
            """Once HTTP listens: say so, and publish the instance in the registry."""
            nonlocal publisher
            await server.up.wait()
            ports = [s.getsockname()[1] for srv in server.servers for s in srv.sockets]
            port = ports[0] if ports else args.http_port
            grpc_port = grpc_server.port if grpc_server else None
            log.info(
                "server_ready",
                modelyard=__version__,
                answers_as=f"{args.id} {args.server_version}",
                http=f"http://{http_host}:{port}" if http_sockets else None,
                grpc=f"{grpc_host}:{grpc_port}" if grpc_port else None,
                metrics=f"http://{metrics_host}:{metrics_port}/metrics" if metrics_port else None,
                models=[f"{mv.name}/{mv.version}" for mv in manager.ready_versions()],
                ready=manager.is_ready(),
                service=governance.service if governance else None,
            )
            if registry is None:
                return
            template = _advertised_instance(args, port, grpc_port)
            if live is not None:
                live.own_id = template.instance_id
            publisher = Publisher(
                registry,
                lambda: replace(
                    template,
                    models=models_from_index(manager.index(), manager.loadable_models()),
                    weight=_current_weight(args.weight_file, template.weight),
                    cluster_limit_local=governance is not None
                    and governance.cluster_limits_local(),
                ),
                manager.is_ready,
                ttl=args.registry_ttl,
            )
            parts.push_async_callback(publisher.stop)  # the first to go: deregistration
            publisher.start()

        _background(parts, announce())
        if governance is not None:
            _background(parts, governance.watch(store=rules_store))
        await self._serve_http(parts, server, http_sockets)  # none: gRPC serves alone
        self.grpc_port = grpc_server.port if grpc_server else None
        self.metrics_port = metrics_port
        self.manager = manager


async def serve(args: argparse.Namespace) -> None:
    """Run one instance until a signal: each part, once started, is stopped in reverse order."""
    async with InstanceServer(args) as server:
        await server.wait()


def _background(parts: contextlib.AsyncExitStack, work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` beside the server, cancelled when ``parts`` closes."""
    task = asyncio.create_task(work)
    parts.callback(task.cancel)


def _exit_on_failed_loads(manager: ModelManager) -> None:
    """tritonserver's --exit-on-error: a model that failed to load at start ends the server."""
    failed = [row for row in manager.index() if row.get("state") == "UNAVAILABLE"]
    if failed:
        reasons = "; ".join(f"{row['name']}: {row.get('reason', '')}" for row in failed)
        raise ConfigError(
            f"failed to load {len(failed)} model(s) at start: {reasons}",
            code=Code.INVALID_ARGUMENT,
            rule="serve/exit-on-error",
            where="fix the models, or modelyard serve --exit-on-error false",
        )


def serve_args(argv: list[str]) -> argparse.Namespace:
    """The serve command's flags as ``modelyard serve`` reads them (tritonserver's applied),
    for an ``InstanceServer`` started in process."""
    parser = argparse.ArgumentParser(prog="modelyard serve")
    add_serve_arguments(parser)
    args = parser.parse_args(argv)
    for flag, reason in apply_triton_flags(args):
        log.warning("triton_flag_not_applied", flag=flag, reason=reason)
    return args


def run_serve(args: argparse.Namespace) -> int:
    set_gil_switch_interval(args.gil_switch_interval_us)  # refuses a bad value first
    not_applied = apply_triton_flags(args)
    configure_logging(args.log_format, args.log_level, args.log_file)
    for flag, reason in not_applied:
        log.warning("triton_flag_not_applied", flag=flag, reason=reason)
    run_event_loop(serve(args))
    return 0
