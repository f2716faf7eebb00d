"""tritonserver's command line on ``modelyard serve``: what each of its flags does here
(``triton_arguments`` declares them).

A Triton user swaps ``tritonserver`` for ``modelyard serve`` and keeps the flags. Each
flag is one of two kinds:

* applied: it sets what it sets in Triton (several repositories, an address per front
  door, turning a front door off, log levels and file, readiness, start-up errors,
  the shutdown timeout, the threads that load models, the response cache, the rate
  limiter, tracing, client shared memory, headers forwarded as parameters, namespacing,
  backend settings);
* accepted and logged as not applied, with the reason: tuning that has no counterpart
  here (CUDA and pinned memory pools, thread counts of parts modelyard does not have).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from modelyard import error_rules
from modelyard.cli.triton_arguments import (
    COMPRESSION_LEVELS,
    GRPC_CONNECTION_FLAGS,
    NOT_APPLICABLE,
    triton_bool,
)
from modelyard.errors import ConfigError
from modelyard.frontdoors.grpc import GrpcTls
from modelyard.frontdoors.header_forwarding import HeaderForwarding
from modelyard.frontdoors.restricted import Restrictions
from modelyard.server.backend_config import BackendConfig
from modelyard.server.resource_limiter import parse_resource
from modelyard.server.stats import DEFAULT_QUANTILES
from modelyard.tracing import LEVELS


def _flag_error(detail: str, where: str) -> ConfigError:
    return ConfigError.of(error_rules.TRITON_FLAG, detail, where=where)


def _metrics_config_error(entry: str, detail: str) -> ConfigError:
    return _flag_error(
        f"--metrics-config {entry}: {detail}",
        "modelyard serve --metrics-config summary_latencies=true|false, "
        "counter_latencies=true|false or summary_quantiles=Q:E,...",
    )


def _apply_metrics_config(args: argparse.Namespace) -> None:
    """``args.summary_quantiles`` (None: no summaries) and ``args.counter_latencies``."""
    summaries = False
    quantiles: tuple[float, ...] = DEFAULT_QUANTILES
    args.counter_latencies = True
    for entry in args.metrics_config:
        key, _, value = entry.partition("=")
        try:
            if key == "summary_latencies":
                summaries = triton_bool(value)
            elif key == "counter_latencies":
                args.counter_latencies = triton_bool(value)
            elif key == "summary_quantiles":
                pairs = [item.partition(":")[0] for item in value.strip('"').split(",")]
                quantiles = tuple(float(q) for q in pairs)
                if not quantiles or not all(0.0 <= q <= 1.0 for q in quantiles):
                    raise ValueError("each quantile must be within 0 and 1")
            else:
                raise _metrics_config_error(entry, f"unknown key '{key}'")
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise _metrics_config_error(entry, str(exc)) from None
    args.summary_quantiles = quantiles if summaries else None


def _trace_error(entry: str, detail: str) -> ConfigError:
    return _flag_error(
        f"--trace-config {entry}: {detail}",
        "modelyard serve --trace-config level=TIMESTAMPS (rate=N, count=N, mode=triton|"
        "opentelemetry, triton,file=PATH, triton,log-frequency=N, opentelemetry,url=URL, "
        "opentelemetry,resource=KEY=VALUE)",
    )


def _trace_file(trace: dict[str, Any], value: str) -> None:
    if not value or not Path(value).parent.is_dir():
        raise ValueError("the file's directory does not exist")
    trace["file"] = Path(value)


def _trace_log_frequency(trace: dict[str, Any], value: str) -> None:
    trace["log_frequency"] = int(value)
    if trace["log_frequency"] < 0:
        raise ValueError("log-frequency is 0 (at shutdown) or more")


def _trace_url(trace: dict[str, Any], value: str) -> None:
    trace["url"] = value if "://" in value else f"http://{value}"


def _trace_resource(trace: dict[str, Any], value: str) -> None:
    name, _, attribute = value.partition("=")
    if not name or not attribute:
        raise ValueError("resource takes KEY=VALUE")
    trace["resource"][name] = attribute


def _trace_mode(trace: dict[str, Any], value: str) -> None:
    if value not in ("triton", "opentelemetry"):
        raise ValueError("mode is triton or opentelemetry")
    trace["mode"] = value


# the trace levels Triton still takes by their older names (min and max were its levels
# before TIMESTAMPS and TENSORS; its QA suite passes --trace-level=MIN)
_TRACE_LEVEL_ALIASES = {
    "false": "OFF", "true": "TIMESTAMPS", "on": "TIMESTAMPS", "min": "TIMESTAMPS",
    "max": "TIMESTAMPS",
}  # fmt: skip


def _trace_level(trace: dict[str, Any], value: str) -> None:
    level = _TRACE_LEVEL_ALIASES.get(value.lower(), value.upper())
    if level not in LEVELS:
        raise ValueError(f"level is one of {', '.join(LEVELS)}")
    levels = [lv for lv in trace.get("level", []) if lv != "OFF"]
    trace["level"] = ["OFF"] if level == "OFF" else [*levels, level]


def _trace_number(key: str, least: int) -> Callable[[dict[str, Any], str], None]:
    def setting(trace: dict[str, Any], value: str) -> None:
        number = int(value)
        if number < least:
            raise ValueError(f"{key} is out of range")
        trace[key] = number

    return setting


# OpenTelemetry's batch span processor: Triton's setting (and the environment variable
# that sets it when the command line does not), and the least it may be
BSP_SETTINGS = {
    "bsp_max_queue_size": ("OTEL_BSP_MAX_QUEUE_SIZE", 1),
    "bsp_schedule_delay": ("OTEL_BSP_SCHEDULE_DELAY", 0),
    "bsp_max_export_batch_size": ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1),
}


class _BadOption(ValueError):
    """Triton's refusal of a batch span processor setting, in its words."""


