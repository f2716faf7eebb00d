"""tritonserver's command line on ``modelyard serve``: what each of its flags does here.

A Triton user swaps ``tritonserver`` for ``modelyard serve`` and keeps the flags. Each
flag is one of two kinds:

* applied: it sets what it sets in Triton (several repositories, an address per front
  door, turning a front door off, log levels and file, readiness, start-up errors,
  the shutdown timeout, the threads that load models, the response cache, the rate
  limiter, tracing, client shared memory, headers forwarded as parameters, namespacing);
* accepted and logged as not applied, with the reason: tuning that has no counterpart
  here (CUDA and pinned memory pools, thread counts of parts modelyard does not have).
"""

from __future__ import annotations

import argparse
import functools
import re
from pathlib import Path
from typing import Any

import grpc

from modelyard.errors import Code, ConfigError
from modelyard.frontdoors.grpc import GrpcTls
from modelyard.frontdoors.header_forwarding import HeaderForwarding
from modelyard.frontdoors.restricted import Restrictions
from modelyard.server.rate_limiter import parse_resource
from modelyard.server.stats import DEFAULT_QUANTILES
from modelyard.tracing import LEVELS

_TRUE = frozenset(("true", "on", "1", "yes"))
_FALSE = frozenset(("false", "off", "0", "no"))


