"""Child processes' plumbing: a ``modelyard serve`` command line and its flags, a free
loopback port, and waiting for a child to answer 200."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_200(url: str, alive: Callable[[], bool], timeout: float) -> str:
    """Poll ``url`` until it answers 200: "ready", "exited" (``alive`` false) or "timeout"."""
    from modelyard.web_client import WebError, fetch  # aiohttp: not for the flags' builders

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            return "exited"
        try:
            if fetch("GET", url, timeout=1.0).status == 200:
                return "ready"
        except WebError:
            pass
        time.sleep(0.05)
    return "timeout"


FlagValue = str | int | float | Path | Sequence[str]


def serve_command(
    repository: str | Path,
    *,
    http_port: int,
    grpc_port: int = -1,
    metrics_port: int = -1,
    python: str | Path = sys.executable,
    **flags: FlagValue,
) -> list[str]:
    """The command line of a ``modelyard serve`` child on this interpreter (or ``python``:
    another installation's, for an A/B of two); its flags are ``serve_arguments``'."""
    return [
        str(python),
        "-m",
        "modelyard.cli.main",
        "serve",
        *serve_arguments(
            repository, http_port=http_port, grpc_port=grpc_port, metrics_port=metrics_port,
            **flags,
        ),
    ]  # fmt: skip


def serve_arguments(
    repository: str | Path,
    *,
    http_port: int,
    grpc_port: int = -1,
    metrics_port: int = -1,
    **flags: FlagValue,
) -> list[str]:
    """``modelyard serve``'s flags, for a child (``serve_command``) or for a server started in
    this process (``cli.serve_settings.serve_settings``).

    Each keyword is a flag (``model_control_mode="explicit"`` is
    ``--model-control-mode explicit``); a sequence repeats it (``load_model=["a", "b"]``);
    ``True`` is a flag without a value. The front doors a caller does not ask for are off
    (-1).
    """
    return [
        "--model-repository",
        str(repository),
        "--http-port",
        str(http_port),
        "--grpc-port",
        str(grpc_port),
        "--metrics-port",
        str(metrics_port),
        *flag_arguments(**flags),
    ]


def flag_arguments(**flags: FlagValue) -> list[str]:
    """Keywords as serve's flags, as ``serve_arguments`` writes them (for a command line
    that is edited, not built: a release's flags on a pod's)."""
    arguments = []
    for name, value in flags.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            arguments.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                arguments += [flag, str(item)]
        else:
            arguments += [flag, str(value)]
    return arguments