def _bsp_value(text: str, least: int, option: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise _BadOption(f'Bad option: "{option}".') from None
    if value < least:
        raise _BadOption(f'Bad option: "{option}" (at least {least}).')
    return value


def _trace_bsp(key: str) -> Callable[[dict[str, Any], str], None]:
    def setting(trace: dict[str, Any], value: str) -> None:
        option = f"--trace-config opentelemetry,{key}"
        trace["bsp"][key] = _bsp_value(value, BSP_SETTINGS[key][1], option)

    return setting


# --trace-config's settings: (section, key) -> what it sets ("": a global setting)
_TRACE_SETTINGS: dict[tuple[str, str], Callable[[dict[str, Any], str], None]] = {
    ("triton", "file"): _trace_file,
    ("triton", "log-frequency"): _trace_log_frequency,
    ("opentelemetry", "url"): _trace_url,
    ("opentelemetry", "resource"): _trace_resource,
    **{("opentelemetry", key): _trace_bsp(key) for key in BSP_SETTINGS},
    ("", "mode"): _trace_mode,
    ("", "level"): _trace_level,
    # 0: only the requests that continue a caller's trace (Triton's way to ask for those)
    ("", "rate"): _trace_number("rate", 0),
    ("", "count"): _trace_number("count", -1),
}


def _apply_trace_config(args: argparse.Namespace) -> None:
    """``args.trace``: the keyword arguments of ``tracing.Tracing``."""
    trace: dict[str, Any] = {"resource": {}, "bsp": {}}
    given: list[tuple[str, str]] = []  # the opentelemetry section's entries, as written
    for entry in args.trace_config:
        section, _, setting = entry.partition(",")
        if "=" in section:  # no section: a global setting
            section, setting = "", entry
        key, _, value = setting.partition("=")
        apply = _TRACE_SETTINGS.get((section, key))
        try:
            if apply is None:
                unknown = f"section or key '{section},{key}'" if section else f"key '{key}'"
                raise ValueError(f"unknown {unknown}")
            apply(trace, value)
            if section == "opentelemetry":
                given.append((key, value))
        except _BadOption as exc:
            raise _flag_error(str(exc), f"--trace-config {section},{key}=N") from None
        except ValueError as exc:
            raise _trace_error(entry, str(exc)) from None
    if trace.get("mode") == "opentelemetry":
        _bsp_from_environment(trace["bsp"])
        trace["options"] = _otel_options(given, trace["bsp"])
    traced = trace.get("level", ["OFF"]) != ["OFF"]
    if traced and trace.get("mode", "triton") == "triton" and "file" not in trace:
        print(  # as Triton, which starts and writes its traces nowhere
            "Warning: '--trace-config level=" + ",".join(trace["level"]) + "': Triton's "
            "trace mode writes a trace file, and none is given: no trace is written (give "
            "--trace-config triton,file=PATH, or mode=opentelemetry to export spans)",
            file=sys.stderr,
        )
    args.trace = trace


def _otel_options(given: list[tuple[str, str]], bsp: dict[str, int]) -> list[tuple[str, str]]:
    """The opentelemetry section as Triton reports it in the trace settings: each entry as
    given (a batch span processor's as the number it holds), then the batch span
    processor's settings not given, as they are."""
    defaults = {"bsp_max_queue_size": 2048, "bsp_schedule_delay": 5000,
                "bsp_max_export_batch_size": 512}  # fmt: skip  # OpenTelemetry's
    options = [(key, str(bsp[key]) if key in bsp else value) for key, value in given]
    named = {key for key, _ in given}
    return options + [
        (key, str(bsp.get(key, default))) for key, default in defaults.items() if key not in named
    ]


def _bsp_from_environment(bsp: dict[str, int]) -> None:
    """The batch span processor's settings the command line left to the environment
    (OpenTelemetry's ``OTEL_BSP_*``), refused in Triton's words when they do not parse."""
    for key, (variable, least) in BSP_SETTINGS.items():
        text = os.environ.get(variable)
        if key in bsp or text is None:
            continue
        try:
            bsp[key] = _bsp_value(text, least, variable)
        except _BadOption as exc:
            raise _flag_error(str(exc), f"the environment variable {variable}") from None
    queue = bsp.get("bsp_max_queue_size", 2048)  # OpenTelemetry's defaults
    if "bsp_max_queue_size" in bsp:  # a smaller queue: its batches no bigger than it
        bsp.setdefault("bsp_max_export_batch_size", min(512, queue))
    if bsp.get("bsp_max_export_batch_size", 512) > queue:
        raise _flag_error(
            'Bad option: "bsp_max_export_batch_size" (more than bsp_max_queue_size).',
            "--trace-config opentelemetry,bsp_max_export_batch_size=N (at most the queue's)",
        )


def _grpc_compression(algorithm: str) -> grpc.Compression:
    return grpc.Compression.Deflate if algorithm == "deflate" else grpc.Compression.Gzip


def _grpc_tls(args: argparse.Namespace) -> GrpcTls | None:
    """The gRPC front door's TLS from --grpc-use-ssl[-mutual] and its files, or None."""
    if not args.grpc_use_ssl and not args.grpc_use_ssl_mutual:
        return None
    needed = ["--grpc-server-cert", "--grpc-server-key"]
    if args.grpc_use_ssl_mutual:
        needed.append("--grpc-root-cert")
    asked = "--grpc-use-ssl-mutual" if args.grpc_use_ssl_mutual else "--grpc-use-ssl"
    contents: dict[str, bytes] = {}
    for flag in needed:
        path = getattr(args, _dest(flag))
        if path is None:
            raise _flag_error(f"{flag} is needed with {asked}", f"modelyard serve {flag} FILE")
        try:
            contents[flag] = path.read_bytes()
        except OSError as exc:
            raise _flag_error(
                f"{flag} {path}: cannot read it ({exc.strerror})", f"modelyard serve {flag} FILE"
            ) from None
    return GrpcTls(
        contents["--grpc-server-cert"],
        contents["--grpc-server-key"],
        contents.get("--grpc-root-cert"),
    )


def _apply_cache_config(args: argparse.Namespace) -> None:
    """``args.response_cache_bytes``: the local cache's size (None: no response cache)."""
    size = args.response_cache_byte_size
    for entry in args.cache_config:
        cache, _, setting = entry.partition(",")
        key, _, value = setting.partition("=")
        if cache != "local":
            raise _flag_error(
                f"--cache-config {entry}: only the local cache is served here, not '{cache}'",
                "modelyard serve --cache-config local,size=BYTES",
            )
        if key != "size" or not value.strip().isdigit():
            raise _flag_error(
                f"--cache-config {entry}: the local cache takes size=BYTES",
                "modelyard serve --cache-config local,size=BYTES",
            )
        size = int(value)
    if size is not None and size < 0:
        raise _flag_error(
            f"--response-cache-byte-size must not be negative, got {size}",
            "modelyard serve --cache-config local,size=BYTES",
        )
    args.response_cache_bytes = size or None  # 0: off, as in Triton


# numeric flags and the least value each takes
_LEAST = {
    "--exit-timeout-secs": 0,
    "--model-load-thread-count": 1,
    "--model-load-retry-count": 0,
    "--grpc-keepalive-time": 1,
}


def _compute_capability(given: list[str] | None) -> float | None:
    """--min-supported-compute-capability's last value (None: not given), which the
    backends' settings carry."""
    if not given:
        return None
    try:
        return float(given[-1])
    except ValueError:
        raise _flag_error(
            f"--min-supported-compute-capability {given[-1]!r}: a number such as 6.0",
            "modelyard serve --min-supported-compute-capability",
        ) from None


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def apply_triton_flags(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Map the tritonserver flags given onto ``args``; the ones not applied, with why.

    Refuses (ConfigError) a flag that asks for something modelyard does not serve.
    """
    _apply_vertex_ai_environment(args)
    _check_repository_and_front_doors(args)
    _check_sagemaker_safe_ports(args)
    for flag, least in _LEAST.items():
        value = getattr(args, _dest(flag))
        if value is not None and value < least:
            raise _flag_error(
                f"{flag} must be at least {least}, got {value:g}", f"modelyard serve {flag}"
            )
    _apply_metrics_config(args)
    _apply_cache_config(args)
    _apply_trace_config(args)
    args.rate_limit_resources = [parse_resource(text) for text in args.rate_limit_resource]
    args.grpc_tls = _grpc_tls(args)
    args.http_restrictions = Restrictions.parse(args.http_restricted_api, "http")
    args.grpc_restrictions = Restrictions.parse(args.grpc_restricted_protocol, "grpc")
    _apply_grpc_connection(args)
    if not args.auto_complete and args.strict_model_config is False:
        print(
            "Warning: Overriding deprecated '--strict-model-config' from False to True in "
            "favor of '--disable-auto-complete-config'!",
            file=sys.stderr,
        )
    if args.strict_model_config:
        args.auto_complete = False
    args.backend_settings = BackendConfig.from_command_line(
        args.backend_config,
        args.auto_complete,
        _compute_capability(args.min_supported_compute_capability),
        args.backend_directory or "",
    )
    for front in ("http", "grpc"):
        pattern = getattr(args, f"{front}_header_forward_pattern")
        forwarding = None
        if pattern:
            forwarding = HeaderForwarding(pattern, f"--{front}-header-forward-pattern")
        setattr(args, f"{front}_header_forwarding", forwarding)
    name = args.model_config_name
    if name is not None and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*", name):
        raise _flag_error(
            f"--model-config-name {name!r}: a name of letters, digits, '_', '.', '-' (it "
            "names configs/NAME.pbtxt in each model's directory)",
            "modelyard serve --model-config-name NAME",
        )
    _apply_log_flags(args)
    return [(flag, reason) for flag, reason in NOT_APPLICABLE.items() if getattr(args, _dest(flag))]


def _apply_vertex_ai_environment(args: argparse.Namespace) -> None:
    """Vertex AI's environment as tritonserver reads it: ``AIP_MODE=PREDICTION`` turns its
    routes on and HTTP and gRPC off unless flags say otherwise, ``AIP_HTTP_PORT`` is its
    port, and ``AIP_STORAGE_URI`` the repository where none is given."""
    prediction = os.environ.get("AIP_MODE", "") == "PREDICTION"
    for flag in ("allow_http", "allow_grpc"):
        if getattr(args, flag) is None:
            setattr(args, flag, not prediction)
    if args.allow_vertex_ai is None:
        args.allow_vertex_ai = prediction
    if args.vertex_ai_port is None:
        port = os.environ.get("AIP_HTTP_PORT") or "8080"
        if not port.isdigit():
            raise _flag_error(f"AIP_HTTP_PORT {port!r} is not a port", "AIP_HTTP_PORT")
        args.vertex_ai_port = int(port)
    storage = os.environ.get("AIP_STORAGE_URI", "")
    if not args.model_repository and storage:
        args.model_repository = [Path(storage)]


def _check_sagemaker_safe_ports(args: argparse.Namespace) -> None:
    """With SageMaker's safe port range, every other front door on its address listens in
    it (Triton's CheckPortCollision; a port of 0, any free one, is not checked)."""
    text = args.sagemaker_safe_port_range
    if not args.allow_sagemaker or text is None:
        return
    low, _, high = text.partition("-")
    if not (low.isdigit() and high.isdigit()):
        raise _flag_error(
            f"--sagemaker-safe-port-range {text!r}: expected LOW-HIGH",
            "tritonserver --sagemaker-safe-port-range LOW-HIGH",
        )
    address = args.http_address or args.host
    others = [
        ("HTTP", args.http_address or args.host, args.http_port if args.allow_http else -1),
        ("GRPC", args.grpc_address or args.host, args.grpc_port),
        ("metrics", args.metrics_address or args.host, args.metrics_port),
        ("Vertex AI", address, args.vertex_ai_port if args.allow_vertex_ai else -1),
    ]
    for name, host, port in others:
        if host == address and port > 0 and not int(low) <= port <= int(high):
            raise _flag_error(
                f"The server cannot listen to {name} requests at port {port}, allowed port "
                f"range is [{int(low)}, {int(high)}]",
                f"--sagemaker-safe-port-range, or the {name} port",
            )


def _check_repository_and_front_doors(args: argparse.Namespace) -> None:
    """A repository is given, HTTP is on where the instance registers, and a front door
    turned off has no port (-1)."""
    if not args.model_repository:
        raise ConfigError.of(error_rules.NO_MODEL_REPOSITORY, "no model repository given")
    if not args.allow_http and getattr(args, "service", None):
        raise _flag_error(
            "--allow-http false with --service: gateways and the control plane reach a "
            "registered instance over HTTP",
            "modelyard serve without --allow-http false, or without --service",
        )
    if not args.allow_grpc:
        args.grpc_port = -1
    if not args.allow_metrics:
        args.metrics_port = -1


def _apply_grpc_connection(args: argparse.Namespace) -> None:
    """``args.grpc_connection``: the gRPC server's connection options given, and
    ``args.grpc_compression``: its infer responses' (None: uncompressed)."""
    args.grpc_connection = {
        key: getattr(args, _dest(flag))
        for flag, key in GRPC_CONNECTION_FLAGS.items()
        if getattr(args, _dest(flag)) is not None
    }
    algorithm = COMPRESSION_LEVELS[args.grpc_infer_response_compression_level]
    args.grpc_compression = None if algorithm is None else _grpc_compression(algorithm)


def _apply_log_flags(args: argparse.Namespace) -> None:
    """tritonserver's log flags as ``args.log_level``."""
    if args.log_verbose > 0:
        args.log_level = "debug"
    elif not args.log_info:
        args.log_level = "warning" if args.log_warning else "error"
    if not args.log_error and not args.log_warning and not args.log_info:
        args.log_level = "critical"
