"""What one instance is asked to be: ``InstanceSettings``, typed and frozen, in sections
by the part of the instance that reads them (the models, each front door, the metrics,
the registry entry, the log).

``instance_settings`` is the one way to make one: from serve's flags as parsed (declared
in ``serve_flags``), with tritonserver's applied (``triton_flags``). ``modelyard serve``,
the ``tritonserver`` command and a server started in process on the flags
``processes.serve_arguments`` builds (``serve_settings``) all go through it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from modelyard import error_rules
from modelyard.cli.runtime import connection_limits
from modelyard.cli.serve_flags import add_serve_arguments
from modelyard.cli.triton_flags import apply_triton_flags
from modelyard.dataplane import INSTANCE_EXTENSIONS
from modelyard.errors import ConfigError
from modelyard.frontdoors.grpc import GrpcTls
from modelyard.frontdoors.header_forwarding import HeaderForwarding
from modelyard.frontdoors.http_connections import ConnectionLimits
from modelyard.frontdoors.restricted import Restrictions
from modelyard.governance.rules_source import RulesSource
from modelyard.hardware.memory import parse_size
from modelyard.modelfiles.control_mode import ControlMode
from modelyard.server.backend_config import BackendConfig

# tritonserver's --rate-limit-resource: name, count, device (None: every device)
Resource = tuple[str, int, str | None]


@dataclass(frozen=True)
class ModelSettings:
    """The model manager's: the repositories and how their models load and queue."""

    repositories: tuple[Path, ...]
    config_name: str | None  # configs/NAME.pbtxt instead of config.pbtxt
    namespacing: bool
    control_mode: ControlMode
    poll_secs: float
    startup_models: tuple[str, ...]  # explicit mode's --load-model
    pinned_versions: tuple[tuple[str, int], ...]  # model, the one version it serves
    trusted_repository: bool
    trusted_models: tuple[str, ...]
    default_max_queue_size: int
    memory_budget_bytes: int | None
    residency: str  # off, or lru / cost: every model servable, loaded within the memory budget
    strict_readiness: bool
    load_threads: int | None
    load_retries: int
    auto_complete: bool
    backend_config: BackendConfig  # --backend-config, each backend's settings
    exit_on_error: bool  # a model that fails to load at start ends the server
    summary_quantiles: tuple[float, ...] | None  # None: no latency summaries
    response_cache_bytes: int | None  # None: no response cache
    resources: tuple[Resource, ...] | None  # the resource limiter's; None: it is off
    # tritonserver's start and stop: with exit_on_error false, a repository that cannot be
    # read leaves the server answering, not live and not ready (Triton's "failed to
    # initialize"); a signal waits for HTTP connections to close, then for the requests in
    # flight while new ones are refused, within the exit timeout (30 s unless given)
    as_tritonserver: bool = False
    # --backend-directory: DIR/NAME/model.py serves backend "NAME" (a Python-based backend)
    backend_directory: Path | None = None


@dataclass(frozen=True)
class HttpSettings:
    enabled: bool
    address: str
    port: int
    reuse_port: bool
    max_body_bytes: int
    limits: ConnectionLimits
    header_forwarding: HeaderForwarding | None
    restrictions: Restrictions
    embedding_model: str | None


@dataclass(frozen=True)
class VertexAiSettings:
    """tritonserver's Vertex AI front door (--allow-vertex-ai): its port, on the HTTP
    address, and the model its prediction route infers on (None: the repository's one)."""

    address: str
    port: int
    default_model: str | None


@dataclass(frozen=True)
class SageMakerSettings:
    """tritonserver's SageMaker front door (--allow-sagemaker): its port, on the HTTP
    address."""

    address: str
    port: int


@dataclass(frozen=True)
class GrpcSettings:
    address: str
    port: int  # -1: no gRPC front door
    max_message_bytes: int
    tls: GrpcTls | None
    header_forwarding: HeaderForwarding | None
    keepalive_time_ms: int | None
    restrictions: Restrictions
    compression: grpc.Compression | None  # of infer responses
    connection: Mapping[str, int | bool]  # the server's keepalive and connection options


@dataclass(frozen=True)
class MetricsSettings:
    address: str
    port: int  # -1: no metrics port
    cpu: bool
    gpu: bool
    counter_latencies: bool


@dataclass(frozen=True)
class RegistrationSettings:
    """The instance's registry entry, when ``service`` is set."""

    service: str | None
    group: str | None
    registry: str
    advertise_host: str  # --advertise-host, else --host
    instance_id: str | None  # None: the advertised host:port
    data_center: str | None
    queue: str | None
    template: str | None
    role: str | None
    spec: str
    weight: float
    weight_file: Path | None
    ttl: float
    deregister_grace: float


