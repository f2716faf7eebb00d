"""GET /v2/modelyard/stats's document, built in process: in-flight count and consistent counts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from modelyard.client import AsyncClient
from modelyard.errors import ModelyardError
from modelyard.frontdoors.http import HttpFrontend
from modelyard.gateway.forward import ForwardingDataPlane
from modelyard.modelfiles.repository import ModelRepository
from modelyard.server.live_stats import live_stats
from modelyard.server.local_dataplane import LocalDataPlane
from modelyard.server.manager import ModelManager
from modelyard.types import InferRequest
from tests.support.models import slow_double


def request(rows: int = 1) -> InferRequest:
    return InferRequest(
        model_name="slow_double",
        model_version=None,
        inputs={"x": np.ones((rows, 2), dtype=np.float32)},
        input_datatypes={"x": "FP32"},
    )


def test_in_flight_counts_requests_inside_infer_and_returns_to_zero(tmp_path: Path) -> None:
    slow_double(tmp_path, delay=0.3)

    async def scenario() -> None:
        dp = LocalDataPlane(ModelManager(ModelRepository(tmp_path)))
        await dp.manager.start()
        try:
            assert live_stats(dp, None)["instance"]["in_flight"] == 0
            task = asyncio.create_task(dp.infer(request()))
            await asyncio.sleep(0.1)  # executing
            doc = live_stats(dp, None)
            assert doc["instance"]["in_flight"] == 1
            assert doc["models"][0]["pending"] == 1
            await task
            with pytest.raises(ModelyardError):  # refused by validation, inside infer
                await dp.infer(request(rows=17))  # over max_batch_size 16
            doc = live_stats(dp, None)
            assert doc["instance"]["in_flight"] == 0
            (model,) = doc["models"]
            assert (model["name"], model["version"]) == ("slow_double", "1")
            assert model["state"] == "READY"
            assert model["platform"] == "python" and model["devices"] == ["cpu"]
            assert (model["pending"], model["success"], model["failure"]) == (0, 1, 0)
            request_seconds = model["histograms"]["request_seconds"]
            assert len(request_seconds["counts"]) == len(request_seconds["bounds"]) + 1
            assert sum(request_seconds["counts"]) == 1
            assert sum(request_seconds["counts"][:6]) == 0  # took 0.3 s: above 5 ms
            assert model["compute_ns"] >= 0.3e9
            assert doc["governance"] is None
        finally:
            await dp.manager.stop()

    asyncio.run(scenario())


def test_the_gateway_answers_its_own_counters_without_reaching_an_instance() -> None:
    # never started: the stats call must answer without reaching an instance
    forwarding = ForwardingDataPlane(
        AsyncClient("test.svc", "etcd://127.0.0.1:1", instances_cache=None)
    )
    app = HttpFrontend(forwarding)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/v2/modelyard/stats", "headers": []}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 200
    gateway = orjson.loads(sent[1]["body"])["gateway"]
    assert gateway["service"] == "test.svc" and gateway["calls"] == 0
    assert gateway["refused"] == {} and gateway["errors"] == {} and gateway["instances"] == 0
