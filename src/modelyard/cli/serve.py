"""``modelyard serve``: one instance process serving a model repository.

Its flags are ``serve_flags``'; what they ask for, ``serve_settings.InstanceSettings``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import ipaddress
import math
import os
import socket
import time
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from modelyard import __version__, error_rules
from modelyard.cli.in_process import HttpServer, InProcessServer
from modelyard.cli.runtime import http_config, run_event_loop, set_gil_switch_interval
from modelyard.cli.serve_settings import InstanceSettings, RegistrationSettings, instance_settings
from modelyard.discovery import open_registry
from modelyard.discovery.live_count import LiveInstanceCount
from modelyard.discovery.publisher import Publisher, models_from_index
from modelyard.discovery.registry import Instance, Registry
from modelyard.discovery.rules_store import RulesStore, open_rules_store
from modelyard.errors import ConfigError
from modelyard.frontdoors.grpc import GrpcServer, start_grpc_server
from modelyard.frontdoors.http import HttpFrontend
from modelyard.frontdoors.sagemaker import SageMakerFrontend
from modelyard.frontdoors.vertex_ai import vertex_ai_frontend
from modelyard.generation import Generation
from modelyard.governance.rules_source import RulesSource
from modelyard.governance.runtime import Governance, open_governance
from modelyard.hardware.memory import freeze_startup_objects
from modelyard.logging import SETTINGS, configure_logging
from modelyard.metrics import make_registry, metrics_text, serve_metrics
from modelyard.modelfiles.repository import ModelRepository
from modelyard.modelfiles.repository_agents import agent_source
from modelyard.protocol.shared_memory import SystemSharedMemory
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ModelManager
from modelyard.server.residency import Residency
from modelyard.server.resource_limiter import ResourceLimiter
from modelyard.server.response_cache import ResponseCache
from modelyard.tracing import Tracing
from modelyard.triton_tables import write_startup_tables

log = structlog.get_logger("modelyard.serve")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _advertised_instance(
    registration: RegistrationSettings, http_port: int, grpc_port: int | None
) -> Instance:
    host = registration.advertise_host
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    http = f"[{host}]:{http_port}" if ":" in host else f"{host}:{http_port}"
    grpc = None
    if grpc_port is not None:
        grpc = f"[{host}]:{grpc_port}" if ":" in host else f"{host}:{grpc_port}"
    labels = {
        "data_center": registration.data_center,
        "queue": registration.queue,
        "template": registration.template,
        "role": registration.role,
    }
    assert registration.service is not None and registration.group is not None
    return Instance(
        service=registration.service,
        group=registration.group,
        instance_id=registration.instance_id or http,
        http=http,
        grpc=grpc,
        labels={k: v for k, v in labels.items() if v},
        spec=registration.spec,
        weight=registration.weight,
    )


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
    when it stops. ``settings``: ``instance_settings``' (``serve_settings`` from flags)."""

    def __init__(self, settings: InstanceSettings) -> None:
        super().__init__()
        self.settings = settings
        self.grpc_port: int | None = None  # once started
        self.metrics_port: int | None = None
        self.manager: ModelManager | None = None
        # one count the manager and governance bump when routing changes (lanes' stamp)
        self.generation = Generation()
        self._publisher: Publisher | None = None  # once HTTP listens, with --service

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        for flag, reason in self.settings.not_applied:
            log.warning("triton_flag_not_applied", flag=flag, reason=reason)
        registry, live, rules_store = self._open_registry(parts)
        manager = self._model_manager()
        dataplane = LocalDataPlane(
            manager, server_id=self.settings.server_id, server_version=self.settings.server_version
        )
        governance = await self._open_governance(parts, dataplane, live, rules_store)
        app = self._http_front_door(parts, dataplane, governance)
        await self._start_models(parts, manager)
        http_server, http_sockets = self._http_server(parts, app, governance)
        if live is not None:
            live.start()
        metrics_port = self._start_metrics(parts, manager, governance)
        await self._start_cloud_front_doors(parts, app, manager, governance)
        grpc_server = await self._start_grpc(parts, dataplane, governance, app)
        grpc_port = grpc_server.port if grpc_server else None
        if grpc_port:
            grpc_at = f"{self.settings.grpc.address}:{grpc_port}"
            log.info("grpc_started", triton=f"Started GRPCInferenceService at {grpc_at}")

        async def announce() -> None:
            """Once HTTP listens: say so, and publish the instance in the registry."""
            await http_server.up.wait()
            port = _listening_port(http_server) or self.settings.http.port
            if http_sockets:
                address = self.settings.http.address
                log.info("http_started", triton=f"Started HTTPService at {address}:{port}")
            if metrics_port is not None:
                at = f"{self.settings.metrics.address}:{metrics_port}"
                log.info("metrics_started", triton=f"Started Metrics Service at {at}")
            self._log_ready(port if http_sockets else None, grpc_port, metrics_port, manager,
                            governance)  # fmt: skip
            if registry is not None:
                self._register(parts, registry, live, port, grpc_port, manager, governance)

        _background(parts, announce())
        if governance is not None:
            _background(parts, governance.watch(store=rules_store))
        await self._serve_http(parts, http_server, http_sockets)  # none: gRPC serves alone
        self.grpc_port = grpc_port
        self.metrics_port = metrics_port
        self.manager = manager

    def _open_registry(
        self, parts: contextlib.AsyncExitStack
    ) -> tuple[Registry | None, LiveInstanceCount | None, RulesStore | None]:
        """With --service: the registry the entry goes into, the live instance count (on a
        handle of its own: the publisher closes its handle when it deregisters) and, unless
        the rules are local only, the central rules' store."""
        registration = self.settings.registration
        if not registration.service:
            return None, None, None
        if not registration.group:
            raise ConfigError.of(
                error_rules.GROUP, f"--service {registration.service} needs --group"
            )
        registry = open_registry(registration.registry)

        async def close_registry() -> None:
            if self._publisher is None:  # else the publisher closes it when it deregisters
                await registry.aclose()

        parts.push_async_callback(close_registry)
        live = LiveInstanceCount(open_registry(registration.registry), registration.service)
        parts.push_async_callback(live.aclose)
        rules_store = None
        if self.settings.rules_source is not RulesSource.LOCAL:
            rules_store = open_rules_store(registration.registry)
            parts.push_async_callback(rules_store.aclose)
        return registry, live, rules_store

    def _model_manager(self) -> ModelManager:
        models = self.settings.models
        residency = None
        if models.residency != "off" and models.memory_budget_bytes is not None:
            # the settings ask for a budget with a policy
            residency = Residency(models.memory_budget_bytes, policy=models.residency)
        initialize_error = None
        # absolute, links kept: Triton names a repository as given (its metrics' namespace)
        roots = [Path(os.path.abspath(path)) for path in models.repositories]
        try:
            repository = ModelRepository(roots, models.config_name, namespacing=models.namespacing)
        except ConfigError as exc:
            if models.exit_on_error or not models.as_tritonserver:
                raise
            log.error("server_failed_to_initialize", **exc.fields())
            initialize_error = exc  # answers, not live, with no models (as Triton)
            repository = ModelRepository([], models.config_name)
        manager = ModelManager(
            repository,
            models.control_mode,
            poll_secs=models.poll_secs,
            startup_models=list(models.startup_models),
            pinned_versions=dict(models.pinned_versions),
            trusted_repository=models.trusted_repository,
            trusted_models=list(models.trusted_models),
            default_max_queue_size=models.default_max_queue_size,
            as_tritonserver=models.as_tritonserver,
            memory_budget=models.memory_budget_bytes,
            residency=residency,
            generation=self.generation,
            strict_readiness=models.strict_readiness,
            load_threads=models.load_threads,
            backend_directory=models.backend_directory,
            summary_quantiles=models.summary_quantiles,
            response_cache=ResponseCache(models.response_cache_bytes)
            if models.response_cache_bytes
            else None,
            rate_limiter=ResourceLimiter(list(models.resources))
            if models.resources is not None
            else None,
            auto_complete=models.auto_complete,
            backend_config=models.backend_config,
            load_retries=models.load_retries,
        )
        manager.initialize_error = initialize_error
        return manager

    async def _open_governance(
        self,
        parts: contextlib.AsyncExitStack,
        dataplane: LocalDataPlane,
        live: LiveInstanceCount | None,
        rules_store: RulesStore | None,
    ) -> Governance | None:
        """The service's rules (the local file's, or the central ones), None without any;
        model loads and unloads through the data plane are authorised by them."""
        settings = self.settings
        service = settings.registration.service
        governance = await open_governance(
            settings.service_config,
            service,
            generation=self.generation,
            rules_source=settings.rules_source,
            store=rules_store,
            registry_url=settings.registration.registry if service else None,
            live_instances=live.count if live is not None else lambda: 1,
            limiting_locally=live.limiting_locally if live is not None else lambda: 0,
        )
        if governance is not None:
            parts.push_async_callback(governance.aclose)
            dataplane.authorize_call = governance.authorize_model_call(
                f"service '{governance.service}'"
            )  # checks only where auth is on, as it is at each call
            dataplane.model_control.authorize = governance.authorize_model_control(
                f"service '{governance.service}'"
            )
        return governance

    def _http_front_door(
        self,
        parts: contextlib.AsyncExitStack,
        dataplane: LocalDataPlane,
        governance: Governance | None,
    ) -> HttpFrontend:
        """The HTTP front door, with the shared memory and tracing the gRPC one shares."""
        settings, http = self.settings, self.settings.http
        shared_memory = SystemSharedMemory(
            allowed=settings.allow_client_shm, max_request_bytes=http.max_body_bytes
        )
        parts.callback(shared_memory.close)
        # tritonserver's spans as Triton lays them out; modelyard serve's its own
        layout = "triton" if settings.models.as_tritonserver else "modelyard"
        tracing = Tracing(**settings.trace, spans=layout)
        parts.callback(tracing.shutdown)  # exports what the last requests left
        dataplane.tracing = tracing  # a model's own calls join their caller's trace
        return HttpFrontend(
            dataplane,
            max_body_bytes=http.max_body_bytes,
            governance=governance,
            shared_memory=shared_memory,
            tracing=tracing,
            header_forwarding=http.header_forwarding,
            embedding_model=http.embedding_model,
            restrictions=http.restrictions,
        )

    async def _start_models(self, parts: contextlib.AsyncExitStack, manager: ModelManager) -> None:
        await manager.start()
        parts.push_async_callback(manager.stop)
        if self.settings.triton_options:
            agents = [(name, agent_source(name)) for name in sorted(manager.agents_started)]
            write_startup_tables(agents, manager.backend_states(), manager.index(),
                                 self.settings.triton_options)  # fmt: skip
        if self.settings.models.exit_on_error:
            _exit_on_failed_loads(manager)
        freeze_startup_objects()

    def _http_server(
        self, parts: contextlib.AsyncExitStack, app: HttpFrontend, governance: Governance | None
    ) -> tuple[HttpServer, list[socket.socket]]:
        """uvicorn for the front door, deregistering first when it stops, and its socket
        (none with --allow-http false)."""
        settings, http = self.settings, self.settings.http
        config = http_config(app, http.address, http.port, http.limits, direct=app.direct)
        if settings.exit_timeout_secs is not None:
            config.timeout_graceful_shutdown = math.ceil(settings.exit_timeout_secs)
        server = HttpServer(config, self._before_exit)
        auth_on = governance is not None and governance.config.auth.enabled
        for host in {http.address, settings.grpc.address}:
            if not _is_loopback(host) and not auth_on:
                log.warning(
                    "listening_beyond_loopback_without_auth",
                    host=host,
                    hint="anyone who can reach this address can infer, load and unload models",
                )
        if not http.enabled:
            return server, []
        return server, [self.listen(parts, http.address, http.port, http.reuse_port)]

    async def _before_exit(self) -> None:
        await self._deregister()
        if self.settings.models.as_tritonserver and self.manager is not None:
            timeout = self.settings.exit_timeout_secs
            await drain_as_triton(self.manager, self._http, 30 if timeout is None else timeout)

    async def _deregister(self) -> None:
        if self._publisher is not None:
            await self._publisher.stop()
            # keep answering while callers' registry views drop this instance
            await asyncio.sleep(self.settings.registration.deregister_grace)

    def _start_metrics(
        self,
        parts: contextlib.AsyncExitStack,
        manager: ModelManager,
        governance: Governance | None,
    ) -> int | None:
        """The Prometheus port's number (None: no metrics port)."""
        metrics = self.settings.metrics
        if metrics.port < 0:
            return None
        server = serve_metrics(
            manager,
            metrics.address,
            metrics.port,
            governance,
            cpu_metrics=metrics.cpu,
            counter_latencies=metrics.counter_latencies,
            gpu_metrics=metrics.gpu,
        )
        parts.push_async_callback(asyncio.to_thread, server.close)
        if metrics.cpu:
            log.info("cpu_metrics_on", triton="Collecting CPU metrics")
        return server.port

    async def _start_cloud_front_doors(
        self,
        parts: contextlib.AsyncExitStack,
        app: HttpFrontend,
        manager: ModelManager,
        governance: Governance | None,
    ) -> None:
        """Vertex AI's and SageMaker's routes, each on a port of its own (tritonserver's
        --allow-vertex-ai, --allow-sagemaker), once the models have loaded (Vertex AI's
        default model must be ready)."""
        vertex, sagemaker = self.settings.vertex_ai, self.settings.sagemaker
        if vertex is not None:
            metrics = self.settings.metrics
            registry = make_registry(manager, governance, asyncio.get_running_loop(),
                                     metrics.cpu, metrics.gpu)  # fmt: skip
            ready = sorted({mv.name for mv in manager.ready_versions()})
            front = vertex_ai_frontend(
                app, ready, vertex.default_model,
                lambda: metrics_text(manager, registry, metrics.counter_latencies),
            )  # fmt: skip
            await self._serve_on_own_port(parts, front, vertex.address, vertex.port,
                                          "Vertex AI", "tritonserver --vertex-ai-port")  # fmt: skip
            at = f"{vertex.address}:{vertex.port}"
            log.info("vertex_ai_started", triton=f"Started Vertex AI HTTPService at {at}")
        if sagemaker is not None:
            await self._serve_on_own_port(parts, SageMakerFrontend(app), sagemaker.address,
                                          sagemaker.port, "Sagemaker",
                                          "tritonserver --sagemaker-port")  # fmt: skip
            at = f"{sagemaker.address}:{sagemaker.port}"
            log.info("sagemaker_started", triton=f"Started Sagemaker HTTPService at {at}")

    async def _serve_on_own_port(
        self, parts: contextlib.AsyncExitStack, front: Any, address: str, port: int,
        service: str, where: str,
    ) -> None:  # fmt: skip
        """``front`` (an ASGI app, ``service``'s, its port set ``where``) on a uvicorn of its
        own, stopped with the parts."""
        sock = self.listen(parts, address, port, service=service, where=where)
        server = HttpServer(http_config(front, address, port, self.settings.http.limits))
        serving = asyncio.create_task(server.serve([sock]))

        async def stop() -> None:
            server.should_exit = True
            await serving

        parts.push_async_callback(stop)
        up = asyncio.ensure_future(server.up.wait())
        await asyncio.wait({up, serving}, return_when=asyncio.FIRST_COMPLETED)
        if not up.done():  # uvicorn ended before it listened: its error, or its exit
            up.cancel()
            raise ConfigError.of(
                error_rules.HTTP_STOPPED, f"the server on port {port} stopped before it listened"
            )

    async def _start_grpc(
        self,
        parts: contextlib.AsyncExitStack,
        dataplane: LocalDataPlane,
        governance: Governance | None,
        app: HttpFrontend,
    ) -> GrpcServer | None:
        grpc = self.settings.grpc
        if grpc.port < 0:
            return None
        server = await start_grpc_server(
            dataplane,
            grpc.address,
            grpc.port,
            max_message_bytes=grpc.max_message_bytes,
            governance=governance,
            shared_memory=app.shared_memory,
            tracing=app.tracing,
            tls=grpc.tls,
            header_forwarding=grpc.header_forwarding,
            keepalive_time_ms=grpc.keepalive_time_ms,
            restrictions=grpc.restrictions,
            compression=grpc.compression,
            **grpc.connection,
        )
        grace = self.settings.exit_timeout_secs
        parts.push_async_callback(
            server.stop if grace is None else functools.partial(server.stop, grace)
        )
        return server

    def _log_ready(
        self,
        http_port: int | None,
        grpc_port: int | None,
        metrics_port: int | None,
        manager: ModelManager,
        governance: Governance | None,
    ) -> None:
        settings = self.settings
        http_host, grpc_host = settings.http.address, settings.grpc.address
        metrics_host = settings.metrics.address
        log.info(
            "server_ready",
            modelyard=__version__,
            answers_as=f"{settings.server_id} {settings.server_version}",
            http=f"http://{http_host}:{http_port}" if http_port is not None else None,
            grpc=f"{grpc_host}:{grpc_port}" if grpc_port else None,
            metrics=f"http://{metrics_host}:{metrics_port}/metrics" if metrics_port else None,
            models=[f"{mv.name}/{mv.version}" for mv in manager.ready_versions()],
            ready=manager.is_ready(),
            service=governance.service if governance else None,
        )

    def _register(
        self,
        parts: contextlib.AsyncExitStack,
        registry: Registry,
        live: LiveInstanceCount | None,
        http_port: int,
        grpc_port: int | None,
        manager: ModelManager,
        governance: Governance | None,
    ) -> None:
        """The instance's registry entry, kept while it serves; the first part to stop."""
        registration = self.settings.registration
        template = _advertised_instance(registration, http_port, grpc_port)
        if live is not None:
            live.own_id = template.instance_id
        self._publisher = Publisher(
            registry,
            lambda: replace(
                template,
                models=models_from_index(manager.index(), manager.loadable_models()),
                weight=_current_weight(registration.weight_file, template.weight),
                cluster_limit_local=governance is not None and governance.cluster_limits_local(),
            ),
            manager.is_ready,
            ttl=registration.ttl,
        )
        parts.push_async_callback(self._publisher.stop)  # the first to go: deregistration
        self._publisher.start()


