"""What every long-running command shares: the event loop and the HTTP server settings."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any

import uvicorn

from modelyard.errors import Code, ConfigError

# A model's instance thread takes the GIL around each batch (assembling it, and
# again for onnxruntime's outputs) while the event loop, busy with requests,
# holds it; it waits until the holder is asked to let go. At Python's 5 ms the
# MLP of bench/batching.py waited 0.66 ms before each 4.4 ms execution; at
# 100 us, 0.34 ms, and the served rows/s rose 3-8 % (bench/RESULTS.md).
DEFAULT_GIL_SWITCH_INTERVAL_US = 100
# Python keeps the interval in microseconds in a C long: far larger values wrap
# (1e14 s reads back as 0), and nothing is gained past a second
MAX_GIL_SWITCH_INTERVAL_US = 1_000_000


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop where it is installed, else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)


def set_gil_switch_interval(microseconds: int) -> None:
    """How long a thread may keep the GIL while another waits for it."""
    if not 0 < microseconds <= MAX_GIL_SWITCH_INTERVAL_US:
        raise ConfigError(
            f"--gil-switch-interval-us must be between 1 and {MAX_GIL_SWITCH_INTERVAL_US} "
            f"microseconds, got {microseconds}",
            code=Code.INVALID_ARGUMENT,
            rule="serve/gil-switch-interval",
            where=f"modelyard serve --gil-switch-interval-us "
            f"(default {DEFAULT_GIL_SWITCH_INTERVAL_US})",
        )
    sys.setswitchinterval(microseconds / 1e6)


def http_config(app: Any, host: str, port: int, max_connections: int) -> uvicorn.Config:
    """uvicorn as modelyard serves V2: httptools, our loop, no per-request extras."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http="httptools",
        loop="none",
        lifespan="off",
        access_log=False,
        log_level="warning",
        timeout_keep_alive=30,
        limit_concurrency=max_connections,
        proxy_headers=False,
        server_header=False,
        date_header=False,
    )
