"""``modelyard gateway``'s flags.

Light on purpose: ``modelyard gateway --bogus`` answers without the client or the front
doors; an attempt timeout given is read by the client's own parser (a flag's value only
when it is given: the default stays ``auto`` unread).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from modelyard.cli.http_flags import add_http_arguments, add_listen_arguments
from modelyard.cli.registry_option import add_registry_argument
from modelyard.frontdoors.bounds import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_MESSAGE_BYTES


def add_gateway_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--service", required=True, help="the service to forward to, e.g. com.example.ranker"
    )
    add_registry_argument(parser)
    add_listen_arguments(parser)
    parser.add_argument(
        "--transport",
        choices=["http", "grpc"],
        default="http",
        help="how the gateway talks to the instances",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds a forwarded request may take, retries included, when the caller sets "
        "no gRPC deadline (default: the client's, 30)",
    )
    parser.add_argument(
        "--attempt-timeout",
        action=_AttemptTimeoutAction,
        default="auto",
        metavar="auto|off|SECS",
        help="how long one instance may take before the request is tried on another (a hung "
        "instance, a host that stops answering); auto (the default): from the model's "
        "observed latency (4 x p99, at least 0.25 s; 1 s until known); off: an attempt may "
        "take the whole timeout",
    )
    parser.add_argument(
        "--hedge",
        action="store_true",
        help="send a second attempt to another instance once the first has taken the model's "
        "observed p95; the first answer wins",
    )
    parser.add_argument(
        "--interface-attempts",
        action="append",
        default=[],
        type=_interface_attempts,
        metavar="INTERFACE=auto|off|SECS[,hedge]",
        help="the attempt timeout (and hedging) of one interface (infer, metadata, or one "
        "the --service-config declares); repeatable",
    )
    parser.add_argument(
        "--service-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="a service file: its attempts section (per interface) and the interfaces it "
        "declares by their models; its governance rules are the instances'",
    )
    parser.add_argument(
        "--instances-cache",
        default="auto",
        metavar="auto|off|FILE",
        help="where the last instances read from the registry are kept, to serve from when "
        "the registry cannot be read at start (auto: a file per service and registry in "
        "~/.cache/modelyard/instances)",
    )
    parser.add_argument(
        "--reuse-port",
        action="store_true",
        help="share the HTTP (and gRPC) port with the service's other gateway processes "
        "(SO_REUSEPORT): one that stops or dies leaves the others serving",
    )
    parser.add_argument(
        "--status-port",
        type=int,
        default=-1,
        metavar="PORT",
        help="a port of this process alone, on 127.0.0.1, answering as the shared one does: "
        "a supervisor reads each process's health and counters there (0: any free port; -1: "
        "none)",
    )
    parser.add_argument(
        "--standby",
        action="store_true",
        help="start everything but the service's port (needs --status-port): serve it on "
        "SIGUSR1, at once, in place of a process that died",
    )
    parser.add_argument(
        "--successor-wait",
        type=float,
        default=0.0,
        metavar="SECS",
        help="on SIGTERM, keep accepting until another process listens on the port, at most "
        "this long, then hand the port over (platform up: 10)",
    )
    parser.add_argument(
        "--drain-grace",
        type=float,
        default=1.0,
        metavar="SECS",
        help="after it stops accepting: how long open connections may bring one more request "
        "(answered with Connection: close) before the idle ones are closed",
    )
    parser.add_argument(
        "--data-center",
        default=None,
        metavar="DC",
        help="forward to the instances of this data centre (their --data-center) while one "
        "of them is healthy, to the others when none is",
    )
    parser.add_argument(
        "--max-attempts", type=int, default=3, help="tries per request, the first included"
    )
    parser.add_argument("--http-max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    parser.add_argument("--grpc-max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES)
    add_http_arguments(parser)
    parser.add_argument("--log-format", choices=["console", "json"], default="console")
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error", "critical"]
    )


class _AttemptTimeoutAction(argparse.Action):
    """--attempt-timeout read when given; its default, ``auto``, is the client's own."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        try:
            setattr(namespace, self.dest, _attempt_timeout(str(values)))
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None


def _attempt_timeout(text: str) -> Any:
    from modelyard.client.attempts import parse_timeout

    try:  # a number out of range is the client's to refuse, with its line
        return parse_timeout(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"auto, off or seconds, not {text!r}") from None


def _interface_attempts(text: str) -> tuple[str, Any]:
    """``INTERFACE=auto|off|SECS[,hedge]`` as (interface, its rule)."""
    interface, sep, rest = text.partition("=")
    value, _, flag = rest.partition(",")
    if not sep or not interface or flag not in ("", "hedge"):
        raise argparse.ArgumentTypeError(f"INTERFACE=auto|off|SECS[,hedge], not {text!r}")
    from modelyard.client.attempts import AttemptRule

    try:
        return interface, AttemptRule(_attempt_timeout(value), flag == "hedge")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
