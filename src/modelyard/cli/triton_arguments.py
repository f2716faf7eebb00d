"""tritonserver's flags as ``modelyard serve`` declares them: one table, one row a flag.

What each flag does once parsed (applied, refused, or accepted and logged as not
applied) is ``triton_flags.apply_triton_flags``'s; docs/triton-flags.md is the user's
table. Light on purpose: ``modelyard serve --bogus`` answers without the server.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any

from modelyard.booleans import triton_bool_value


def triton_bool(text: str) -> bool:
    """A boolean as tritonserver reads one: true/on/1/yes or false/off/0/no."""
    value = triton_bool_value(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value


# flags that tune what modelyard has no counterpart of: accepted, logged with the reason
NOT_APPLICABLE = {
    "--pinned-memory-pool-byte-size": "engines allocate their own host memory",
    "--cuda-memory-pool-byte-size": "engines allocate their own device memory",
    "--buffer-manager-thread-count": "inputs are viewed in place, not copied by a pool",
    "--http-thread-count": "one event loop serves HTTP; model instances have their threads",
    "--host-policy": "placement follows each config's instance_group",
    "--min-supported-compute-capability": "TensorRT plans check their GPU when they load",
    "--metrics-interval-ms": "metrics are read from the counters at each scrape",
    "--grpc-infer-allocation-pool-size": "gRPC responses are built per call, not pooled",
    "--cuda-virtual-address-size": "engines reserve their own device memory",
    "--enable-peer-access": "engines copy between GPUs as their libraries do",
    "--model-load-gpu-limit": "--memory-budget bounds what loaded models hold",
    "--cache-directory": "the response cache is modelyard's own (--cache-config local)",
    "--repoagent-directory": "repository agents are not served",
    "--sagemaker-thread-count": "one event loop serves SageMaker's routes",
    "--vertex-ai-thread-count": "one event loop serves Vertex AI's routes",
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
_BOOLEAN_CONNECTION_FLAGS = ("--grpc-keepalive-permit-without-calls", "--reuse-grpc-port")
# --grpc-infer-response-compression-level: the compression of infer responses
COMPRESSION_LEVELS = {"none": None, "low": "deflate", "medium": "gzip", "high": "gzip"}
# tritonserver's older trace flags, each one --trace-config setting (and the value its
# deprecation warning names)
_OLDER_TRACE_FLAGS = {
    "--trace-file": ("triton,file", "<filepath>"),
    "--trace-log-frequency": ("triton,log-frequency", "<log frequency value>"),
    "--trace-level": ("level", "<OFF|TIMESTAMPS|TENSORS>"),
    "--trace-rate": ("rate", "<rate value>"),
    "--trace-count": ("count", "<count value>"),
}

Flag = tuple[str, dict[str, Any]]


def _flag(flag: str, **options: Any) -> Flag:
    return flag, options


def _bool(flag: str, default: bool | None, text: str | None = None) -> Flag:
    return _flag(flag, type=triton_bool, default=default, metavar="BOOL", help=text)


def _setting(flag: str, value: str) -> str:
    """An older trace flag's value as its --trace-config entry, with tritonserver's warning
    on stderr, once each time the flag is given."""
    setting, shape = _OLDER_TRACE_FLAGS[flag]
    print(
        f"Warning: '{flag}' has been deprecated and will be removed in future releases. "
        f"Please use '--trace-config {setting}={shape} instead.",
        file=sys.stderr,
    )
    return f"{setting}={value}"


def _int_or_bool(text: str) -> int:
    """A number tritonserver also takes as true (1) or false (0): its --log-verbose."""
    named = {"true": 1, "false": 0}.get(text.lower())
    if named is not None:
        return named
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, true or false: {text!r}") from None


def _strict_model_config(text: str) -> bool:
    """tritonserver's older --strict-model-config, with its deprecation warning on stderr
    each time the flag is given."""
    value = triton_bool(text)
    print(
        "Warning: '--strict-model-config' has been deprecated! Please use "
        "'--disable-auto-complete-config' instead.",
        file=sys.stderr,
    )
    return value


# every tritonserver flag serve reads, in the order its help lists them
TRITON_FLAGS: list[Flag] = [
    _flag("--model-store", dest="model_repository", action="append", type=Path, metavar="DIR",
          help="tritonserver's older name of --model-repository"),
    _flag("--http-address", default=None, help="HTTP address (default: --host)"),
    _flag("--grpc-address", default=None, help="gRPC address (default: --host)"),
    _flag("--metrics-address", default=None, help="metrics address (default: --host)"),
    _bool("--allow-cpu-metrics", True, "false: no nv_cpu_* series"),
    _bool("--allow-http", None,
          "false: no HTTP front door (gRPC serves every call; not with --service); default "
          "true, false where AIP_MODE=PREDICTION"),
    _bool("--allow-grpc", None,
          "false: no grpc front door; default true, false where AIP_MODE=PREDICTION"),
    _bool("--allow-sagemaker", False,
          "true: SageMaker's single-model routes (/ping, /invocations) on a port of their own"),
    _flag("--sagemaker-port", type=int, default=8080, metavar="PORT", help="SageMaker's port"),
    _flag("--sagemaker-safe-port-range", default=None, metavar="LOW-HIGH",
          help="the ports the other front doors on SageMaker's address must keep within"),
    _bool("--allow-vertex-ai", None,
          "true: Vertex AI's routes (AIP_HEALTH_ROUTE, AIP_PREDICT_ROUTE) on a port of their "
          "own; default true where AIP_MODE=PREDICTION"),
    _flag("--vertex-ai-port", type=int, default=None, metavar="PORT",
          help="Vertex AI's port (default: AIP_HTTP_PORT, else 8080)"),
    _flag("--vertex-ai-default-model", default=None, metavar="MODEL",
          help="the model the prediction route infers on (default: the repository's one model)"),
    _bool("--allow-metrics", True, "false: no metrics front door"),
    _bool("--allow-gpu-metrics", True,
          "false: no nv_gpu_* series (exported where NVML sees a GPU)"),
    _bool("--allow-client-shm", False,
          "true: clients may register system shared memory regions and name them in "
          "requests (off by default, as in Triton)"),
    _bool("--strict-readiness", True,
          "true: ready once every model is ready; false: ready once the server is up"),
    _bool("--exit-on-error", False,
          "true: exit if a model fails to load at start (Triton's default is true)"),
    _flag("--exit-timeout-secs", type=float, default=None, metavar="SECS",
          help="how long a shutdown waits for requests in flight"),
    _flag("--model-load-thread-count", type=int, default=None, metavar="N",
          help="threads that load models at once"),
    _flag("--backend-directory", default=None, metavar="DIR",
          help="Python-based backends: DIR/NAME/model.py serves the models whose config "
          "says backend: \"NAME\" (the engines are modelyard's own)"),
    _flag("--backend-config", action="append", default=[], metavar="[BACKEND,]SETTING=VALUE",
          help="a backend's setting (without BACKEND: every backend's); applied: "
          "default-max-batch-size, the max_batch_size auto-complete gives a batching model "
          "(4; 0: none); repeatable"),
    _flag("--metrics-config", action="append", default=[], metavar="KEY=VALUE",
          help="summary_latencies=true, counter_latencies=false, "
          "summary_quantiles=0.5:0.05,0.9:0.01,...; repeatable"),
    _flag("--cache-config", action="append", default=[], metavar="CACHE,KEY=VALUE",
          help="local,size=BYTES: a response cache of that many bytes for the models whose "
          "config enables response_cache"),
    _bool("--grpc-use-ssl", False,
          "true: gRPC over TLS with --grpc-server-cert and --grpc-server-key"),
    _bool("--grpc-use-ssl-mutual", False,
          "true: also require a client certificate signed by --grpc-root-cert"),
    _flag("--grpc-server-cert", type=Path, default=None, metavar="FILE",
          help="the server's certificate chain (PEM)"),
    _flag("--grpc-server-key", type=Path, default=None, metavar="FILE",
          help="the server's private key (PEM)"),
    _flag("--grpc-root-cert", type=Path, default=None, metavar="FILE",
          help="the certificates that sign client certificates (PEM)"),
    _flag("--model-config-name", default=None, metavar="NAME",
          help="a model with configs/NAME.pbtxt loads from it instead of config.pbtxt"),
    _flag("--http-max-input-size", dest="http_max_body_bytes", type=int,
          default=argparse.SUPPRESS, metavar="BYTES",
          help="tritonserver's name of --http-max-body-bytes"),
    _flag("--rate-limit", choices=("off", "execution_count"), default="off",
          help="execution_count: an instance executes only while it holds the resources its "
          "instance group's rate_limiter names"),
    _flag("--rate-limit-resource", action="append", default=[],
          metavar="NAME:COUNT[:DEVICE]",
          help="how many of a rate limiter resource there are (per device unless the config "
          "marks it global); repeatable"),
    _flag("--trace-config", action="append", default=[],
          metavar="[opentelemetry,]KEY=VALUE",
          help="level=TIMESTAMPS|TENSORS, rate=N, count=N, mode=triton|opentelemetry, "
          "triton,file=PATH, triton,log-frequency=N, opentelemetry,url=URL, "
          "opentelemetry,resource=KEY=VALUE; repeatable"),
    *(
        _flag(flag, dest="trace_config", action="append",
              type=functools.partial(_setting, flag), metavar="VALUE",
              help=f"tritonserver's older form of --trace-config {setting}=VALUE")
        for flag, (setting, _) in _OLDER_TRACE_FLAGS.items()
    ),
    _flag("--response-cache-byte-size", type=int, default=None, metavar="BYTES",
          help="tritonserver's older form of --cache-config local,size=BYTES"),
    *(
        _flag(f"--{front}-header-forward-pattern", default=None, metavar="REGEX",
              help=f"{front.upper()} headers whose names match become string parameters of "
              "the infer request (case-insensitive unless the pattern starts with (?-i))")
        for front in ("http", "grpc")
    ),
    _flag("--log-verbose", type=_int_or_bool, default=0, metavar="LEVEL",
          help="a level, or true (1) and false (0)"),
    _bool("--log-info", True),
    _bool("--log-warning", True),
    _bool("--log-error", True),
    _flag("--log-file", type=Path, default=None, metavar="FILE"),
    _flag("--model-load-retry-count", type=int, default=0, metavar="N",
          help="a model that fails to load is tried N more times"),
    _flag("--grpc-keepalive-time", type=int, default=None, metavar="MS",
          help="how often the gRPC front door pings an idle client's connection"),
    _flag("--disable-auto-complete-config", dest="auto_complete", action="store_false",
          help="configs are taken as written: tensors, max_batch_size and the python models' "
          "auto_complete_config are not filled from the model files"),
    _flag("--strict-model-config", type=_strict_model_config, default=None, metavar="BOOL",
          help="true: as --disable-auto-complete-config (tritonserver's older flag)"),
    _bool("--model-namespacing", False,
          "true: a model name may be in several repositories; each is served as NAME::N "
          "(N: its repository's place), a bare name that is ambiguous is refused, and an "
          "ensemble's steps name their own repository's models first"),
    *(
        _bool(flag, None, f"as tritonserver's {flag}")
        if flag in _BOOLEAN_CONNECTION_FLAGS
        else _flag(flag, type=int, default=None, metavar="N", help=f"as tritonserver's {flag}")
        for flag in GRPC_CONNECTION_FLAGS
    ),
    _bool("--reuse-http-port", False,
          "true: servers that all set it share the HTTP port (SO_REUSEPORT)"),
    _flag("--grpc-infer-response-compression-level", choices=list(COMPRESSION_LEVELS),
          default="none",
          help="compression of gRPC infer responses (low: deflate, medium and high: gzip)"),
    _flag("--http-restricted-api", action="append", default=[], metavar="APIS:KEY=VALUE",
          help="only calls with header KEY: VALUE may use these APIs (comma-separated among "
          "health, metadata, inference, shared-memory, model-config, model-repository, "
          "statistics, trace, logging); repeatable"),
    _flag("--grpc-restricted-protocol", action="append", default=[],
          metavar="PROTOCOLS:KEY=VALUE",
          help="only calls with metadata triton-grpc-protocol-KEY: VALUE may use these "
          "protocols (as --http-restricted-api's); repeatable"),
    *(_flag(flag, action="append", default=None, metavar="VALUE") for flag in NOT_APPLICABLE),
]  # fmt: skip


def add_triton_arguments(parser: argparse.ArgumentParser) -> None:
    triton = parser.add_argument_group(
        "tritonserver flags (applied as Triton does; see docs/triton-flags.md)"
    )
    for flag, options in TRITON_FLAGS:
        triton.add_argument(flag, **options)
