"""``modelyard serve``'s flags (tritonserver's among them: ``triton_arguments``).

Light on purpose: ``modelyard serve --bogus`` answers without numpy, the server or the
client. What the flags make is ``serve_settings.instance_settings``'s.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from modelyard import __version__
from modelyard.cli.http_flags import add_http_arguments, add_listen_arguments
from modelyard.cli.triton_arguments import add_triton_arguments
from modelyard.discovery import DEFAULT_REGISTRY_URL
from modelyard.frontdoors.bounds import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_MESSAGE_BYTES
from modelyard.governance.rules_source import RulesSource
from modelyard.modelfiles.control_mode import ControlMode

# A model's instance thread takes the GIL around each batch (assembling it, and
# again for onnxruntime's outputs) while the event loop, busy with requests,
# holds it; it waits until the holder is asked to let go. At Python's 5 ms the
# MLP of bench/batching.py waited 0.66 ms before each 4.4 ms execution; at
# 100 us, 0.34 ms, and the served rows/s rose 3-8 % (bench/RESULTS.md).
DEFAULT_GIL_SWITCH_INTERVAL_US = 100
# Python keeps the interval in microseconds in a C long: far larger values wrap
# (1e14 s reads back as 0), and nothing is gained past a second
MAX_GIL_SWITCH_INTERVAL_US = 1_000_000


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
        type=str.lower,  # as tritonserver's: EXPLICIT, Poll
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
        choices=["off", "lru", "cost"],
        default="off",
        help="lru: every model of the repository is servable, loaded when first asked for, "
        "the least recently used idle ones unloaded to stay within --memory-budget; cost: "
        "the same, unloading first the idle model whose request rate times load time per "
        "byte is least",
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
        help="console or json, or Triton's record lines: default or ISO8601 (tritonserver's "
        "default)",
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


def _pinned_version(text: str) -> tuple[str, int]:
    model, _, version = text.partition("=")
    if not model or not version.isdigit():
        raise argparse.ArgumentTypeError(f"expected MODEL=VERSION (a version number), got {text!r}")
    return model, int(version)