def _listening_port(server: HttpServer) -> int | None:
    ports = [s.getsockname()[1] for srv in server.servers for s in srv.sockets]
    return ports[0] if ports else None


async def serve(settings: InstanceSettings) -> None:
    """Run one instance until a signal: each part, once started, is stopped in reverse order."""
    async with InstanceServer(settings) as server:
        await server.wait()


def _background(parts: contextlib.AsyncExitStack, work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` beside the server, cancelled when ``parts`` closes."""
    task = asyncio.create_task(work)
    parts.callback(task.cancel)


# how often a stop looks again at what it waits for; its log lines count whole seconds
DRAIN_POLL_SECS = 0.05


async def drain_as_triton(manager: ModelManager, http: HttpServer | None, timeout: float) -> None:
    """tritonserver's stop, its log lines included: wait for the HTTP connections to close,
    then refuse new inferences and wait for those in flight, both within one ``timeout``.
    Triton looks once a second; here the stop ends as soon as nothing is left, and a line
    is written as Triton counts down, each second, and when the counts change."""
    deadline = time.monotonic() + math.ceil(timeout)

    def seconds_left() -> int:
        return math.ceil(deadline - time.monotonic())

    written: object = None  # what the last line said
    while http is not None and (connections := len(http.server_state.connections)):
        if (left := seconds_left()) <= 0:
            break
        if (left, connections) != written:
            written = (left, connections)
            triton = f"Timeout {left}: Found {connections} HTTP service connections"
            log.info("http_connections_open", connections=connections, triton=triton)
        await asyncio.sleep(DRAIN_POLL_SECS)
    manager.stopping = True
    log.info("draining", triton="Waiting for in-flight requests to complete.")
    while (left := seconds_left()) > 0:
        # a sequence model counts its running sequences, as Triton's sequence batcher
        counts = [
            (mv.name, mv.version, getattr(mv.scheduler, "in_flight", mv.scheduler.pending))
            for mv in manager.all_versions(retiring=True)
        ]
        busy = [(name, version, count) for name, version, count in counts if count]
        if (left, busy) != written:
            written = (left, busy)
            log.info("in_flight", versions=len(busy), triton=f"Timeout {left}: Found {len(busy)} "
                     "model versions that have in-flight inferences")  # fmt: skip
            for name, version, count in busy:
                log.info("in_flight_model", model=name, version=version, requests=count,
                         triton=f"Model '{name}' (version {version}) has {count} in-flight "
                         "inferences")  # fmt: skip
        if not busy:
            return
        await asyncio.sleep(DRAIN_POLL_SECS)


def _exit_on_failed_loads(manager: ModelManager) -> None:
    """tritonserver's --exit-on-error: a model that failed to load at start ends the server."""
    failed = {
        row["name"]: row.get("reason", "")
        for row in manager.index()
        if row.get("state") == "UNAVAILABLE"
    }
    for name, error in manager.start_failures.items():  # a name no repository lists, too
        failed.setdefault(name, error.line())
    if failed:
        reasons = "; ".join(f"{name}: {reason}" for name, reason in failed.items())
        raise ConfigError.of(
            error_rules.EXIT_ON_ERROR, f"failed to load {len(failed)} model(s) at start: {reasons}"
        )


def run_serve(args: argparse.Namespace) -> int:
    set_gil_switch_interval(args.gil_switch_interval_us)  # refuses a bad value first
    settings = instance_settings(args)
    configure_logging(settings.log.format, settings.log.level, settings.log.file)
    if settings.log.switches is not None:
        SETTINGS.update(settings.log.switches)
    run_event_loop(serve(settings))
    return 0