def triton_bool(text: str) -> bool:
    """A boolean as tritonserver reads one: true/on/1/yes or false/off/0/no."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


# flags that tune what modelyard has no counterpart of: accepted, logged with the reason
NOT_APPLICABLE = {
    "--pinned-memory-pool-byte-size": "engines allocate their own host memory",
    "--cuda-memory-pool-byte-size": "engines allocate their own device memory",
    "--buffer-manager-thread-count": "inputs are viewed in place, not copied by a pool",
    "--http-thread-count": "one event loop serves HTTP; model instances have their threads",
    "--backend-directory": "engines are Python modules of modelyard (modelyard.engines)",
    "--backend-config": "engine settings come from each config.pbtxt's parameters",
    "--host-policy": "placement follows each config's instance_group",
    "--min-supported-compute-capability": "TensorRT plans check their GPU when they load",
    "--metrics-interval-ms": "metrics are read from the counters at each scrape",
    "--grpc-infer-allocation-pool-size": "gRPC responses are built per call, not pooled",
    "--cuda-virtual-address-size": "engines reserve their own device memory",
    "--enable-peer-access": "engines copy between GPUs as their libraries do",
    "--model-load-gpu-limit": "--memory-budget bounds what loaded models hold",
    "--cache-directory": "the response cache is modelyard's own (--cache-config local)",
    "--repoagent-directory": "repository agents are not served",
    "--allow-sagemaker": "SageMaker's endpoint is not served (the V2 API is)",
    "--sagemaker-port": "SageMaker's endpoint is not served",
    "--sagemaker-safe-port-range": "SageMaker's endpoint is not served",
    "--sagemaker-thread-count": "SageMaker's endpoint is not served",
    "--allow-vertex-ai": "Vertex AI's endpoint is not served (the V2 API is)",
    "--vertex-ai-port": "Vertex AI's endpoint is not served",
    "--vertex-ai-thread-count": "Vertex AI's endpoint is not served",
    "--vertex-ai-default-model": "Vertex AI's endpoint is not served",
}

# tritonserver's gRPC connection flags: the server option each sets (ms, counts, booleans)
GRPC_CONNECTION_FLAGS = {
    "--grpc-keepalive-timeout": "keepalive_timeout_ms",
    "--grpc-keepalive-permit-without-calls": "keepalive_permit_without_calls",
    "--grpc-http2-max-pings-without-data": "http2_max_pings_without_data",
    "--grpc-http2-min-recv-ping-interval-without-data": (
        "http2_min_recv_ping_interval_without_data_ms"
    ),
    "--grpc-http2-max-ping-strikes": "http2_max_ping_strikes",
    "--grpc-max-connection-age": "max_connection_age_ms",
    "--grpc-max-connection-age-grace": "max_connection_age_grace_ms",
    "--reuse-grpc-port": "reuse_port",
}
# --grpc-infer-response-compression-level: the compression of infer responses
_COMPRESSION = {"none": None, "low": "deflate", "medium": "gzip", "high": "gzip"}
# the trace levels Triton still takes by their older names (min and max were its levels
# before TIMESTAMPS and TENSORS; its QA suite passes --trace-level=MIN)
_TRACE_LEVEL_ALIASES = {
    "false": "OFF", "true": "TIMESTAMPS", "on": "TIMESTAMPS", "min": "TIMESTAMPS",
    "max": "TIMESTAMPS",
}  # fmt: skip


def add_triton_arguments(parser: argparse.ArgumentParser) -> None:
    triton = parser.add_argument_group(
        "tritonserver flags (applied as Triton does; see docs/triton-flags.md)"
    )
    triton.add_argument(
        "--model-store",
        dest="model_repository",
        action="append",
        type=Path,
        metavar="DIR",
        help="tritonserver's older name of --model-repository",
    )
    triton.add_argument("--http-address", default=None, help="HTTP address (default: --host)")
    triton.add_argument("--grpc-address", default=None, help="gRPC address (default: --host)")
    triton.add_argument("--metrics-address", default=None, help="metrics address (default: --host)")
    _add_bool(triton, "--allow-cpu-metrics", "false: no nv_cpu_* series", default=True)
    _add_bool(
        triton,
        "--allow-http",
        "false: no HTTP front door (gRPC serves every call; not with --service)",
        default=True,
    )
    for front in ("grpc", "metrics"):
        _add_bool(triton, f"--allow-{front}", f"false: no {front} front door", default=True)
    _add_bool(
        triton,
        "--allow-gpu-metrics",
        "false: no nv_gpu_* series (exported where NVML sees a GPU)",
        default=True,
    )
    _add_bool(
        triton,
        "--allow-client-shm",
        "true: clients may register system shared memory regions and name them in "
        "requests (off by default, as in Triton)",
        default=False,
    )
    _add_bool(
        triton,
        "--strict-readiness",
        "true: ready once every model is ready; false: ready once the server is up",
        default=True,
    )
    _add_bool(
        triton,
        "--exit-on-error",
        "true: exit if a model fails to load at start (Triton's default is true)",
        default=False,
    )
    triton.add_argument(
        "--exit-timeout-secs",
        type=float,
        default=None,
        metavar="SECS",
        help="how long a shutdown waits for requests in flight",
    )
    triton.add_argument(
        "--model-load-thread-count",
        type=int,
        default=None,
        metavar="N",
        help="threads that load models at once",
    )
    triton.add_argument(
        "--metrics-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="summary_latencies=true, counter_latencies=false, "
        "summary_quantiles=0.5:0.05,0.9:0.01,...; repeatable",
    )
    triton.add_argument(
        "--cache-config",
        action="append",
        default=[],
        metavar="CACHE,KEY=VALUE",
        help="local,size=BYTES: a response cache of that many bytes for the models whose "
        "config enables response_cache",
    )
    for name, help_text in (
        ("--grpc-use-ssl", "true: gRPC over TLS with --grpc-server-cert and --grpc-server-key"),
        ("--grpc-use-ssl-mutual", "true: also require a client certificate signed by "
         "--grpc-root-cert"),
    ):  # fmt: skip
        _add_bool(triton, name, help_text, default=False)
    for name, what in (
        ("--grpc-server-cert", "the server's certificate chain (PEM)"),
        ("--grpc-server-key", "the server's private key (PEM)"),
        ("--grpc-root-cert", "the certificates that sign client certificates (PEM)"),
    ):
        triton.add_argument(name, type=Path, default=None, metavar="FILE", help=what)
    triton.add_argument(
        "--model-config-name",
        default=None,
        metavar="NAME",
        help="a model with configs/NAME.pbtxt loads from it instead of config.pbtxt",
    )
    triton.add_argument(
        "--http-max-input-size",
        dest="http_max_body_bytes",
        type=int,
        default=argparse.SUPPRESS,
        metavar="BYTES",
        help="tritonserver's name of --http-max-body-bytes",
    )
    triton.add_argument(
        "--rate-limit",
        choices=("off", "execution_count"),
        default="off",
        help="execution_count: an instance executes only while it holds the resources its "
        "instance group's rate_limiter names",
    )
    triton.add_argument(
        "--rate-limit-resource",
        action="append",
        default=[],
        metavar="NAME:COUNT[:DEVICE]",
        help="how many of a rate limiter resource there are (per device unless the config "
        "marks it global); repeatable",
    )
    triton.add_argument(
        "--trace-config",
        action="append",
        default=[],
        metavar="[opentelemetry,]KEY=VALUE",
        help="level=TIMESTAMPS|TENSORS, rate=N, count=N, mode=triton|opentelemetry, "
        "triton,file=PATH, triton,log-frequency=N, opentelemetry,url=URL, "
        "opentelemetry,resource=KEY=VALUE; repeatable",
    )
    # tritonserver's older trace flags, each one --trace-config setting
    for flag, setting in (
        ("--trace-file", "triton,file"),
        ("--trace-log-frequency", "triton,log-frequency"),
        ("--trace-level", "level"),
        ("--trace-rate", "rate"),
        ("--trace-count", "count"),
    ):
        triton.add_argument(
            flag,
            dest="trace_config",
            action="append",
            type=functools.partial(_setting, setting),
            metavar="VALUE",
            help=f"tritonserver's older form of --trace-config {setting}=VALUE",
        )
    triton.add_argument(
        "--response-cache-byte-size",
        type=int,
        default=None,
        metavar="BYTES",
        help="tritonserver's older form of --cache-config local,size=BYTES",
    )
    for front in ("http", "grpc"):
        triton.add_argument(
            f"--{front}-header-forward-pattern",
            default=None,
            metavar="REGEX",
            help=f"{front.upper()} headers whose names match become string parameters of the "
            "infer request (case-insensitive unless the pattern starts with (?-i))",
        )
    triton.add_argument("--log-verbose", type=int, default=0, metavar="LEVEL")
    for level in ("info", "warning", "error"):
        _add_bool(triton, f"--log-{level}", default=True)
    triton.add_argument("--log-file", type=Path, default=None, metavar="FILE")
    triton.add_argument(
        "--model-load-retry-count",
        type=int,
        default=0,
        metavar="N",
        help="a model that fails to load is tried N more times",
    )
    triton.add_argument(
        "--grpc-keepalive-time",
        type=int,
        default=None,
        metavar="MS",
        help="how often the gRPC front door pings an idle client's connection",
    )
    triton.add_argument(
        "--disable-auto-complete-config",
        dest="auto_complete",
        action="store_false",
        help="configs are taken as written: tensors, max_batch_size and the python models' "
        "auto_complete_config are not filled from the model files",
    )
    _add_bool(
        triton,
        "--strict-model-config",
        "true: as --disable-auto-complete-config (tritonserver's older flag)",
        default=None,
    )
    _add_bool(
        triton,
        "--model-namespacing",
        "true: a model name may be in several repositories; each is served as NAME::N "
        "(N: its repository's place), a bare name that is ambiguous is refused, and an "
        "ensemble's steps name their own repository's models first",
        default=False,
    )
    for flag in GRPC_CONNECTION_FLAGS:
        if flag in ("--grpc-keepalive-permit-without-calls", "--reuse-grpc-port"):
            _add_bool(triton, flag, f"as tritonserver's {flag}", default=None)
        else:
            triton.add_argument(
                flag, type=int, default=None, metavar="N", help=f"as tritonserver's {flag}"
            )
    _add_bool(
        triton,
        "--reuse-http-port",
        "true: servers that all set it share the HTTP port (SO_REUSEPORT)",
        default=False,
    )
    triton.add_argument(
        "--grpc-infer-response-compression-level",
        choices=list(_COMPRESSION),
        default="none",
        help="compression of gRPC infer responses (low: deflate, medium and high: gzip)",
    )
    triton.add_argument(
        "--http-restricted-api",
        action="append",
        default=[],
        metavar="APIS:KEY=VALUE",
        help="only calls with header KEY: VALUE may use these APIs (comma-separated among "
        "health, metadata, inference, shared-memory, model-config, model-repository, "
        "statistics, trace, logging); repeatable",
    )
    triton.add_argument(
        "--grpc-restricted-protocol",
        action="append",
        default=[],
        metavar="PROTOCOLS:KEY=VALUE",
        help="only calls with metadata triton-grpc-protocol-KEY: VALUE may use these "
        "protocols (as --http-restricted-api's); repeatable",
    )
    for flag in NOT_APPLICABLE:
        triton.add_argument(flag, action="append", default=None, metavar="VALUE")


def _add_bool(
    triton: argparse._ArgumentGroup,
    flag: str,
    help_text: str | None = None,
    *,
    default: bool | None,
) -> None:
    triton.add_argument(flag, type=triton_bool, default=default, metavar="BOOL", help=help_text)


def _setting(setting: str, value: str) -> str:
    """An older trace flag's value as its --trace-config entry."""
    return f"{setting}={value}"


