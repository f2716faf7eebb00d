"""Each HTTP request as Triton writes it at verbose level 1 (``HTTP request: 2
/v2/models/simple/infer``, libevhtp's method number), and nothing at level 0."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from structlog.testing import capture_logs

from modelyard.frontdoors.http import HttpFrontend
from modelyard.logging import SETTINGS
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ControlMode, ModelManager
from tests.support.models import simple_add_sub

INFER = {
    "inputs": [
        {"name": name, "shape": [1, 16], "datatype": "INT32", "data": [1] * 16}
        for name in ("INPUT0", "INPUT1")
    ]
}


def _records(tmp_path: Path, verbose: int) -> list[str]:
    async def run() -> list[dict[str, Any]]:
        manager = ModelManager(ModelRepository([tmp_path]), ControlMode.NONE)
        await manager.start()
        app = HttpFrontend(LocalDataPlane(manager))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            with capture_logs() as logs:
                await client.get("/v2/logging")
                await client.post("/v2/models/simple/infer", json=INFER)
                await client.delete("/v2/models/simple")
        await manager.stop()
        return logs

    simple_add_sub(tmp_path)
    before = SETTINGS.verbose
    SETTINGS.verbose = verbose
    try:
        logs = asyncio.run(run())
    finally:
        SETTINGS.verbose = before
    return [entry["triton"] for entry in logs if entry["event"] == "http_request"]


def test_each_request_is_a_verbose_record_in_tritons_words(tmp_path: Path) -> None:
    assert _records(tmp_path, 1) == [
        "HTTP request: 0 /v2/logging",
        "HTTP request: 2 /v2/models/simple/infer",
        "HTTP request: 4 /v2/models/simple",
    ]


def test_no_request_record_below_verbose_level_1(tmp_path: Path) -> None:
    assert _records(tmp_path, 0) == []