@dataclass(frozen=True)
class LogSettings:
    format: str  # console or json
    level: str
    file: Path | None
    # tritonserver's switches, each on its own and the verbose level as given (Triton's
    # logging extension names); None: ``level`` alone decides (``modelyard serve``)
    switches: dict[str, bool | int] | None = None


@dataclass(frozen=True)
class InstanceSettings:
    server_id: str  # the name server metadata gives (--id)
    server_version: str
    models: ModelSettings
    http: HttpSettings
    vertex_ai: VertexAiSettings | None  # None: not served
    sagemaker: SageMakerSettings | None  # None: not served
    grpc: GrpcSettings
    metrics: MetricsSettings
    registration: RegistrationSettings
    service_config: Path | None  # the local service file: auth, limits, breakers
    rules_source: RulesSource  # which rules win: the service's central ones or the file's
    allow_client_shm: bool
    trace: Mapping[str, Any]  # tracing.Tracing's keyword arguments
    exit_timeout_secs: float | None
    gil_switch_interval_us: int
    log: LogSettings
    not_applied: tuple[tuple[str, str], ...]  # tritonserver flags accepted, with why not
    # tritonserver's options table at start (Option, Value); empty: not written
    triton_options: tuple[tuple[str, str], ...] = ()


def instance_settings(args: argparse.Namespace) -> InstanceSettings:
    """The instance serve's parsed flags ask for, tritonserver's applied; refuses
    (ConfigError) what cannot be served. ``args`` is left as it was."""
    args = argparse.Namespace(**vars(args))
    not_applied = apply_triton_flags(args)
    return InstanceSettings(
        server_id=args.id,
        server_version=args.server_version,
        models=_model_settings(args),
        http=HttpSettings(
            enabled=args.allow_http,
            address=args.http_address or args.host,
            port=args.http_port,
            reuse_port=bool(args.reuse_http_port),
            max_body_bytes=args.http_max_body_bytes,
            limits=connection_limits(args),
            header_forwarding=args.http_header_forwarding,
            restrictions=args.http_restrictions,
            embedding_model=args.embedding_model,
        ),
        vertex_ai=VertexAiSettings(
            address=args.http_address or args.host,
            port=args.vertex_ai_port,
            default_model=args.vertex_ai_default_model,
        )
        if args.allow_vertex_ai
        else None,
        sagemaker=SageMakerSettings(args.http_address or args.host, args.sagemaker_port)
        if args.allow_sagemaker
        else None,
        grpc=GrpcSettings(
            address=args.grpc_address or args.host,
            port=args.grpc_port,
            max_message_bytes=args.grpc_max_message_bytes,
            tls=args.grpc_tls,
            header_forwarding=args.grpc_header_forwarding,
            keepalive_time_ms=args.grpc_keepalive_time,
            restrictions=args.grpc_restrictions,
            compression=args.grpc_compression,
            connection=args.grpc_connection,
        ),
        metrics=MetricsSettings(
            address=args.metrics_address or args.host,
            port=args.metrics_port,
            cpu=args.allow_cpu_metrics,
            gpu=args.allow_gpu_metrics,
            counter_latencies=args.counter_latencies,
        ),
        registration=_registration_settings(args),
        service_config=args.service_config,
        rules_source=RulesSource(args.rules_source),
        allow_client_shm=args.allow_client_shm,
        trace=args.trace,
        exit_timeout_secs=args.exit_timeout_secs,
        gil_switch_interval_us=args.gil_switch_interval_us,
        log=LogSettings(args.log_format, args.log_level, args.log_file, _log_switches(args)),
        not_applied=tuple(not_applied),
        triton_options=_triton_options(args) if getattr(args, "as_tritonserver", False) else (),
    )