def _flag_error(detail: str, where: str) -> ConfigError:
    return ConfigError(detail, code=Code.INVALID_ARGUMENT, rule="serve/triton-flag", where=where)


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


def _apply_trace_config(args: argparse.Namespace) -> None:
    """``args.trace``: the keyword arguments of ``tracing.Tracing``."""
    trace: dict[str, Any] = {"resource": {}}
    for entry in args.trace_config:
        section, _, setting = entry.partition(",")
        if "=" in section:  # no section: a global setting
            section, setting = "", entry
        key, _, value = setting.partition("=")
        try:
            if section == "triton" and key == "file":
                if not value or not Path(value).parent.is_dir():
                    raise ValueError("the file's directory does not exist")
                trace["file"] = Path(value)
            elif section == "triton" and key == "log-frequency":
                trace["log_frequency"] = int(value)
                if trace["log_frequency"] < 0:
                    raise ValueError("log-frequency is 0 (at shutdown) or more")
            elif section == "opentelemetry" and key == "url":
                trace["url"] = value if "://" in value else f"http://{value}"
            elif section == "opentelemetry" and key == "resource":
                name, _, attribute = value.partition("=")
                if not name or not attribute:
                    raise ValueError("resource takes KEY=VALUE")
                trace["resource"][name] = attribute
            elif section:
                raise ValueError(f"unknown section or key '{section},{key}'")
            elif key == "mode":
                if value not in ("triton", "opentelemetry"):
                    raise ValueError("mode is triton or opentelemetry")
                trace["mode"] = value
            elif key == "level":
                level = _TRACE_LEVEL_ALIASES.get(value.lower(), value.upper())
                if level not in LEVELS:
                    raise ValueError(f"level is one of {', '.join(LEVELS)}")
                levels = [lv for lv in trace.get("level", []) if lv != "OFF"]
                trace["level"] = ["OFF"] if level == "OFF" else [*levels, level]
            elif key in ("rate", "count"):
                number = int(value)
                if number < (1 if key == "rate" else -1):
                    raise ValueError(f"{key} is out of range")
                trace[key] = number
            else:
                raise ValueError(f"unknown key '{key}'")
        except ValueError as exc:
            raise _trace_error(entry, str(exc)) from None
    traced = trace.get("level", ["OFF"]) != ["OFF"]
    if traced and trace.get("mode", "triton") == "triton" and "file" not in trace:
        raise _flag_error(
            "--trace-config level=" + ",".join(trace["level"]) + ": Triton's trace mode "
            "writes a trace file, and none is given",
            "modelyard serve --trace-config triton,file=PATH (or --trace-config "
            "mode=opentelemetry to export spans)",
        )
    args.trace = trace


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


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def apply_triton_flags(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Map the tritonserver flags given onto ``args``; the ones not applied, with why.

    Refuses (ConfigError) a flag that asks for something modelyard does not serve.
    """
    if not args.model_repository:
        raise ConfigError(
            "no model repository given",
            code=Code.INVALID_ARGUMENT,
            rule="config/model-repository",
            where="modelyard serve --model-repository DIR (repeatable, as tritonserver's)",
        )
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
    args.grpc_connection = {
        key: getattr(args, _dest(flag))
        for flag, key in GRPC_CONNECTION_FLAGS.items()
        if getattr(args, _dest(flag)) is not None
    }
    algorithm = _COMPRESSION[args.grpc_infer_response_compression_level]
    args.grpc_compression = None if algorithm is None else _grpc_compression(algorithm)
    if args.strict_model_config:
        args.auto_complete = False
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
    if args.log_format in ("default", "ISO8601"):  # Triton's formats: one line per event
        args.log_format = "console"
    if args.log_verbose > 0:
        args.log_level = "debug"
    elif not args.log_info:
        args.log_level = "warning" if args.log_warning else "error"
    if not args.log_error and not args.log_warning and not args.log_info:
        args.log_level = "critical"
    return [(flag, reason) for flag, reason in NOT_APPLICABLE.items() if getattr(args, _dest(flag))]
