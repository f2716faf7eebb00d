"""Child processes' plumbing: a free loopback port, and waiting for one to answer 200."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_200(url: str, alive: Callable[[], bool], timeout: float) -> str:
    """Poll ``url`` until it answers 200: "ready", "exited" (``alive`` false) or "timeout"."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            return "exited"
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return "ready"
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    return "timeout"