def _triton_options(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """tritonserver's options table: its rows, in its order, with its defaults for what
    was not given (the flags modelyard accepts without applying show what was given)."""
    control = {"none": "MODE_NONE", "poll": "MODE_POLL", "explicit": "MODE_EXPLICIT"}
    rows = [
        ("server_id", args.id),
        ("server_version", args.server_version),
        ("server_extensions", " ".join(INSTANCE_EXTENSIONS)),
        *((f"model_repository_path[{i}]", str(path))
          for i, path in enumerate(args.model_repository or ())),
        ("model_control_mode", control[args.model_control_mode]),
        *((f"startup_models_{i}", name) for i, name in enumerate(args.load_model or ())),
        ("strict_model_config", "0" if args.auto_complete else "1"),
        ("model_config_name", args.model_config_name or ""),
        ("rate_limit", "EXEC_COUNT" if args.rate_limit == "execution_count" else "OFF"),
    ]  # fmt: skip
    resources: dict[tuple[int, str], int] = {}  # by device (-1: every one), then name
    for name, count, device in args.rate_limit_resources:
        key = (int(device.removeprefix("cuda:")) if device else -1, name)
        resources[key] = min(count, resources.get(key, count))  # the least, as Triton keeps
    for i, ((number, name), count) in enumerate(sorted(resources.items())):
        rows.append((f"rate_limit_resource[{i}]",
                     f'{{"name":"{name}", "count":{count} "device":{number}}}'))  # fmt: skip
    pinned = (args.pinned_memory_pool_byte_size or ["268435456"])[-1]
    capability = float((args.min_supported_compute_capability or ["6.0"])[-1])
    exit_timeout = 30 if args.exit_timeout_secs is None else int(args.exit_timeout_secs)
    rows += [
        ("pinned_memory_pool_byte_size", pinned),
        ("min_supported_compute_capability", f"{capability:.1f}"),
        ("strict_readiness", str(int(args.strict_readiness))),
        ("exit_timeout", str(exit_timeout)),
        ("cache_enabled", str(int(args.response_cache_bytes is not None))),
    ]
    return tuple(rows)


def _log_switches(args: argparse.Namespace) -> dict[str, bool | int] | None:
    """tritonserver's log flags as its logging extension reports them."""
    if not getattr(args, "as_tritonserver", False):
        return None
    return {
        "log_info": args.log_info,
        "log_warning": args.log_warning,
        "log_error": args.log_error,
        "log_verbose_level": int(args.log_verbose),
    }


def _model_settings(args: argparse.Namespace) -> ModelSettings:
    return ModelSettings(
        repositories=tuple(args.model_repository),
        config_name=args.model_config_name,
        namespacing=args.model_namespacing,
        control_mode=ControlMode(args.model_control_mode),
        poll_secs=args.repository_poll_secs,
        startup_models=_startup_models(args.load_model),
        pinned_versions=tuple(args.model_version),
        trusted_repository=args.trusted_repository,
        trusted_models=tuple(args.trust_model),
        default_max_queue_size=args.max_queue_size,
        memory_budget_bytes=parse_size(args.memory_budget) if args.memory_budget else None,
        residency=_residency(args),
        strict_readiness=args.strict_readiness,
        load_threads=args.model_load_thread_count,
        backend_directory=Path(args.backend_directory) if args.backend_directory else None,
        load_retries=args.model_load_retry_count,
        auto_complete=args.auto_complete,
        backend_config=args.backend_settings,
        exit_on_error=args.exit_on_error,
        summary_quantiles=args.summary_quantiles,
        response_cache_bytes=args.response_cache_bytes,
        resources=tuple(args.rate_limit_resources)
        if args.rate_limit == "execution_count"
        else None,
        as_tritonserver=getattr(args, "as_tritonserver", False),
    )


def _startup_models(names: list[str]) -> tuple[str, ...]:
    """--load-model's names; '*' (every model) only alone, as tritonserver takes it."""
    if "*" in names and len(names) > 1:
        raise ConfigError.of(
            error_rules.LOAD_MODEL,
            "Wildcard model name '*' must be the ONLY startup model if specified at all "
            f"(--load-model given {len(names)} times)",
        )
    return tuple(names)


def _residency(args: argparse.Namespace) -> str:
    """What --model-residency asks for; lru and cost need a budget to keep within."""
    if args.model_residency != "off" and not args.memory_budget:
        raise ConfigError.of(
            error_rules.MODEL_RESIDENCY,
            f"--model-residency {args.model_residency} keeps the loaded models within a "
            "memory budget, and none was given",
            where="modelyard serve --memory-budget SIZE (e.g. 2G) with --model-residency "
            f"{args.model_residency}",
        )
    return str(args.model_residency)


def _registration_settings(args: argparse.Namespace) -> RegistrationSettings:
    return RegistrationSettings(
        service=args.service,
        group=args.group,
        registry=args.registry,
        advertise_host=args.advertise_host or args.host,
        instance_id=args.instance_id,
        data_center=args.data_center,
        queue=args.queue,
        template=args.template,
        role=args.role,
        spec=args.spec,
        weight=args.weight,
        weight_file=args.weight_file,
        ttl=args.registry_ttl,
        deregister_grace=args.deregister_grace,
    )


def serve_settings(argv: list[str]) -> InstanceSettings:
    """An instance's settings from serve's flags as ``modelyard serve`` reads them (those
    ``processes.serve_arguments`` builds), for an ``InstanceServer`` started in process."""
    parser = argparse.ArgumentParser(prog="modelyard serve")
    add_serve_arguments(parser)
    return instance_settings(parser.parse_args(argv))
