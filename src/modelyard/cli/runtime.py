"""What every long-running command shares: the event loop and the HTTP server settings."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import uvicorn


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop where it is installed, else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)


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
